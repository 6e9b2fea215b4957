package sqlite_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatehouse/gatehouse/kernel/kerneltest"
	"github.com/gatehouse/gatehouse/store"
	"github.com/gatehouse/gatehouse/store/sqlite"
	"github.com/gatehouse/gatehouse/store/storetest"
)

func open(t *testing.T, path string) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), sqlite.Config{Path: path})
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	return st
}

func TestConformance(t *testing.T) {
	h := storetest.Harness{
		New: func(t *testing.T) store.Store {
			return open(t, filepath.Join(t.TempDir(), "data", "gatehouse.db"))
		},
		Reopen: func(t *testing.T, s store.Store) store.Store {
			path := s.(*sqlite.Store).Path()
			s.Close()
			return open(t, path)
		},
	}
	// The kernel's rules over this backend, then what the store itself keeps.
	kerneltest.Run(t, h)
	storetest.Run(t, h)
}

func sqliteOpen(path string) (*sqlite.Store, error) {
	return sqlite.Open(context.Background(), sqlite.Config{Path: path})
}

// A data directory whose name holds a '#' or a '?' opens the database
// in it, with its pragmas: not a file cut at the character (#30's session
// found subtests "name#01" sharing "name").
func TestPathWithURICharacters(t *testing.T) {
	for _, name := range []string{"a#01", "b?x=1", "c%23"} {
		dir := filepath.Join(t.TempDir(), name)
		st, err := sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(dir, "gatehouse.db")})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		st.Close()
		if _, err := os.Stat(filepath.Join(dir, "gatehouse.db")); err != nil {
			t.Fatalf("%s: the database is not where it was asked for: %v", name, err)
		}
		if _, err := os.Stat(filepath.Join(filepath.Dir(dir), strings.SplitN(name, "#", 2)[0])); name == "a#01" && err == nil {
			t.Fatalf("%s: a file named by the path's part before '#' was created", name)
		}
	}
}
