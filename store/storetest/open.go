package storetest

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/gatehouse/gatehouse/internal/testing/testenv"
	"github.com/gatehouse/gatehouse/store"
	"github.com/gatehouse/gatehouse/store/postgres"
	"github.com/gatehouse/gatehouse/store/sqlite"
)

// The one way a test opens a store of its own, so no test repeats the
// backend's wiring (the schema per test, its wake-up channel, the close
// at cleanup) and a new backend is added in one place.

// Dialects are the backends EachBackend runs on, in its order.
var Dialects = []string{"sqlite", "postgres"}

// Open opens a fresh store of dialect ("sqlite": a file in tb's temporary
// directory; "postgres": a fresh schema of GATEHOUSE_TEST_POSTGRES_URL,
// skipped without it, see testenv.PostgresURL), closed at tb's cleanup.
func Open(tb testing.TB, dialect string) store.Store {
	tb.Helper()
	switch dialect {
	case "sqlite":
		return OpenSQLite(tb, sqlite.Config{})
	case "postgres":
		return OpenPostgres(tb, postgres.Config{})
	}
	tb.Fatalf("storetest: unknown dialect %q", dialect)
	return nil
}

// EachBackend runs fn as a subtest per dialect, each on a fresh store
// (Open).
func EachBackend(t *testing.T, fn func(t *testing.T, st store.Store)) {
	t.Helper()
	for _, d := range Dialects {
		t.Run(d, func(t *testing.T) { fn(t, Open(t, d)) })
	}
}

// OpenSQLite opens a SQLite store with cfg, closed at tb's cleanup; an
// empty Path is a fresh file in tb's temporary directory. For a test that
// needs the backend's own handle (WriteDB) or settings.
func OpenSQLite(tb testing.TB, cfg sqlite.Config) *sqlite.Store {
	tb.Helper()
	if cfg.Path == "" {
		cfg.Path = filepath.Join(tb.TempDir(), "gatehouse.db")
	}
	st, err := sqlite.Open(context.Background(), cfg)
	if err != nil {
		tb.Fatalf("open sqlite: %v", err)
	}
	tb.Cleanup(func() { st.Close() })
	return st
}

// OpenPostgres opens a Postgres store with cfg, closed at tb's cleanup
// (closing it earlier as well is harmless). An empty URL is a fresh schema
// (testenv.PostgresURL: skipped without a server); pass the URL of a store
// opened before to reopen the same schema. An empty Channel is the
// schema's own ("wake_" + schema), so tests running at once never wake
// each other. For a test that needs the backend's handle (Pool) or
// settings (MaxConns, Tracer).
func OpenPostgres(tb testing.TB, cfg postgres.Config) *postgres.Store {
	tb.Helper()
	if cfg.URL == "" {
		cfg.URL = testenv.PostgresURL(tb)
	}
	if schema := testenv.SchemaOf(cfg.URL); cfg.Channel == "" && schema != "" {
		cfg.Channel = "wake_" + schema
	}
	st, err := postgres.Open(context.Background(), cfg)
	if err != nil {
		tb.Fatalf("open postgres: %v", err)
	}
	tb.Cleanup(func() { st.Close() })
	return st
}
