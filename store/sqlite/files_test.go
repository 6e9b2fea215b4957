//go:build unix

package sqlite_test

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/store"
)

// withUmask sets the process umask for one test: under the common 022 a
// file created without an explicit mode is 0644, so the assertions below
// fail if the store relies on the umask rather than setting 0600 itself.
func withUmask(t *testing.T, mask int) {
	t.Helper()
	old := syscall.Umask(mask)
	t.Cleanup(func() { syscall.Umask(old) })
}

func wantPerm(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Errorf("%s: %v", filepath.Base(path), err)
		return
	}
	if got := st.Mode().Perm(); got != want {
		t.Errorf("%s mode %v, want %v", filepath.Base(path), got, want)
	}
}

// commitOne writes to the database, so SQLite has a -wal file to show.
func commitOne(t *testing.T, st store.Store) {
	t.Helper()
	err := st.InTx(context.Background(), func(ctx context.Context, tx store.Tx) error {
		_, _, err := tx.CreateSession(ctx, gh.Session{ID: "s1"})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A new database, its directory and the -wal and -shm files SQLite makes
// next to it are readable by the gateway's user only.
func TestOpenCreatesPrivateFiles(t *testing.T) {
	withUmask(t, 0o022)
	dir := filepath.Join(t.TempDir(), "data")
	path := filepath.Join(dir, "gatehouse.db")
	st := open(t, path)
	defer st.Close()
	commitOne(t, st)
	wantPerm(t, dir, 0o700)
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		wantPerm(t, p, 0o600)
	}
}

// A database from before (0644, as SQLite creates it under umask 022) is
// 0600 after Open, and so is the -wal file SQLite makes for it.
func TestOpenTightensExistingDatabase(t *testing.T) {
	withUmask(t, 0o022)
	path := filepath.Join(t.TempDir(), "gatehouse.db")
	st := open(t, path)
	commitOne(t, st)
	st.Close()
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path + "-wal"); err == nil {
		t.Fatal("the -wal file outlived the close; the next step would not show SQLite creating one")
	}
	st = open(t, path)
	defer st.Close()
	commitOne(t, st)
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		wantPerm(t, p, 0o600)
	}
}

// A -wal and -shm left 0644 by an older version (still running, or killed
// before it could clean up) are made 0600 by the next Open too.
func TestOpenTightensLeftoverWALFiles(t *testing.T) {
	withUmask(t, 0o022)
	path := filepath.Join(t.TempDir(), "gatehouse.db")
	old := open(t, path)
	defer old.Close()
	commitOne(t, old)
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		if err := os.Chmod(p, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	st := open(t, path)
	defer st.Close()
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		wantPerm(t, p, 0o600)
	}
}
