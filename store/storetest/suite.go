package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/store"
)

// Harness opens stores for the suite.
type Harness struct {
	// New returns a fresh, empty store; the suite closes it.
	New func(t *testing.T) store.Store
	// Reopen closes s and opens the same database again (a restart).
	Reopen func(t *testing.T, s store.Store) store.Store
	// Peer opens a second store on the same database, as another replica
	// would; nil when the backend is single-process (SQLite).
	Peer func(t *testing.T, s store.Store) store.Store
}

// Clock is a settable clock so lease expiry is tested without sleeping.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock starts a clock at a fixed instant.
func NewClock() *Clock { return &Clock{t: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

// Advance moves the clock forward.
func (c *Clock) Advance(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// fixture is a fresh store, a settable clock and a context.
type fixture struct {
	t     *testing.T
	st    store.Store
	clock *Clock
	ctx   context.Context
}

func newFixture(t *testing.T, h Harness) *fixture {
	st := h.New(t)
	t.Cleanup(func() { st.Close() })
	return &fixture{t: t, st: st, clock: NewClock(), ctx: context.Background()}
}

// Run runs the store's conformance suite: what every backend keeps, with
// no rules of the kernel (those are kernel/kerneltest's).
func Run(t *testing.T, h Harness) {
	tests := []struct {
		name string
		fn   func(t *testing.T, h Harness)
	}{
		{"GateCompareAndSet", testGates},
		{"Memory", testMemory},
		{"Knowledge", testKnowledge},
		{"Gateway", testGateway},
		{"People", testPeople},
		{"Grants", testGrants},
		{"LockSessionRun", testLockSessionRun},
		{"FencedAppend", testFencedAppend},
		{"ClaimCandidateSaysMore", testClaimMore},
		{"AppendUnlessGatePending", testUnlessGatePending},
		{"Incidents", testIncidents},
		{"Secrets", testSecrets},
		{"ChatSettings", testChatSettings},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, h) })
	}
}

func testGates(t *testing.T, h Harness) {
	f := newFixture(t, h)
	now := f.clock.Now()
	g := gh.Gate{ID: "g1", SessionID: "s1", RunID: 1, ToolCallID: "tc1", Tool: "email_send", Arguments: json.RawMessage(`{"to":"sara@example.com"}`),
		ArgsHash: "h", Kind: gh.GateKindApproval, Options: []string{"a", "b"}, ExpiresAt: now.Add(time.Minute), Created: now}
	if ok, err := f.st.InsertGate(f.ctx, g); err != nil || !ok {
		t.Fatalf("insert: %v %v", ok, err)
	}
	if ok, err := f.st.InsertGate(f.ctx, g); err != nil || ok {
		t.Fatalf("second insert: %v %v", ok, err)
	}
	const n = 30
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins := 0
	seen := map[gh.GateState]int{}
	for i := range n {
		wg.Go(func() {
			state := gh.GateApproved
			if i%2 == 1 {
				state = gh.GateDenied
			}
			got, won, err := f.st.DecideGate(f.ctx, store.GateDecision{ID: "g1", Decision: gh.Decision{State: state, By: fmt.Sprintf("u%d", i), Surface: "web"}, Now: now})
			if err != nil {
				t.Errorf("decide: %v", err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if won {
				wins++
			}
			seen[got.State]++
		})
	}
	wg.Wait()
	if wins != 1 || len(seen) != 1 {
		t.Fatalf("%d winners, outcomes %v", wins, seen)
	}
	got, err := f.st.GetGate(f.ctx, "g1")
	if err != nil || got.DecidedBy == "" || got.Surface != "web" || got.DecidedAt.IsZero() || len(got.Options) != 2 || got.Committed {
		t.Fatalf("decided gate %+v %v", got, err)
	}
	if un, _ := f.st.UnloggedGates(f.ctx, 10); len(un) != 1 {
		t.Fatalf("unlogged: %+v", un)
	}
	if err := f.st.MarkGateCommitted(f.ctx, "g1"); err != nil {
		t.Fatal(err)
	}
	if un, _ := f.st.UnloggedGates(f.ctx, 10); len(un) != 0 {
		t.Fatalf("unlogged after mark: %+v", un)
	}
	// A press after the expiry expires the gate instead: never "denied".
	g2 := g
	g2.ID, g2.ExpiresAt = "g2", now.Add(time.Second)
	f.st.InsertGate(f.ctx, g2)
	if due, _ := f.st.DueGates(f.ctx, now, 10); len(due) != 0 {
		t.Fatalf("due too early: %+v", due)
	}
	late := now.Add(2 * time.Second)
	if due, _ := f.st.DueGates(f.ctx, late, 10); len(due) != 1 {
		t.Fatalf("due: %+v", due)
	}
	got, won, err := f.st.DecideGate(f.ctx, store.GateDecision{ID: "g2", Decision: gh.Decision{State: gh.GateApproved, By: "late", Surface: "web"}, Now: late})
	if err != nil || won || got.State != gh.GateExpired || got.DecidedBy != "timeout" {
		t.Fatalf("late press: %+v won=%v %v", got, won, err)
	}
	if _, _, err := f.st.DecideGate(f.ctx, store.GateDecision{ID: "nope", Now: now}); !gh.IsCode(err, gh.CodeNotFound) {
		t.Fatalf("unknown gate: %v", err)
	}
	list, _ := f.st.ListGates(f.ctx, "s1", "", 10)
	pending, _ := f.st.ListGates(f.ctx, "", gh.GatePending, 10)
	if len(list) != 2 || len(pending) != 0 {
		t.Fatalf("lists: %d %d", len(list), len(pending))
	}
}

// A fenced append writes only while the lease holds: the session's epoch
// and its run's epoch, owner, state and expiry, checked in the append.
func testFencedAppend(t *testing.T, h Harness) {
	f := newFixture(t, h)
	now := f.clock.Now()
	if _, _, err := f.st.CreateSession(f.ctx, gh.Session{ID: "s1", Tenant: gh.DefaultTenant, Title: "t", Created: now}); err != nil {
		t.Fatal(err)
	}
	var run gh.Run
	err := f.st.InTx(f.ctx, func(ctx context.Context, tx store.Tx) error {
		sess, err := tx.BumpEpoch(ctx, "s1", now)
		if err != nil {
			return err
		}
		run, err = tx.InsertRun(ctx, gh.Run{SessionID: "s1", State: gh.RunRunning, Attempts: 1, MaxAttempts: 3, Owner: "w", Epoch: sess.Epoch,
			LeaseExpiresAt: now.Add(time.Minute), AvailableAt: now, Created: now, Updated: now})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	appendWith := func(fence store.Fence, key string) store.AppendResult {
		t.Helper()
		var res store.AppendResult
		err := f.st.InTx(f.ctx, func(ctx context.Context, tx store.Tx) error {
			var err error
			res, err = tx.Append(ctx, store.AppendParams{SessionID: "s1", Kind: gh.KindNotice, Payload: json.RawMessage(`{"text":"x"}`), Key: key, Now: now, Fence: &fence})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	good := store.Fence{RunID: run.ID, Epoch: run.Epoch, Owner: "w"}
	if res := appendWith(good, "k1"); res.Fenced || res.Event.Seq != 1 {
		t.Fatalf("append under the lease: %+v", res)
	}
	for name, fence := range map[string]store.Fence{
		"another owner":  {RunID: run.ID, Epoch: run.Epoch, Owner: "x"},
		"an older epoch": {RunID: run.ID, Epoch: run.Epoch - 1, Owner: "w"},
		"another run":    {RunID: run.ID + 100, Epoch: run.Epoch, Owner: "w"},
	} {
		if res := appendWith(fence, "k-"+name); !res.Fenced || res.Event.Seq != 0 {
			t.Errorf("%s: %+v, want fenced", name, res)
		}
	}
	if res := appendWith(good, "k1"); !res.Fenced {
		t.Errorf("a taken key under a fence: %+v, want nothing written (fenced)", res)
	}
	// Expired, then settled: the lease no longer holds.
	for _, change := range []func(*gh.Run){
		func(r *gh.Run) { r.LeaseExpiresAt = now.Add(-time.Second) },
		func(r *gh.Run) { r.LeaseExpiresAt, r.State = now.Add(time.Minute), gh.RunDone },
	} {
		change(&run)
		if err := f.st.InTx(f.ctx, func(ctx context.Context, tx store.Tx) error { return tx.UpdateRun(ctx, run) }); err != nil {
			t.Fatal(err)
		}
		if res := appendWith(good, ""); !res.Fenced {
			t.Errorf("run %s, lease until %v: %+v, want fenced", run.State, run.LeaseExpiresAt, res)
		}
	}
	if sess, err := f.st.GetSession(f.ctx, "s1"); err != nil || sess.LastSeq != 1 {
		t.Fatalf("after fenced appends the log holds %d events (%v), want 1", sess.LastSeq, err)
	}
}

// A claim says whether another run looked claimable, so a worker that
// found the last one waits for a wake-up instead of asking again.
func testClaimMore(t *testing.T, h Harness) {
	f := newFixture(t, h)
	now := f.clock.Now()
	for _, id := range []string{"s1", "s2"} {
		if _, _, err := f.st.CreateSession(f.ctx, gh.Session{ID: id, Tenant: gh.DefaultTenant, Created: now}); err != nil {
			t.Fatal(err)
		}
		err := f.st.InTx(f.ctx, func(ctx context.Context, tx store.Tx) error {
			_, err := tx.InsertRun(ctx, gh.Run{SessionID: id, State: gh.RunQueued, MaxAttempts: 3, AvailableAt: now, Created: now, Updated: now})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	claim := func() (gh.Run, bool, bool) {
		var run gh.Run
		var found, more bool
		err := f.st.InTx(f.ctx, func(ctx context.Context, tx store.Tx) error {
			var err error
			if run, found, more, err = tx.ClaimCandidate(ctx, now); err != nil || !found {
				return err
			}
			run.State, run.Owner, run.LeaseExpiresAt = gh.RunRunning, "w", now.Add(time.Minute)
			return tx.UpdateRun(ctx, run)
		})
		if err != nil {
			t.Fatal(err)
		}
		return run, found, more
	}
	if r, found, more := claim(); !found || !more || r.SessionID != "s1" {
		t.Fatalf("first claim: %+v found=%v more=%v, want s1 with more", r, found, more)
	}
	if r, found, more := claim(); !found || more || r.SessionID != "s2" {
		t.Fatalf("second claim: %+v found=%v more=%v, want s2 and no more", r, found, more)
	}
	if _, found, more := claim(); found || more {
		t.Fatalf("third claim found=%v more=%v, want nothing", found, more)
	}
}

// LockSessionRun reads what LockSession and LockRun read, in one
// statement, and tells a missing session from a missing run.
func testLockSessionRun(t *testing.T, h Harness) {
	f := newFixture(t, h)
	now := f.clock.Now()
	if _, _, err := f.st.CreateSession(f.ctx, gh.Session{ID: "s1", Tenant: gh.DefaultTenant, Title: "t", Created: now}); err != nil {
		t.Fatal(err)
	}
	var run gh.Run
	err := f.st.InTx(f.ctx, func(ctx context.Context, tx store.Tx) error {
		var err error
		run, err = tx.InsertRun(ctx, gh.Run{SessionID: "s1", State: gh.RunRunning, Attempts: 1, MaxAttempts: 3, Owner: "w", Epoch: 4,
			LeaseExpiresAt: now.Add(time.Minute), ReadWatermark: 2, Reason: "r", AvailableAt: now, Created: now, Updated: now})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	err = f.st.InTx(f.ctx, func(ctx context.Context, tx store.Tx) error {
		s, r, err := tx.LockSessionRun(ctx, "s1", run.ID)
		if err != nil {
			return err
		}
		ws, _ := tx.LockSession(ctx, "s1")
		wr, _ := tx.LockRun(ctx, run.ID)
		if s != ws || r != wr || r.Owner != "w" || r.Epoch != 4 || !r.LeaseExpiresAt.Equal(now.Add(time.Minute)) {
			t.Errorf("LockSessionRun read %+v %+v, the statements of their own %+v %+v", s, r, ws, wr)
		}
		// A run's execution identity round-trips.
		r.Execution = &gh.Execution{Provider: "openai", Model: "m", Selection: "openai:m,anthropic:x", Thinking: "high", Tools: 3}
		if err := tx.UpdateRun(ctx, r); err != nil {
			return err
		}
		if got, err := tx.LockRun(ctx, run.ID); err != nil || got.Execution == nil || *got.Execution != *r.Execution {
			t.Errorf("execution after update: %+v %v", got.Execution, err)
		}
		if _, got, err := tx.LockSessionRun(ctx, "s1", run.ID); err != nil || got.Execution == nil || *got.Execution != *r.Execution {
			t.Errorf("execution through LockSessionRun: %+v %v", got.Execution, err)
		}
		if _, _, err := tx.LockSessionRun(ctx, "nope", run.ID); !gh.IsCode(err, gh.CodeUnknownSession) {
			t.Errorf("unknown session: %v", err)
		}
		if _, _, err := tx.LockSessionRun(ctx, "s1", run.ID+100); !gh.IsCode(err, gh.CodeNotFound) {
			t.Errorf("unknown run: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// An input appended "unless a gate is pending" is written while none is
// and not at all while one is — but a repeat of its key still finds it.
func testUnlessGatePending(t *testing.T, h Harness) {
	f := newFixture(t, h)
	now := f.clock.Now()
	if _, _, err := f.st.CreateSession(f.ctx, gh.Session{ID: "s1", Tenant: gh.DefaultTenant, Title: "t", Created: now}); err != nil {
		t.Fatal(err)
	}
	input := func(key string) store.AppendResult {
		t.Helper()
		res, err := f.st.Append(f.ctx, store.AppendParams{SessionID: "s1", Kind: gh.KindUserMessage, Payload: json.RawMessage(`{"text":"hi"}`),
			Key: key, Now: now, Input: true, QueueRun: true, MaxAttempts: 3, UnlessGatePending: true})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := input("m1"); res.GatePending || res.Event.Seq != 1 || res.RunID == 0 {
		t.Fatalf("no gate pending: %+v", res)
	}
	g := gh.Gate{ID: "g1", SessionID: "s1", RunID: 1, ToolCallID: "tc1", Tool: "email_send", Arguments: json.RawMessage(`{}`),
		ArgsHash: "h", Kind: gh.GateKindApproval, Options: []string{"a"}, ExpiresAt: now.Add(time.Minute), Created: now}
	if ok, err := f.st.InsertGate(f.ctx, g); err != nil || !ok {
		t.Fatalf("insert gate: %v %v", ok, err)
	}
	if res := input("m2"); !res.GatePending || res.Event.Seq != 0 || res.Existing {
		t.Fatalf("gate pending: %+v", res)
	}
	if res := input("m1"); !res.Existing || res.Event.Seq != 1 {
		t.Fatalf("repeat of a committed key under a pending gate: %+v", res)
	}
	evs, err := f.st.Events(f.ctx, "s1", 0, 10)
	if err != nil || len(evs) != 1 {
		t.Fatalf("log %+v %v: the refused input was written", evs, err)
	}
}
