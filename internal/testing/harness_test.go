package testing_test

import (
	"os/exec"
	"strings"
	"testing"
)

// No production package imports the test-harness tree: only test helpers
// (a package whose path has an element ending in "test", as storetest and
// adaptertest, the platform fakes' platformfake, and the harnesses
// themselves) may, and tests, whose imports go list leaves out here.
func TestProductionNeverImportsAHarness(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "github.com/gatehouse/gatehouse/...").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	const tree = "github.com/gatehouse/gatehouse/internal/testing/"
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || helper(f[0]) {
			continue
		}
		for _, imp := range f[1:] {
			if strings.HasPrefix(imp, tree) {
				t.Errorf("production package %s imports the harness %s", f[0], imp)
			}
		}
	}
}

func helper(path string) bool {
	if strings.HasPrefix(path, "github.com/gatehouse/gatehouse/internal/testing") {
		return true
	}
	for _, el := range strings.Split(path, "/") {
		if strings.HasSuffix(el, "test") || el == "platformfake" {
			return true
		}
	}
	return false
}
