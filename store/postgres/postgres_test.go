package postgres_test

import (
	"testing"

	"github.com/gatehouse/gatehouse/internal/testing/testenv"
	"github.com/gatehouse/gatehouse/kernel/kerneltest"
	"github.com/gatehouse/gatehouse/store"
	"github.com/gatehouse/gatehouse/store/postgres"
	"github.com/gatehouse/gatehouse/store/storetest"
)

// open opens the store of the schema at url (storetest.OpenPostgres: its
// own wake-up channel, closed at cleanup).
func open(t *testing.T, url string) *postgres.Store {
	t.Helper()
	return storetest.OpenPostgres(t, postgres.Config{URL: url})
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
