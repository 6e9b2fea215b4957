package main

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/gatehouse/gatehouse/store/sqlite"
)

// The install id is made once and kept: a restart on the same database
// reads the same one back (so a retried mail keeps its Message-ID), and
// another install — another database — gets its own (so two installs'
// Message-IDs never collide).
func TestInstallIDIsKeptAndUniquePerInstall(t *testing.T) {
	ctx := context.Background()
	open := func(path string) *sqlite.Store {
		t.Helper()
		st, err := sqlite.Open(ctx, sqlite.Config{Path: path})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	pathA := filepath.Join(t.TempDir(), "a.db")
	a := open(pathA)
	first, err := resolveInstallID(ctx, a)
	if err != nil || len(first) != 16 {
		t.Fatalf("install id %q, %v; want 16 base32 characters", first, err)
	}
	if again, err := resolveInstallID(ctx, a); err != nil || again != first {
		t.Fatalf("second start gave %q (%v), the first %q", again, err, first)
	}
	a.Close()
	a = open(pathA)
	defer a.Close()
	if reopened, err := resolveInstallID(ctx, a); err != nil || reopened != first {
		t.Fatalf("after a restart %q (%v), before %q", reopened, err, first)
	}
	b := open(filepath.Join(t.TempDir(), "b.db"))
	defer b.Close()
	if other, err := resolveInstallID(ctx, b); err != nil || other == first {
		t.Fatalf("another install got %q (%v), the first %q", other, err, first)
	}
}
