package testenv

import (
	"os/exec"
	"testing"
)

// Bubblewrap returns the path of bwrap, which the isolated shell runs.
// Without it the test skips saying how to install it; with
// GATEHOUSE_TEST_REQUIRE_SERVICES=1 it fails, as in CI (.ci/run installs
// Debian's bubblewrap).
func Bubblewrap(t testing.TB) string {
	t.Helper()
	path, err := exec.LookPath("bwrap")
	if err != nil {
		if RequireServices() {
			t.Fatalf("bubblewrap is required (GATEHOUSE_TEST_REQUIRE_SERVICES=1) but bwrap is not on PATH: %v", err)
		}
		t.Skip("isolated shell tests skipped: install bubblewrap (apt-get install bubblewrap) to run them")
	}
	return path
}
