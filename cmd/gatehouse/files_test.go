//go:build unix

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// withUmask sets the umask the gateway process inherits, for one test:
// under the common 022 anything created without an explicit mode is 0644
// or 0755, so the assertions fail if the gateway relies on the umask.
func withUmask(t *testing.T, mask int) {
	t.Helper()
	old := syscall.Umask(mask)
	t.Cleanup(func() { syscall.Umask(old) })
}

// checkPrivate asserts what another local user must not read: the data
// directory and the workspace 0700, the database and its -wal and -shm
// 0600. It is called while the gateway runs, when -wal and -shm exist.
func checkPrivate(t *testing.T, dataDir string) {
	t.Helper()
	want := map[string]os.FileMode{
		dataDir:                                    0o700,
		filepath.Join(dataDir, "workspace"):        0o700,
		filepath.Join(dataDir, "gatehouse.db"):     0o600,
		filepath.Join(dataDir, "gatehouse.db-wal"): 0o600,
	}
	dbs, err := filepath.Glob(filepath.Join(dataDir, "gatehouse.db*"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range dbs { // -shm too, and anything else SQLite keeps there
		want[p] = 0o600
	}
	for p, mode := range want {
		st, err := os.Stat(p)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		if got := st.Mode().Perm(); got != mode {
			t.Errorf("%s mode %v, want %v", filepath.Base(p), got, mode)
		}
	}
}

// A fresh install keeps its conversations from other local users.
func TestFilesOfAFreshInstallArePrivate(t *testing.T) {
	withUmask(t, 0o022)
	dataDir := filepath.Join(t.TempDir(), "data")
	p := start(t, "GATEHOUSE_DATA_DIR="+dataDir)
	checkPrivate(t, dataDir)
	p.stopWith(t, syscall.SIGTERM)
}

// An install from before (data dir and workspace 0755, database 0644) is
// tightened when the gateway starts.
func TestFilesOfAnOlderInstallAreTightened(t *testing.T) {
	withUmask(t, 0o022)
	dataDir := filepath.Join(t.TempDir(), "data")
	migrate := exec.Command(binary(t), "migrate")
	migrate.Env = append(os.Environ(), "GATEHOUSE_DATA_DIR="+dataDir)
	if out, err := migrate.CombinedOutput(); err != nil {
		t.Fatalf("migrate: %v\n%s", err, out)
	}
	workspace := filepath.Join(dataDir, "workspace")
	if err := os.Mkdir(workspace, 0o755); err != nil {
		t.Fatal(err)
	}
	for p, mode := range map[string]os.FileMode{dataDir: 0o755, workspace: 0o755, filepath.Join(dataDir, "gatehouse.db"): 0o644} {
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
	p := start(t, "GATEHOUSE_DATA_DIR="+dataDir)
	checkPrivate(t, dataDir)
	p.stopWith(t, syscall.SIGTERM)
}
