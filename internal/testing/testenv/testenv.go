// Package testenv gives tests the real servers they run against: a scratch
// Postgres schema from GATEHOUSE_TEST_POSTGRES_URL, a Redis from
// GATEHOUSE_TEST_REDIS_URL. Without the variable a test skips with a
// message saying how to run it; with GATEHOUSE_TEST_REQUIRE_SERVICES=1 a
// missing service fails the test instead, which is how CI runs.
//
// It also holds the one polling helper every test uses, Eventually. It
// imports nothing of this module, so every layer's tests may import it.
package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// RequireServices reports whether a missing service must fail the test.
func RequireServices() bool { return os.Getenv("GATEHOUSE_TEST_REQUIRE_SERVICES") == "1" }

func missing(t testing.TB, env, what string) {
	t.Helper()
	if RequireServices() {
		t.Fatalf("%s is required (GATEHOUSE_TEST_REQUIRE_SERVICES=1) but %s is not set", what, env)
	}
	t.Skipf("%s suite skipped: set %s (e.g. postgres://postgres@127.0.0.1:5432/test) to run it", what, env)
}

// PostgresURL returns a connection URL whose search_path is a fresh schema,
// dropped when the test ends. Each test gets an empty database of its own.
func PostgresURL(t testing.TB) string {
	t.Helper()
	base := os.Getenv("GATEHOUSE_TEST_POSTGRES_URL")
	if base == "" {
		missing(t, "GATEHOUSE_TEST_POSTGRES_URL", "Postgres")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("connect to GATEHOUSE_TEST_POSTGRES_URL: %v", err)
	}
	defer conn.Close(ctx)
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "gh_test_" + hex.EncodeToString(b[:])
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("create scratch schema: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Logf("drop scratch schema %s: %v", schema, err)
			return
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Logf("drop scratch schema %s: %v", schema, err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("parse GATEHOUSE_TEST_POSTGRES_URL: %v", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// SchemaOf returns the search_path of a URL made by PostgresURL, to name
// per-test channels.
func SchemaOf(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return ""
	}
	return u.Query().Get("search_path")
}

// RedisURL returns GATEHOUSE_TEST_REDIS_URL or skips (fails when services
// are required).
func RedisURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv("GATEHOUSE_TEST_REDIS_URL")
	if u == "" {
		missing(t, "GATEHOUSE_TEST_REDIS_URL", "Redis")
	}
	return u
}
