package sqlite_test

import (
	"context"
	"path/filepath"
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
