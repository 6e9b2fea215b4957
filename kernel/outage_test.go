package kernel_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/internal/testing/pgcut"
	"github.com/gatehouse/gatehouse/internal/testing/testenv"
	"github.com/gatehouse/gatehouse/kernel"
	"github.com/gatehouse/gatehouse/store"
	"github.com/gatehouse/gatehouse/store/postgres"
	"github.com/gatehouse/gatehouse/store/storetest"
)

// outageFixture is a kernel on a real Postgres reached through a proxy
// the test can cut, with one claimed run.
type outageFixture struct {
	t     *testing.T
	ctx   context.Context
	proxy *pgcut.Proxy
	st    store.Store
	k     *kernel.Kernel
	l     gh.Lease
}

func newOutageFixture(t *testing.T, ttl time.Duration) *outageFixture {
	u := testenv.PostgresURL(t)
	proxy := pgcut.Start(t, pgcut.Target(t, u))
	st := storetest.OpenPostgres(t, postgres.Config{URL: proxy.URL(t, u)})
	f := &outageFixture{t: t, ctx: context.Background(), proxy: proxy, st: st, k: kernel.New(st, kernel.Config{LeaseTTL: ttl})}
	if _, _, err := f.k.CreateSession(f.ctx, gh.Session{ID: "s1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.k.EdgeCommit(f.ctx, kernel.EdgeInput{SessionID: "s1", Event: gh.NewEvent{Kind: gh.KindUserMessage, Payload: json.RawMessage(`{"text":"mail Sara"}`), Key: "in-1"}}); err != nil {
		t.Fatal(err)
	}
	l, ok, err := f.k.Claim(f.ctx, "w1")
	if err != nil || !ok {
		t.Fatalf("claim: %v %v", ok, err)
	}
	f.l = l
	return f
}

// result is the tool result an attempt holds after its effect ran.
func result() gh.NewEvent {
	return gh.NewEvent{Kind: gh.KindToolResult, Payload: json.RawMessage(`{"toolCallId":"c1","name":"email_send","content":"sent: 250 OK"}`), Key: "tool:c1"}
}

// count is how many events of kind the session's log holds.
func (f *outageFixture) count(kind gh.Kind) int {
	f.t.Helper()
	evs, err := f.st.Events(f.ctx, "s1", 0, 1000)
	if err != nil {
		f.t.Fatal(err)
	}
	n := 0
	for _, e := range evs {
		if e.Kind == kind {
			n++
		}
	}
	return n
}

// A result whose commit meets a database outage is kept and saved when
// the database is back, while the lease is still the attempt's: the
// successor never has to say the outcome is unknown.
func TestCommitRidesOutAnOutage(t *testing.T) {
	f := newOutageFixture(t, 30*time.Second)
	f.proxy.Cut()
	done := make(chan error, 1)
	go func() {
		_, err := f.k.Commit(f.ctx, f.l, result())
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("the commit returned during the outage: %v", err)
	case <-time.After(700 * time.Millisecond):
	}
	f.proxy.Restore()
	if err := <-done; err != nil {
		t.Fatalf("the commit after the outage: %v", err)
	}
	if n := f.count(gh.KindToolResult); n != 1 {
		t.Fatalf("%d tool results in the log, want 1", n)
	}
}

// An outage longer than the lease ends the retries: the commit fails, as
// before, and nothing lands (the successor decides).
func TestCommitGivesUpWhenItsLeaseEnds(t *testing.T) {
	f := newOutageFixture(t, 1500*time.Millisecond)
	f.proxy.Cut()
	_, err := f.k.Commit(f.ctx, f.l, result())
	if !gh.IsCode(err, gh.CodeUnavailable) {
		t.Fatalf("a commit past its lease during an outage: %v, want unavailable", err)
	}
	f.proxy.Restore()
	time.Sleep(time.Until(f.l.ExpiresAt) + 100*time.Millisecond)
	if n := f.count(gh.KindToolResult); n != 0 {
		t.Fatalf("%d tool results landed after the lease ended", n)
	}
	if _, err := f.k.Commit(f.ctx, f.l, result()); !gh.IsCode(err, gh.CodeLeaseLost) {
		t.Fatalf("a commit on the ended lease: %v, want lease-lost", err)
	}
}

// A COMMIT that landed but whose answer the connection lost is resolved
// by its key on the retry: one result, no error.
func TestCommitWhoseAnswerIsLostLandsOnce(t *testing.T) {
	f := newOutageFixture(t, 30*time.Second)
	f.proxy.LoseNextCommit()
	if _, err := f.k.Commit(f.ctx, f.l, result()); err != nil {
		t.Fatalf("commit: %v", err)
	}
	if f.proxy.Lost() != 1 {
		t.Fatalf("the proxy lost %d COMMIT answers, want 1", f.proxy.Lost())
	}
	if n := f.count(gh.KindToolResult); n != 1 {
		t.Fatalf("%d tool results in the log, want 1", n)
	}
}

// A settle whose COMMIT's answer is lost is found landed by its
// run.finished key: the attempt hears how the run settled, not an error,
// and nothing is settled twice.
func TestSettleWhoseAnswerIsLostIsFoundLanded(t *testing.T) {
	f := newOutageFixture(t, 30*time.Second)
	if _, err := f.k.Commit(f.ctx, f.l, result()); err != nil {
		t.Fatal(err)
	}
	f.proxy.LoseNextCommit()
	settled, err := f.k.Finish(f.ctx, f.l, kernel.Settle{Outcome: gh.OutcomeDone,
		Events: []gh.NewEvent{{Kind: gh.KindRunFinished, Payload: json.RawMessage(`{"status":"done"}`), Key: "run1-epoch1-finished"}}})
	if err != nil || settled.State != gh.RunDone {
		t.Fatalf("settle: %+v %v", settled, err)
	}
	if f.proxy.Lost() != 1 {
		t.Fatalf("the proxy lost %d COMMIT answers, want 1", f.proxy.Lost())
	}
	if n := f.count(gh.KindRunFinished); n != 1 {
		t.Fatalf("%d run.finished in the log, want 1", n)
	}
	run, err := f.st.GetRun(f.ctx, f.l.RunID)
	if err != nil || run.State != gh.RunDone {
		t.Fatalf("run after the settle: %+v %v", run, err)
	}
}
