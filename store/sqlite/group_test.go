package sqlite_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/store"
)

// Transactions that run at the same time share commits; one that fails
// takes none of the others' work with it, and every one that returned
// nil is in the database, read from a fresh connection after a reopen.
func TestConcurrentTransactionsCommitTogetherAndFailAlone(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "group.db")
	st := open(t, path)
	const writers, rounds = 16, 20
	for w := range writers {
		if _, _, err := st.CreateSession(ctx, gh.Session{ID: fmt.Sprintf("s%d", w)}); err != nil {
			t.Fatal(err)
		}
	}
	errRefused := errors.New("refused by the caller")
	var mu sync.Mutex
	committed := map[string][]string{} // session -> texts InTx acknowledged
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			session := fmt.Sprintf("s%d", w)
			for r := range rounds {
				text := fmt.Sprintf("%s-%d", session, r)
				fail := (w+r)%3 == 0
				err := st.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
					// Two statements, so a failure after the first must
					// undo it.
					for i := range 2 {
						if _, err := tx.Append(ctx, store.AppendParams{SessionID: session, Kind: gh.KindNotice,
							Payload: []byte(fmt.Sprintf(`{"text":%q}`, fmt.Sprintf("%s/%d", text, i))), Now: time.Now()}); err != nil {
							return err
						}
					}
					if fail {
						return errRefused
					}
					return nil
				})
				switch {
				case fail && !errors.Is(err, errRefused):
					t.Errorf("%s: failing transaction returned %v, want its own error", text, err)
				case !fail && err != nil:
					t.Errorf("%s: %v", text, err)
				case !fail:
					mu.Lock()
					committed[session] = append(committed[session], text+"/0", text+"/1")
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	st.Close()
	st = open(t, path)
	defer st.Close()
	for w := range writers {
		session := fmt.Sprintf("s%d", w)
		evs, err := st.Events(ctx, session, 0, 1000)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for i, e := range evs {
			if e.Seq != int64(i+1) {
				t.Fatalf("%s: seq %d at position %d: a rolled-back member left a gap", session, e.Seq, i)
			}
			var n struct{ Text string }
			if err := json.Unmarshal(e.Payload, &n); err != nil {
				t.Fatal(err)
			}
			got = append(got, n.Text)
		}
		if fmt.Sprint(got) != fmt.Sprint(committed[session]) {
			t.Errorf("%s: log %v, acknowledged %v", session, got, committed[session])
		}
	}
}
