// Package gatestest is the one suite every gate registry passes, against
// real stores (SQLite, Postgres) and real servers (Redis): presses racing
// on one gate, expiry, validation, crash repair, replicas sweeping at once
// and, for registries that keep state outside SQL, losing that state.
package gatestest

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/gates"
	"github.com/gatehouse/gatehouse/internal/testing/testenv"
	"github.com/gatehouse/gatehouse/kernel"
	"github.com/gatehouse/gatehouse/store"
	"github.com/gatehouse/gatehouse/store/storetest"
)

// Harness opens what the suite runs against.
type Harness struct {
	// NewStore returns a fresh, empty store; the suite closes it.
	NewStore func(t testing.TB) store.Store
	// Peer opens a second store on the same database, as another replica
	// would; nil when the backend is single-process (SQLite).
	Peer func(t testing.TB, st store.Store) store.Store
	// NewRegistry returns a registry over st with the clock now. Every
	// registry made within one test shares the registry's server state,
	// as replicas do.
	NewRegistry func(t testing.TB, st store.Store, now func() time.Time) gates.Registry
	// Forget makes the registry lose what it keeps outside SQL about gate
	// id (a Redis restart). nil for registries that keep nothing else; the
	// tests that need it are skipped.
	Forget func(t testing.TB, id string)
}

// Clock is the conformance suite's settable clock, so expiry is tested
// without sleeping.
type Clock = storetest.Clock

// NewClock starts a clock at a fixed instant.
func NewClock() *Clock { return storetest.NewClock() }

// Fixture is one store, kernel, registry and service on a shared clock.
type Fixture struct {
	T        testing.TB
	Ctx      context.Context
	Store    store.Store
	Kernel   *kernel.Kernel
	Clock    *Clock
	Registry gates.Registry
	Service  *gates.Service
	h        Harness
}

// NewFixture opens a fresh store and builds the rest over it. The service
// sweeps every 5ms once started.
func NewFixture(t testing.TB, h Harness) *Fixture {
	st := h.NewStore(t)
	t.Cleanup(func() { st.Close() })
	f := &Fixture{T: t, Ctx: context.Background(), Store: st, Clock: NewClock(), h: h}
	f.Kernel = kernel.New(st, kernel.Config{Now: f.Clock.Now})
	f.Registry = h.NewRegistry(t, st, f.Clock.Now)
	f.Service = f.NewService(f.Kernel, st, f.Registry)
	return f
}

// NewService returns another service on the fixture's clock; st is the
// store k is over.
func (f *Fixture) NewService(k *kernel.Kernel, st store.Store, reg gates.Registry) *gates.Service {
	return gates.NewService(gates.Config{Registry: reg, Kernel: k, Store: st, Sweep: 5 * time.Millisecond, Now: f.Clock.Now})
}

// Replica returns a kernel, its store and a registry as another replica
// would have: over a peer store when the backend has them, each with its
// own state.
func (f *Fixture) Replica() (*kernel.Kernel, store.Store, gates.Registry) {
	st := f.Store
	if f.h.Peer != nil {
		st = f.h.Peer(f.T, f.Store)
		f.T.Cleanup(func() { st.Close() })
	}
	return kernel.New(st, kernel.Config{Now: f.Clock.Now}), st, f.h.NewRegistry(f.T, st, f.Clock.Now)
}

// GateSpec describes a gate to open.
type GateSpec struct {
	// Kind defaults to an approval gate.
	Kind    string
	Options []string
	// TTL is the time to expiry. Defaults to 5 minutes.
	TTL time.Duration
}

// OpenGate opens gate id as the tool worker does: a session "s-"+id, a
// user message, a claimed run, gate.opened committed with the gate row in
// one transaction, and the run settled awaiting approval. No other run may
// be claimable when it is called.
func (f *Fixture) OpenGate(id string, spec GateSpec) gh.Gate {
	t := f.T
	t.Helper()
	if spec.Kind == "" {
		spec.Kind = gh.GateKindApproval
	}
	if spec.TTL == 0 {
		spec.TTL = 5 * time.Minute
	}
	sid := "s-" + id
	if _, _, err := f.Kernel.CreateSession(f.Ctx, gh.Session{ID: sid}); err != nil {
		t.Fatalf("create session: %v", err)
	}
	msg, _ := json.Marshal(map[string]string{"text": "email Sara that the report is ready"})
	if _, err := f.Kernel.EdgeCommit(f.Ctx, kernel.EdgeInput{SessionID: sid, Event: gh.NewEvent{Kind: gh.KindUserMessage, Payload: msg}}); err != nil {
		t.Fatalf("user message: %v", err)
	}
	l, ok, err := f.Kernel.Claim(f.Ctx, "worker")
	if err != nil || !ok {
		t.Fatalf("claim: ok=%v %v", ok, err)
	}
	if l.SessionID != sid {
		t.Fatalf("claimed a run of %s, not %s: open gates before deciding any", l.SessionID, sid)
	}
	now := gates.Clock(f.Clock.Now)
	g := gh.Gate{
		ID: id, SessionID: sid, RunID: l.RunID, ToolCallID: "call-" + id, Tool: "email_send",
		Arguments: json.RawMessage(`{"to":"sara@example.com","subject":"report"}`), ArgsHash: "sha256:" + id,
		Kind: spec.Kind, Options: spec.Options, State: gh.GatePending, ExpiresAt: now.Add(spec.TTL), Created: now,
	}
	if spec.Kind == gh.GateKindClarify {
		g.Question = "Which Sara?"
	}
	opened, _ := json.Marshal(gh.GateOpened{GateID: g.ID, ToolCallID: g.ToolCallID, Tool: g.Tool, Arguments: g.Arguments,
		ArgsHash: g.ArgsHash, Kind: g.Kind, Question: g.Question, Options: g.Options, ExpiresAt: g.ExpiresAt})
	err = f.Store.InTx(f.Ctx, func(ctx context.Context, tx store.Tx) error {
		if _, err := f.Kernel.CommitTx(ctx, tx, l, gh.NewEvent{Kind: gh.KindGateOpened, Payload: opened, Key: "gate-opened:" + id}); err != nil {
			return err
		}
		_, err := tx.InsertGate(ctx, g)
		return err
	})
	if err != nil {
		t.Fatalf("open gate: %v", err)
	}
	if s, err := f.Kernel.Finish(f.Ctx, l, kernel.Settle{Outcome: gh.OutcomeAwaitingApproval, Reason: "gate " + id}); err != nil || s.State != gh.RunAwaitingApproval {
		t.Fatalf("settle awaiting approval: %+v %v", s, err)
	}
	return g
}

// Decided returns the gate.decided events of gate id.
func (f *Fixture) Decided(g gh.Gate) []gh.GateDecided {
	f.T.Helper()
	evs, err := f.Kernel.Events(f.Ctx, g.SessionID, 0, 1000)
	if err != nil {
		f.T.Fatalf("events: %v", err)
	}
	var out []gh.GateDecided
	for _, e := range evs {
		if e.Kind != gh.KindGateDecided {
			continue
		}
		var p gh.GateDecided
		if err := json.Unmarshal(e.Payload, &p); err != nil {
			f.T.Fatalf("gate.decided payload %s: %v", e.Payload, err)
		}
		if p.GateID == g.ID {
			if e.Key != "gate:"+g.ID {
				f.T.Fatalf("gate.decided of %s has key %q", g.ID, e.Key)
			}
			out = append(out, p)
		}
	}
	return out
}

// Get reads gate id from SQL.
func (f *Fixture) Get(id string) gh.Gate {
	f.T.Helper()
	g, err := f.Store.GetGate(f.Ctx, id)
	if err != nil {
		f.T.Fatalf("get gate %s: %v", id, err)
	}
	return g
}

// OneDecision checks that gate g is decided in SQL as want (state, by,
// surface), logged, with exactly one gate.decided saying the same.
func (f *Fixture) OneDecision(g gh.Gate, want gh.Decision) gh.Gate {
	f.T.Helper()
	got := f.Get(g.ID)
	if got.State != want.State || got.DecidedBy != want.By || got.Surface != want.Surface || !got.Committed || got.DecidedAt.IsZero() {
		f.T.Fatalf("gate %s in SQL: %+v; want %+v, logged", g.ID, got, want)
	}
	ds := f.Decided(g)
	if len(ds) != 1 {
		f.T.Fatalf("gate %s has %d gate.decided events, want 1: %+v", g.ID, len(ds), ds)
	}
	d := ds[0]
	if d.Decision != want.State || d.By != want.By || d.Surface != want.Surface || d.Answer != got.Answer || d.ToolCallID != g.ToolCallID || d.Tool != g.Tool {
		f.T.Fatalf("gate.decided of %s: %+v; want %+v", g.ID, d, want)
	}
	return got
}

// RunQueuedOnce checks that the run that waited on g is queued again, and
// is claimed exactly once.
func (f *Fixture) RunQueuedOnce(g gh.Gate) {
	f.T.Helper()
	run, ok, err := f.Kernel.LatestRun(f.Ctx, g.SessionID)
	if err != nil || !ok || run.ID != g.RunID || run.State != gh.RunQueued {
		f.T.Fatalf("run of %s after the decision: %+v ok=%v %v; want run %d queued", g.ID, run, ok, err, g.RunID)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var leases []gh.Lease
	for i := range 5 {
		wg.Go(func() {
			l, ok, err := f.Kernel.Claim(f.Ctx, fmt.Sprintf("w%d", i))
			if err != nil {
				f.T.Errorf("claim: %v", err)
			}
			if ok {
				mu.Lock()
				leases = append(leases, l)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(leases) != 1 || leases[0].RunID != g.RunID {
		f.T.Fatalf("claims after the decision: %+v; want one lease of run %d", leases, g.RunID)
	}
}

func wantCode(t testing.TB, err error, code gh.Code) {
	t.Helper()
	if gh.ErrorCode(err) != code {
		t.Fatalf("want error %s, got %v", code, err)
	}
}

// Run runs the whole suite.
func Run(t *testing.T, h Harness) {
	tests := []struct {
		name string
		fn   func(t *testing.T, h Harness)
	}{
		{"FiftyPressesOneWinner", testFiftyPresses},
		{"PressAfterExpiry", testPressAfterExpiry},
		{"SweeperExpiresDueGate", testSweeperExpires},
		{"UnknownGate", testUnknownGate},
		{"InvalidDecisions", testInvalid},
		{"ClarifyAnswered", testClarify},
		{"CrashRepairedByNextPress", testCrashRepairedByPress},
		{"CrashRepairedBySweeper", testCrashRepairedBySweeper},
		{"TwoServicesSweeping", testTwoServicesSweeping},
		{"RegistryForgets", testForget},
		{"TwoPersonRule", testTwoPersonRule},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, h) })
	}
}

var surfaces = []string{"telegram", "discord", "slack", "web"}

func testFiftyPresses(t *testing.T, h Harness) {
	f := NewFixture(t, h)
	g := f.OpenGate("g1", GateSpec{})
	const n = 50
	type result struct {
		g   gh.Gate
		won bool
		err error
	}
	results := make([]result, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			d := gh.Decision{State: gh.GateApproved, By: fmt.Sprintf("user%02d", i), Surface: surfaces[i%len(surfaces)]}
			if i%2 == 1 {
				d.State = gh.GateDenied
			}
			<-start
			var got gh.Gate
			var won bool
			var err error
			if i%3 == 2 {
				// As the HTTP API presses: from the gate it read to
				// check whose it is.
				got, won, err = f.Service.DecideRead(f.Ctx, g, d)
			} else {
				got, won, err = f.Service.Decide(f.Ctx, g.ID, d)
			}
			results[i] = result{got, won, err}
		})
	}
	close(start)
	wg.Wait()
	winner := -1
	for i, r := range results {
		if r.err != nil {
			t.Fatalf("press %d: %v", i, r.err)
		}
		if r.won {
			if winner >= 0 {
				t.Fatalf("presses %d and %d both won", winner, i)
			}
			winner = i
		}
	}
	if winner < 0 {
		t.Fatal("no press won")
	}
	want := gh.Decision{State: gh.GateApproved, By: fmt.Sprintf("user%02d", winner), Surface: surfaces[winner%len(surfaces)]}
	if winner%2 == 1 {
		want.State = gh.GateDenied
	}
	for i, r := range results {
		if r.g.State != want.State || r.g.DecidedBy != want.By || r.g.Surface != want.Surface || !r.g.Committed || r.g.SessionID != g.SessionID {
			t.Fatalf("press %d (won=%v) got %+v; want the decision of press %d %+v, logged", i, r.won, r.g, winner, want)
		}
	}
	f.OneDecision(g, want)
	f.RunQueuedOnce(g)
	// A stale tab pressing much later gets the same answer.
	got, won, err := f.Service.Decide(f.Ctx, g.ID, gh.Decision{State: gh.GateDenied, By: "late", Surface: "web"})
	if err != nil || won || got.DecidedBy != want.By {
		t.Fatalf("late press: %+v won=%v %v", got, won, err)
	}
	f.OneDecision(g, want)
}

var expired = gh.Decision{State: gh.GateExpired, By: gates.ExpiredBy, Surface: gates.ExpiredSurface}

func testPressAfterExpiry(t *testing.T, h Harness) {
	f := NewFixture(t, h)
	g := f.OpenGate("late", GateSpec{TTL: time.Minute})
	f.Clock.Advance(time.Minute) // expiry is at or before now
	for i, by := range []string{"alice", "bob"} {
		got, won, err := f.Service.Decide(f.Ctx, g.ID, gh.Decision{State: gh.GateApproved, By: by, Surface: "telegram"})
		if err != nil || won || got.State != gh.GateExpired || got.DecidedBy != gates.ExpiredBy || got.Surface != gates.ExpiredSurface || !got.Committed {
			t.Fatalf("press %d after expiry: %+v won=%v %v", i, got, won, err)
		}
	}
	f.OneDecision(g, expired)
	f.RunQueuedOnce(g)
}

func testSweeperExpires(t *testing.T, h Harness) {
	f := NewFixture(t, h)
	due := f.OpenGate("due", GateSpec{TTL: time.Minute})
	later := f.OpenGate("later", GateSpec{TTL: time.Hour})
	if err := f.Service.Start(f.Ctx); err != nil {
		t.Fatal(err)
	}
	if err := f.Service.Start(f.Ctx); !gh.IsCode(err, gh.CodeConflict) {
		t.Fatalf("second start: %v", err)
	}
	f.Clock.Advance(2 * time.Minute)
	testenv.Eventually(t, "the sweeper to expire the due gate", func() bool { return f.Get(due.ID).Committed })
	if err := f.Service.Stop(f.Ctx); err != nil {
		t.Fatal(err)
	}
	f.OneDecision(due, expired)
	f.RunQueuedOnce(due)
	if g := f.Get(later.ID); g.State != gh.GatePending {
		t.Fatalf("gate not due yet was decided: %+v", g)
	}
	got, won, err := f.Service.Decide(f.Ctx, due.ID, gh.Decision{State: gh.GateApproved, By: "alice", Surface: "web"})
	if err != nil || won || got.State != gh.GateExpired {
		t.Fatalf("press after the sweep: %+v won=%v %v", got, won, err)
	}
	if err := f.Service.Stop(f.Ctx); err != nil {
		t.Fatalf("second stop: %v", err)
	}
	f.OneDecision(due, expired)
}

func testUnknownGate(t *testing.T, h Harness) {
	f := NewFixture(t, h)
	_, _, err := f.Service.Decide(f.Ctx, "nope", gh.Decision{State: gh.GateApproved, By: "alice", Surface: "web"})
	wantCode(t, err, gh.CodeNotFound)
	_, _, err = f.Registry.Claim(f.Ctx, "nope", gh.Decision{State: gh.GateApproved, By: "alice", Surface: "web"})
	wantCode(t, err, gh.CodeNotFound)
	_, _, err = f.Service.Decide(f.Ctx, "", gh.Decision{State: gh.GateApproved, By: "alice", Surface: "web"})
	wantCode(t, err, gh.CodeInvalid)
}

func testInvalid(t *testing.T, h Harness) {
	f := NewFixture(t, h)
	ga := f.OpenGate("approval", GateSpec{})
	gc := f.OpenGate("clarify", GateSpec{Kind: gh.GateKindClarify, Options: []string{"Sara Lind", "Sara Berg"}})
	long := make([]byte, gates.MaxByLen+1)
	for i := range long {
		long[i] = 'x'
	}
	cases := []struct {
		name string
		gate string
		d    gh.Decision
	}{
		{"expired from a client", ga.ID, gh.Decision{State: gh.GateExpired, By: "alice", Surface: "web"}},
		{"pending", ga.ID, gh.Decision{State: gh.GatePending, By: "alice", Surface: "web"}},
		{"unknown state", ga.ID, gh.Decision{State: "approve", By: "alice", Surface: "web"}},
		{"no by", ga.ID, gh.Decision{State: gh.GateApproved, Surface: "web"}},
		{"by too long", ga.ID, gh.Decision{State: gh.GateApproved, By: string(long), Surface: "web"}},
		{"no surface", ga.ID, gh.Decision{State: gh.GateApproved, By: "alice"}},
		{"answer on an approval", ga.ID, gh.Decision{State: gh.GateApproved, By: "alice", Surface: "web", Answer: "Sara Lind"}},
		{"answered on an approval gate", ga.ID, gh.Decision{State: gh.GateAnswered, By: "alice", Surface: "web", Answer: "Sara Lind"}},
		{"approve on a clarify gate", gc.ID, gh.Decision{State: gh.GateApproved, By: "alice", Surface: "web"}},
		{"deny on a clarify gate", gc.ID, gh.Decision{State: gh.GateDenied, By: "alice", Surface: "web"}},
		{"answer not an option", gc.ID, gh.Decision{State: gh.GateAnswered, By: "alice", Surface: "web", Answer: "Sam"}},
		{"answered without an answer", gc.ID, gh.Decision{State: gh.GateAnswered, By: "alice", Surface: "web"}},
	}
	for _, c := range cases {
		_, won, err := f.Service.Decide(f.Ctx, c.gate, c.d)
		if won || !gh.IsCode(err, gh.CodeInvalid) {
			t.Fatalf("%s: won=%v err=%v; want invalid", c.name, won, err)
		}
	}
	// The registry itself refuses expiry before the gate is due.
	_, _, err := f.Registry.Claim(f.Ctx, ga.ID, expired)
	wantCode(t, err, gh.CodeInvalid)
	for _, g := range []gh.Gate{ga, gc} {
		if got := f.Get(g.ID); got.State != gh.GatePending {
			t.Fatalf("an invalid decision decided %s: %+v", g.ID, got)
		}
		if ds := f.Decided(g); len(ds) != 0 {
			t.Fatalf("an invalid decision was logged: %+v", ds)
		}
	}
	// Still decidable.
	if got, won, err := f.Service.Decide(f.Ctx, ga.ID, gh.Decision{State: gh.GateDenied, By: "alice", Surface: "slack", Reason: "not now"}); err != nil || !won || got.Reason != "not now" {
		t.Fatalf("valid press: %+v won=%v %v", got, won, err)
	}
	f.OneDecision(ga, gh.Decision{State: gh.GateDenied, By: "alice", Surface: "slack"})
}

func testClarify(t *testing.T, h Harness) {
	f := NewFixture(t, h)
	g := f.OpenGate("which", GateSpec{Kind: gh.GateKindClarify, Options: []string{"Sara Lind", "Sara Berg"}})
	got, won, err := f.Service.Decide(f.Ctx, g.ID, gh.Decision{State: gh.GateAnswered, By: "alice", Surface: "discord", Answer: "Sara Berg"})
	if err != nil || !won || got.Answer != "Sara Berg" || got.Question != "Which Sara?" || len(got.Options) != 2 {
		t.Fatalf("answer: %+v won=%v %v", got, won, err)
	}
	got, won, err = f.Service.Decide(f.Ctx, g.ID, gh.Decision{State: gh.GateAnswered, By: "bob", Surface: "web", Answer: "Sara Lind"})
	if err != nil || won || got.Answer != "Sara Berg" || got.DecidedBy != "alice" {
		t.Fatalf("second answer: %+v won=%v %v", got, won, err)
	}
	f.OneDecision(g, gh.Decision{State: gh.GateAnswered, By: "alice", Surface: "discord"})
	if ds := f.Decided(g); ds[0].Answer != "Sara Berg" {
		t.Fatalf("gate.decided answer: %+v", ds[0])
	}
	f.RunQueuedOnce(g)
}

// A press that claimed and died before it committed: the registry decided,
// the log does not know.
func crashedClaim(f *Fixture, g gh.Gate, d gh.Decision) {
	f.T.Helper()
	got, won, err := f.Registry.Claim(f.Ctx, g.ID, d)
	if err != nil || !won || got.DecidedBy != d.By {
		f.T.Fatalf("claim: %+v won=%v %v", got, won, err)
	}
	if ds := f.Decided(g); len(ds) != 0 {
		f.T.Fatalf("a bare claim logged: %+v", ds)
	}
	if sg := f.Get(g.ID); sg.State != d.State || sg.Committed {
		f.T.Fatalf("after a bare claim SQL has %+v; want %s, unlogged", sg, d.State)
	}
}

func testCrashRepairedByPress(t *testing.T, h Harness) {
	f := NewFixture(t, h)
	g := f.OpenGate("crash", GateSpec{})
	alice := gh.Decision{State: gh.GateApproved, By: "alice", Surface: "telegram"}
	crashedClaim(f, g, alice)
	got, won, err := f.Service.Decide(f.Ctx, g.ID, gh.Decision{State: gh.GateDenied, By: "bob", Surface: "web"})
	if err != nil || won || got.DecidedBy != "alice" || got.State != gh.GateApproved || !got.Committed {
		t.Fatalf("next press: %+v won=%v %v", got, won, err)
	}
	f.OneDecision(g, alice)
	f.RunQueuedOnce(g)
	if _, _, err := f.Service.Decide(f.Ctx, g.ID, gh.Decision{State: gh.GateDenied, By: "carol", Surface: "slack"}); err != nil {
		t.Fatal(err)
	}
	f.OneDecision(g, alice)
}

func testCrashRepairedBySweeper(t *testing.T, h Harness) {
	f := NewFixture(t, h)
	g := f.OpenGate("crash", GateSpec{})
	alice := gh.Decision{State: gh.GateDenied, By: "alice", Surface: "slack", Reason: "wrong Sara"}
	crashedClaim(f, g, alice)
	if err := f.Service.SweepOnce(f.Ctx); err != nil {
		t.Fatal(err)
	}
	got := f.OneDecision(g, alice)
	if got.Reason != "wrong Sara" || f.Decided(g)[0].Reason != "wrong Sara" {
		t.Fatalf("reason lost: %+v", got)
	}
	f.RunQueuedOnce(g)
	if err := f.Service.SweepOnce(f.Ctx); err != nil {
		t.Fatal(err)
	}
	f.OneDecision(g, alice)
}

func testTwoServicesSweeping(t *testing.T, h Harness) {
	f := NewFixture(t, h)
	const n = 12
	var due, claimed []gh.Gate
	for i := range n {
		g := f.OpenGate(fmt.Sprintf("g%02d", i), GateSpec{TTL: time.Minute})
		if i%3 == 0 {
			claimed = append(claimed, g)
		} else {
			due = append(due, g)
		}
	}
	for _, g := range claimed {
		crashedClaim(f, g, gh.Decision{State: gh.GateApproved, By: "alice-" + g.ID, Surface: "web"})
	}
	f.Clock.Advance(2 * time.Minute)
	k2, st2, reg2 := f.Replica()
	services := []*gates.Service{f.Service, f.NewService(k2, st2, reg2)}
	var wg sync.WaitGroup
	for _, s := range services {
		for range 3 {
			wg.Go(func() {
				if err := s.SweepOnce(f.Ctx); err != nil {
					t.Errorf("sweep: %v", err)
				}
			})
		}
		if err := s.Start(f.Ctx); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	testenv.Eventually(t, "every gate logged", func() bool {
		for _, g := range append(append([]gh.Gate{}, due...), claimed...) {
			if !f.Get(g.ID).Committed {
				return false
			}
		}
		return true
	})
	for _, s := range services {
		if err := s.Stop(f.Ctx); err != nil {
			t.Fatal(err)
		}
	}
	for _, g := range due {
		f.OneDecision(g, expired)
	}
	for _, g := range claimed {
		f.OneDecision(g, gh.Decision{State: gh.GateApproved, By: "alice-" + g.ID, Surface: "web"})
	}
}

func testForget(t *testing.T, h Harness) {
	if h.Forget == nil {
		t.Skip("the registry keeps nothing outside SQL")
	}
	f := NewFixture(t, h)
	decided := f.OpenGate("decided", GateSpec{})
	unlogged := f.OpenGate("unlogged", GateSpec{})
	fresh := f.OpenGate("fresh", GateSpec{})

	alice := gh.Decision{State: gh.GateApproved, By: "alice", Surface: "telegram"}
	if _, won, err := f.Service.Decide(f.Ctx, decided.ID, alice); err != nil || !won {
		t.Fatalf("first press: won=%v %v", won, err)
	}
	h.Forget(t, decided.ID) // Redis restarted
	_, _, reg2 := f.Replica()
	for i, reg := range []gates.Registry{f.Registry, reg2} {
		svc := f.NewService(f.Kernel, f.Store, reg)
		got, won, err := svc.Decide(f.Ctx, decided.ID, gh.Decision{State: gh.GateDenied, By: "bob", Surface: "web"})
		if err != nil || won || got.State != gh.GateApproved || got.DecidedBy != "alice" || got.Surface != "telegram" {
			t.Fatalf("press %d after the restart: %+v won=%v %v", i, got, won, err)
		}
		h.Forget(t, decided.ID)
	}
	f.OneDecision(decided, alice)

	crashedClaim(f, unlogged, alice)
	h.Forget(t, unlogged.ID)
	got, won, err := f.Service.Decide(f.Ctx, unlogged.ID, gh.Decision{State: gh.GateDenied, By: "bob", Surface: "web"})
	if err != nil || won || got.DecidedBy != "alice" || !got.Committed {
		t.Fatalf("press after the restart, unlogged: %+v won=%v %v", got, won, err)
	}
	f.OneDecision(unlogged, alice)

	h.Forget(t, fresh.ID)
	got, won, err = f.Service.Decide(f.Ctx, fresh.ID, gh.Decision{State: gh.GateDenied, By: "bob", Surface: "web"})
	if err != nil || !won || got.DecidedBy != "bob" {
		t.Fatalf("first press after the restart: %+v won=%v %v", got, won, err)
	}
	f.OneDecision(fresh, gh.Decision{State: gh.GateDenied, By: "bob", Surface: "web"})
}
