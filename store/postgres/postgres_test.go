package postgres_test

import (
	"context"
	"testing"

	"github.com/gatehouse/gatehouse/internal/testenv"
	"github.com/gatehouse/gatehouse/kernel/kerneltest"
	"github.com/gatehouse/gatehouse/store"
	"github.com/gatehouse/gatehouse/store/postgres"
	"github.com/gatehouse/gatehouse/store/storetest"
)

func openStore(url string) (*postgres.Store, error) {
	return postgres.Open(context.Background(), postgres.Config{URL: url, Channel: "wake_" + testenv.SchemaOf(url)})
}

func open(t *testing.T, url string) *postgres.Store {
	t.Helper()
	st, err := openStore(url)
	if err != nil {
		t.Fatalf("open postgres: %v", err)
	}
	return st
}

func TestConformance(t *testing.T) {
	urls := map[store.Store]string{}
	h := storetest.Harness{
		New: func(t *testing.T) store.Store {
			u := testenv.PostgresURL(t)
			st := open(t, u)
			urls[st] = u
			return st
		},
		Reopen: func(t *testing.T, s store.Store) store.Store {
			s.Close()
			return open(t, urls[s])
		},
		Peer: func(t *testing.T, s store.Store) store.Store {
			return open(t, urls[s])
		},
	}
	// The kernel's rules over this backend, then what the store itself keeps.
	kerneltest.Run(t, h)
	storetest.Run(t, h)
}
