//go:build unix

package spool

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	gh "github.com/gatehouse/gatehouse"
)

// withUmask sets the process umask for one test: under the common 022 a
// file created without an explicit mode is 0644, so the assertions fail if
// the spool relies on the umask.
func withUmask(t *testing.T, mask int) {
	t.Helper()
	old := syscall.Umask(mask)
	t.Cleanup(func() { syscall.Umask(old) })
}

func permOf(t *testing.T, path string) os.FileMode {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Mode().Perm()
}

// A spooled answer is part of a conversation: the spool directory is 0700
// and its files 0600, so other local users cannot read it.
func TestSpoolFilesArePrivate(t *testing.T) {
	withUmask(t, 0o022)
	dir := filepath.Join(t.TempDir(), "data", "spool")
	s := New(dir)
	a := gh.AssistantMessage{GenerationID: "g1", Text: "the answer the database refused"}
	if err := s.Save("s1", a); err != nil {
		t.Fatal(err)
	}
	if m := permOf(t, dir); m != 0o700 {
		t.Errorf("spool directory mode %v, want 0700", m)
	}
	if m := permOf(t, s.path("s1", "g1")); m != 0o600 {
		t.Errorf("spool file mode %v, want 0600", m)
	}
	if got, ok := s.Load("s1", "g1"); !ok || got.Text != a.Text {
		t.Fatalf("Load: %+v %v", got, ok)
	}
}

// A spool directory an older version made 0755, with a 0644 .tmp it left
// behind, is tightened by the next spool.
func TestSpoolTightensAnOlderSpool(t *testing.T) {
	withUmask(t, 0o022)
	dir := filepath.Join(t.TempDir(), "spool")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	s := New(dir)
	if err := os.WriteFile(s.path("s1", "g1")+".tmp", []byte("half an old answer"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.Save("s1", gh.AssistantMessage{GenerationID: "g1", Text: "answer"}); err != nil {
		t.Fatal(err)
	}
	if m := permOf(t, dir); m != 0o700 {
		t.Errorf("spool directory mode %v, want 0700", m)
	}
	if m := permOf(t, s.path("s1", "g1")); m != 0o600 {
		t.Errorf("spool file mode %v, want 0600", m)
	}
}
