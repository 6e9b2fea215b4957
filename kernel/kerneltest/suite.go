package kerneltest

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/gates"
	"github.com/gatehouse/gatehouse/kernel"
	"github.com/gatehouse/gatehouse/store"
	"github.com/gatehouse/gatehouse/store/storetest"
)

// Harness opens stores for the suite: the same harness a backend gives
// storetest.Run.
type Harness = storetest.Harness

const ttl = 30 * time.Second

type fixture struct {
	t     *testing.T
	st    store.Store
	k     *kernel.Kernel
	clock *storetest.Clock
	ctx   context.Context
}

func newFixture(t *testing.T, h Harness, cfg kernel.Config) *fixture {
	st := h.New(t)
	t.Cleanup(func() { st.Close() })
	clock := storetest.NewClock()
	cfg.Now = clock.Now
	if cfg.LeaseTTL == 0 {
		cfg.LeaseTTL = ttl
	}
	return &fixture{t: t, st: st, k: kernel.New(st, cfg), clock: clock, ctx: context.Background()}
}

func (f *fixture) session(id string) {
	f.t.Helper()
	if _, _, err := f.k.CreateSession(f.ctx, gh.Session{ID: id}); err != nil {
		f.t.Fatalf("create session %s: %v", id, err)
	}
}

func msg(text string) json.RawMessage {
	b, _ := json.Marshal(map[string]string{"text": text})
	return b
}

func (f *fixture) input(session, key, text string) kernel.Committed {
	f.t.Helper()
	c, err := f.k.EdgeCommit(f.ctx, kernel.EdgeInput{SessionID: session, Event: gh.NewEvent{Kind: gh.KindUserMessage, Payload: msg(text), Key: key}})
	if err != nil {
		f.t.Fatalf("edge commit %q: %v", text, err)
	}
	return c
}

func (f *fixture) claim(owner string) gh.Lease {
	f.t.Helper()
	l, ok, err := f.k.Claim(f.ctx, owner)
	if err != nil || !ok {
		f.t.Fatalf("claim by %s: ok=%v err=%v", owner, ok, err)
	}
	return l
}

func (f *fixture) noClaim() {
	f.t.Helper()
	if l, ok, err := f.k.Claim(f.ctx, "nobody"); err != nil || ok {
		f.t.Fatalf("expected nothing to claim, got lease %+v err=%v", l, err)
	}
}

func (f *fixture) events(session string) []gh.Event {
	f.t.Helper()
	evs, err := f.k.Events(f.ctx, session, 0, 1000)
	if err != nil {
		f.t.Fatalf("events: %v", err)
	}
	return evs
}

// said is the session's events without the run.started each claim
// commits: what the tests that count a conversation's events count.
func (f *fixture) said(session string) []gh.Event {
	f.t.Helper()
	var out []gh.Event
	for _, e := range f.events(session) {
		if e.Kind != gh.KindRunStarted {
			out = append(out, e)
		}
	}
	return out
}

func (f *fixture) assistant(l gh.Lease, key, text string) ([]kernel.Committed, error) {
	return f.k.Commit(f.ctx, l, gh.NewEvent{Kind: gh.KindAssistantMessage, Payload: msg(text), Key: key})
}

func wantCode(t *testing.T, err error, code gh.Code) {
	t.Helper()
	if gh.ErrorCode(err) != code {
		t.Fatalf("want error %s, got %v", code, err)
	}
}

func checkGapFree(t *testing.T, evs []gh.Event) {
	t.Helper()
	checkGapFreeFrom(t, evs, 1)
}

func checkGapFreeFrom(t *testing.T, evs []gh.Event, first int64) {
	t.Helper()
	for i, e := range evs {
		if e.Seq != first+int64(i) {
			t.Fatalf("log is not gap-free: position %d has seq %d", i, e.Seq)
		}
	}
}

// Run runs the kernel's conformance suite over the backend h opens.
func Run(t *testing.T, h Harness) {
	tests := []struct {
		name string
		fn   func(t *testing.T, h Harness)
	}{
		{"EdgeCommitAssignsSeqAndQueuesOneRun", testEdgeCommit},
		{"IdempotentRepeatAndConflict", testIdempotency},
		{"BadInputChangesNothing", testBadInput},
		{"ConcurrentSameKeyOneEvent", testConcurrentSameKey},
		{"ConcurrentCommitsGapFree", testConcurrentGapFree},
		{"ManyClaimersOneLease", testManyClaimersOneLease},
		{"EachRunClaimedOnce", testEachRunClaimedOnce},
		{"TakeoverFencesOldOwner", testTakeover},
		{"RunStartedAtEveryClaim", testRunStarted},
		{"ExpiredLeaseCannotCommit", testExpiredLease},
		{"RenewKeepsLease", testRenew},
		{"RenewRecordsTheStep", testRenewStep},
		{"FencedCommitIdempotent", testFencedIdempotent},
		{"InputMidRunRequeues", testRequeueMidRun},
		{"FailedAttemptsThenFail", testFailedAttempts},
		{"DeadWorkersExhaustAttempts", testTakeoverExhaustion},
		{"Cancel", testCancel},
		{"ReleaseDoesNotCountAnAttempt", testRelease},
		{"CancelClosesPendingGates", testCancelClosesGates},
		{"Ledger", testLedger},
		{"AwaitingApprovalWokenByDecision", testAwaitingApproval},
		{"WaitingNoticeForInputWhileACardIsPending", testWaitingNotice},
		{"WaitingNoticeNamesTheOldestCard", testWaitingNoticeNamesTheOldestCard},
		{"UnansweredInputRequeuesWhenTheRunEnds", testUnansweredRequeues},
		{"AsideWhileACardWaits", testAsideWhileACardWaits},
		{"DecisionBeforeTheSettleGoesOn", testDecisionBeforeTheSettle},
		{"SeveralRunsWaitEachForItsCard", testSeveralRunsWait},
		{"LoadStartsAtCompaction", testLoadFromCompaction},
		{"EdgeAndFencedWritersInterleave", testInterleave},
		{"ComposedTransactionRollsBack", testTxRollback},
		{"WakeUps", testWakeUps},
		{"SurvivesRestart", testRestart},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, h) })
	}
}

func testEdgeCommit(t *testing.T, h Harness) {
	f := newFixture(t, h, kernel.Config{})
	f.session("s1")
	var runID int64
	for i := 1; i <= 3; i++ {
		c := f.input("s1", fmt.Sprintf("r%d", i), fmt.Sprintf("hello %d", i))
		if c.Event.Seq != int64(i) || c.Duplicate {
			t.Fatalf("commit %d: seq %d duplicate %v", i, c.Event.Seq, c.Duplicate)
		}
		if c.RunID == 0 || (runID != 0 && c.RunID != runID) {
			t.Fatalf("commit %d queued run %d, want one run for the session (first %d)", i, c.RunID, runID)
		}
		runID = c.RunID
	}
	evs := f.events("s1")
	checkGapFree(t, evs)
	if len(evs) != 3 || evs[2].Kind != gh.KindUserMessage || evs[2].Key != "r3" {
		t.Fatalf("unexpected log %+v", evs)
	}
	var p map[string]string
	if err := json.Unmarshal(evs[1].Payload, &p); err != nil || p["text"] != "hello 2" {
		t.Fatalf("payload round trip: %s %v", evs[1].Payload, err)
	}
	run, err := f.k.Run(f.ctx, runID)
	if err != nil || run.State != gh.RunQueued || run.MaxAttempts != 3 {
		t.Fatalf("run %+v err %v", run, err)
	}
	sess, _ := f.k.Session(f.ctx, "s1")
	if sess.LastSeq != 3 || sess.LastInputSeq != 3 {
		t.Fatalf("session marks: %+v", sess)
	}
	// The session is also listed.
	list, err := f.k.Sessions(f.ctx, "", 10)
	if err != nil || len(list) != 1 || list[0].ID != "s1" {
		t.Fatalf("sessions: %+v %v", list, err)
	}
}

func testIdempotency(t *testing.T, h Harness) {
	f := newFixture(t, h, kernel.Config{})
	f.session("s1")
	first := f.input("s1", "req-1", "once")
	f.input("s1", "req-2", "other")
	again := f.input("s1", "req-1", "once")
	if !again.Duplicate || again.Event.Seq != first.Event.Seq {
		t.Fatalf("repeat: %+v, first %+v", again, first)
	}
	// Same meaning, other spelling: still the same payload.
	c, err := f.k.EdgeCommit(f.ctx, kernel.EdgeInput{SessionID: "s1", Event: gh.NewEvent{Kind: gh.KindUserMessage, Payload: json.RawMessage(`{ "text" : "once" }`), Key: "req-1"}})
	if err != nil || !c.Duplicate || c.Event.Seq != 1 {
		t.Fatalf("respelled repeat: %+v %v", c, err)
	}
	_, err = f.k.EdgeCommit(f.ctx, kernel.EdgeInput{SessionID: "s1", Event: gh.NewEvent{Kind: gh.KindUserMessage, Payload: msg("changed"), Key: "req-1"}})
	wantCode(t, err, gh.CodeIdempotencyConflict)
	if evs := f.events("s1"); len(evs) != 2 {
		t.Fatalf("log changed by repeats: %d events", len(evs))
	}
	// Keys are per session.
	f.session("s2")
	if c := f.input("s2", "req-1", "once"); c.Duplicate || c.Event.Seq != 1 {
		t.Fatalf("key leaked across sessions: %+v", c)
	}
}

func testBadInput(t *testing.T, h Harness) {
	f := newFixture(t, h, kernel.Config{MaxPayloadBytes: 1024})
	f.session("s1")
	f.input("s1", "ok", "fine")
	big := msg(string(make([]byte, 2000)))
	cases := []struct {
		name string
		in   kernel.EdgeInput
		code gh.Code
	}{
		{"unknown session", kernel.EdgeInput{SessionID: "nope", Event: gh.NewEvent{Kind: gh.KindUserMessage, Payload: msg("x")}}, gh.CodeUnknownSession},
		{"other tenant", kernel.EdgeInput{Tenant: "acme", SessionID: "s1", Event: gh.NewEvent{Kind: gh.KindUserMessage, Payload: msg("x")}}, gh.CodeUnknownSession},
		{"bad session id", kernel.EdgeInput{SessionID: "a/b", Event: gh.NewEvent{Kind: gh.KindUserMessage, Payload: msg("x")}}, gh.CodeInvalid},
		{"unknown kind", kernel.EdgeInput{SessionID: "s1", Event: gh.NewEvent{Kind: "user.mesage", Payload: msg("x")}}, gh.CodeUnknownKind},
		{"fenced kind from the edge", kernel.EdgeInput{SessionID: "s1", Event: gh.NewEvent{Kind: gh.KindAssistantMessage, Payload: msg("x")}}, gh.CodeUnknownKind},
		{"oversize", kernel.EdgeInput{SessionID: "s1", Event: gh.NewEvent{Kind: gh.KindUserMessage, Payload: big}}, gh.CodePayloadTooLarge},
		{"invalid json", kernel.EdgeInput{SessionID: "s1", Event: gh.NewEvent{Kind: gh.KindUserMessage, Payload: json.RawMessage(`{"text":`)}}, gh.CodeInvalidPayload},
		{"not an object", kernel.EdgeInput{SessionID: "s1", Event: gh.NewEvent{Kind: gh.KindUserMessage, Payload: json.RawMessage(`["a"]`)}}, gh.CodeInvalidPayload},
		{"empty", kernel.EdgeInput{SessionID: "s1", Event: gh.NewEvent{Kind: gh.KindUserMessage}}, gh.CodeInvalidPayload},
		{"NUL", kernel.EdgeInput{SessionID: "s1", Event: gh.NewEvent{Kind: gh.KindUserMessage, Payload: json.RawMessage(`{"text":"a\u0000b"}`)}}, gh.CodeInvalidPayload},
		{"key reused", kernel.EdgeInput{SessionID: "s1", Event: gh.NewEvent{Kind: gh.KindUserMessage, Payload: msg("other"), Key: "ok"}}, gh.CodeIdempotencyConflict},
	}
	for _, c := range cases {
		_, err := f.k.EdgeCommit(f.ctx, c.in)
		if gh.ErrorCode(err) != c.code {
			t.Errorf("%s: want %s, got %v", c.name, c.code, err)
		}
	}
	evs := f.events("s1")
	if len(evs) != 1 {
		t.Fatalf("bad input changed the log: %d events", len(evs))
	}
	if _, err := f.k.Events(f.ctx, "nope", 0, 10); !gh.IsCode(err, gh.CodeUnknownSession) {
		t.Fatalf("events of unknown session: %v", err)
	}
	_, _, err := f.k.CreateSession(f.ctx, gh.Session{ID: "s1", Tenant: "acme"})
	wantCode(t, err, gh.CodeUnknownSession)
}

func testConcurrentSameKey(t *testing.T, h Harness) {
	f := newFixture(t, h, kernel.Config{})
	f.session("s1")
	const n = 50
	seqs := make([]int64, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			c, err := f.k.EdgeCommit(f.ctx, kernel.EdgeInput{SessionID: "s1", Event: gh.NewEvent{Kind: gh.KindUserMessage, Payload: msg("same"), Key: "k"}})
			seqs[i], errs[i] = c.Event.Seq, err
		})
	}
	close(start)
	wg.Wait()
	for i := range n {
		if errs[i] != nil || seqs[i] != 1 {
			t.Fatalf("goroutine %d: seq %d err %v", i, seqs[i], errs[i])
		}
	}
	if evs := f.events("s1"); len(evs) != 1 {
		t.Fatalf("%d events for one key", len(evs))
	}
}

func testConcurrentGapFree(t *testing.T, h Harness) {
	f := newFixture(t, h, kernel.Config{})
	f.session("s1")
	const writers, each = 8, 25
	var wg sync.WaitGroup
	var mu sync.Mutex
	seen := map[int64]bool{}
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				c, err := f.k.EdgeCommit(f.ctx, kernel.EdgeInput{SessionID: "s1", Event: gh.NewEvent{Kind: gh.KindUserMessage, Payload: msg("x"), Key: fmt.Sprintf("w%d-%d", w, i)}})
				if err != nil {
					t.Errorf("writer %d: %v", w, err)
					return
				}
				mu.Lock()
				if seen[c.Event.Seq] {
					t.Errorf("seq %d handed out twice", c.Event.Seq)
				}
				seen[c.Event.Seq] = true
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	evs := f.events("s1")
	if len(evs) != writers*each {
		t.Fatalf("%d events, want %d", len(evs), writers*each)
	}
	checkGapFree(t, evs)
}

func testManyClaimersOneLease(t *testing.T, h Harness) {
	f := newFixture(t, h, kernel.Config{})
	f.session("s1")
	f.input("s1", "", "hi")
	const n = 20
	var wg sync.WaitGroup
	var mu sync.Mutex
	var leases []gh.Lease
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			l, ok, err := f.k.Claim(f.ctx, fmt.Sprintf("w%d", i))
			if err != nil {
				t.Errorf("claim: %v", err)
			}
			if ok {
				mu.Lock()
				leases = append(leases, l)
				mu.Unlock()
			}
		})
	}
	close(start)
	wg.Wait()
	if len(leases) != 1 {
		t.Fatalf("%d leases for one run", len(leases))
	}
	l := leases[0]
	if l.Epoch != 1 || l.Attempt != 1 || l.TookOver || !l.PendingInput || l.PrevReadWatermark != 0 {
		t.Fatalf("lease %+v", l)
	}
	if l.Token() != fmt.Sprintf("%s@1", l.Owner) {
		t.Fatalf("token %s", l.Token())
	}
}

func testEachRunClaimedOnce(t *testing.T, h Harness) {
	f := newFixture(t, h, kernel.Config{})
	const sessions = 30
	for i := range sessions {
		id := fmt.Sprintf("s%d", i)
		f.session(id)
		f.input(id, "", "hi")
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	claimed := map[int64]string{}
	for w := range 6 {
		wg.Go(func() {
			for {
				l, ok, err := f.k.Claim(f.ctx, fmt.Sprintf("w%d", w))
				if err != nil {
					t.Errorf("claim: %v", err)
					return
				}
				if !ok {
					return
				}
				mu.Lock()
				if prev, dup := claimed[l.RunID]; dup {
					t.Errorf("run %d claimed by %s and %s", l.RunID, prev, l.Owner)
				}
				claimed[l.RunID] = l.Owner
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(claimed) != sessions {
		t.Fatalf("%d runs claimed, want %d", len(claimed), sessions)
	}
}

func testTakeover(t *testing.T, h Harness) {
	f := newFixture(t, h, kernel.Config{})
	f.session("s1")
	f.input("s1", "", "hi")
	a := f.claim("alpha")
	if _, err := f.assistant(a, "u1-a1", "first"); err != nil {
		t.Fatalf("commit under a fresh lease: %v", err)
	}
	f.noClaim() // a live lease is not claimable
	f.clock.Advance(ttl + time.Second)
	b := f.claim("beta")
	if !b.TookOver || b.Epoch <= a.Epoch || b.RunID != a.RunID || b.Attempt != 2 {
		t.Fatalf("takeover lease %+v after %+v", b, a)
	}
	_, err := f.assistant(a, "u1-a2", "late")
	wantCode(t, err, gh.CodeStaleEpoch)
	_, err = f.k.Renew(f.ctx, a)
	wantCode(t, err, gh.CodeStaleEpoch)
	_, err = f.k.Finish(f.ctx, a, kernel.Settle{Outcome: gh.OutcomeDone})
	wantCode(t, err, gh.CodeStaleEpoch)
	err = f.k.RecordRead(f.ctx, a, 5)
	wantCode(t, err, gh.CodeStaleEpoch)
	if _, err := f.assistant(b, "u1-a2", "mine"); err != nil {
		t.Fatalf("new owner commit: %v", err)
	}
	evs := f.said("s1")
	if len(evs) != 3 {
		t.Fatalf("want input + 2 answers, got %d", len(evs))
	}
	var p map[string]string
	_ = json.Unmarshal(evs[2].Payload, &p)
	if p["text"] != "mine" {
		t.Fatalf("the stale owner's write landed: %s", evs[2].Payload)
	}
}

// Every claim commits its run.started, in the claim's transaction: the
// log alone shows where each attempt began, a takeover included.
func testRunStarted(t *testing.T, h Harness) {
	f := newFixture(t, h, kernel.Config{})
	f.session("s1")
	f.input("s1", "", "hi")
	sub := f.k.Subscribe("s1")
	defer sub.Close()
	a := f.claim("alpha")
	select {
	case <-sub.Committed:
	case <-time.After(5 * time.Second):
		t.Fatal("the claim's run.started woke no subscriber")
	}
	started := func(want int) []gh.RunStarted {
		t.Helper()
		var out []gh.RunStarted
		for _, e := range f.events("s1") {
			if e.Kind != gh.KindRunStarted {
				continue
			}
			var rs gh.RunStarted
			if err := json.Unmarshal(e.Payload, &rs); err != nil {
				t.Fatal(err)
			}
			out = append(out, rs)
		}
		if len(out) != want {
			t.Fatalf("%d run.started, want %d: %+v", len(out), want, out)
		}
		return out
	}
	first := started(1)[0]
	evs := f.events("s1")
	if evs[1].Kind != gh.KindRunStarted || evs[1].Key != kernel.RunStartedKey(a.Epoch) || a.ReadWatermark != evs[1].Seq {
		t.Fatalf("the claim's run.started must follow the input, keyed by the epoch, within the watermark: %+v lease %+v", evs, a)
	}
	if first.RunID != a.RunID || first.Attempt != 1 || first.TookOver {
		t.Fatalf("run.started %+v for lease %+v", first, a)
	}
	f.clock.Advance(ttl + time.Second)
	b := f.claim("beta")
	second := started(2)[1]
	if second.RunID != a.RunID || second.Attempt != 2 || !second.TookOver || second.Reason == "" {
		t.Fatalf("the takeover's run.started %+v", second)
	}
	if b.ReadWatermark != f.events("s1")[2].Seq {
		t.Fatalf("the takeover reads up to its own run.started: %+v", b)
	}
	// Nothing to claim, nothing committed.
	f.noClaim()
	started(2)
}

func testExpiredLease(t *testing.T, h Harness) {
	f := newFixture(t, h, kernel.Config{})
	f.session("s1")
	f.input("s1", "", "hi")
	a := f.claim("alpha")
	f.clock.Advance(ttl)
	_, err := f.assistant(a, "", "too late")
	wantCode(t, err, gh.CodeLeaseLost)
	_, err = f.k.Renew(f.ctx, a)
	wantCode(t, err, gh.CodeLeaseLost)
	if evs := f.said("s1"); len(evs) != 1 {
		t.Fatalf("expired lease wrote: %d events", len(evs))
	}
	// A lease of another session's run is refused, whatever it claims.
	f.session("s2")
	forged := a
	forged.SessionID = "s2"
	_, err = f.assistant(forged, "", "x")
	wantCode(t, err, gh.CodeLeaseLost)
}

func testRenew(t *testing.T, h Harness) {
	f := newFixture(t, h, kernel.Config{})
	f.session("s1")
	f.input("s1", "", "hi")
	a := f.claim("alpha")
	for range 4 {
		f.clock.Advance(ttl * 2 / 3)
		var err error
		a, err = f.k.Renew(f.ctx, a)
		if err != nil {
			t.Fatalf("renew: %v", err)
		}
	}
	if _, err := f.assistant(a, "", "still mine"); err != nil {
		t.Fatalf("commit after renewals: %v", err)
	}
	f.noClaim()
}

// A claim starts the run's step clock; a renewal records the attempt's
// current step and when it began, and one with no step keeps it: a step
// that does not change across renewals is a turn that makes no progress.
func testRenewStep(t *testing.T, h Harness) {
	f := newFixture(t, h, kernel.Config{})
	f.session("s1")
	f.input("s1", "", "hi")
	a := f.claim("alpha")
	run, err := f.k.Run(f.ctx, a.RunID)
	if err != nil || run.Step != "start" || !run.StepStarted.Equal(f.clock.Now().UTC().Truncate(time.Microsecond)) {
		t.Fatalf("after the claim: step %q since %v (%v)", run.Step, run.StepStarted, err)
	}
	f.clock.Advance(time.Second)
	began := f.clock.Now().UTC().Truncate(time.Microsecond)
	f.clock.Advance(ttl * 2 / 3)
	if a, err = f.k.RenewStep(f.ctx, a, kernel.Step{Name: "tool:web_fetch", Started: began}); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(ttl * 2 / 3)
	if _, err = f.k.Renew(f.ctx, a); err != nil {
		t.Fatal(err)
	}
	run, err = f.k.Run(f.ctx, a.RunID)
	if err != nil || run.Step != "tool:web_fetch" || !run.StepStarted.Equal(began) {
		t.Fatalf("after the renewals: step %q since %v, want tool:web_fetch since %v (%v)", run.Step, run.StepStarted, began, err)
	}
}

func testFencedIdempotent(t *testing.T, h Harness) {
	f := newFixture(t, h, kernel.Config{})
	f.session("s1")
	f.input("s1", "", "hi")
	a := f.claim("alpha")
	c1, err := f.assistant(a, "u1-a1", "answer")
	if err != nil {
		t.Fatal(err)
	}
	// The attempt dies; its successor derives the same generationId.
	f.clock.Advance(ttl + time.Second)
	b := f.claim("beta")
	c2, err := f.assistant(b, "u1-a1", "answer")
	if err != nil || !c2[0].Duplicate || c2[0].Event.Seq != c1[0].Event.Seq {
		t.Fatalf("retry of a generation: %+v %v", c2, err)
	}
	_, err = f.assistant(b, "u1-a1", "a different answer")
	wantCode(t, err, gh.CodeIdempotencyConflict)
	// Edge kinds cannot be written under a lease.
	_, err = f.k.Commit(f.ctx, b, gh.NewEvent{Kind: gh.KindUserMessage, Payload: msg("x")})
	wantCode(t, err, gh.CodeUnknownKind)
	// A batch is all or nothing: a bad second event keeps the first out.
	_, err = f.k.Commit(f.ctx, b, gh.NewEvent{Kind: gh.KindToolResult, Payload: msg("ok"), Key: "tc1"}, gh.NewEvent{Kind: "nope", Payload: msg("x")})
	wantCode(t, err, gh.CodeUnknownKind)
	if evs := f.said("s1"); len(evs) != 2 {
		t.Fatalf("want 2 events, got %d", len(evs))
	}
}

func testRequeueMidRun(t *testing.T, h Harness) {
	f := newFixture(t, h, kernel.Config{})
	f.session("s1")
	f.input("s1", "", "first")
	a := f.claim("alpha")
	// The claim read up to its own run.started (seq 2).
	if a.ReadWatermark != 2 {
		t.Fatalf("claim did not record the read watermark: %+v", a)
	}
	if err := f.k.RecordRead(f.ctx, a, 1); err != nil {
		t.Fatal(err)
	}
	c := f.input("s1", "", "second, while running")
	if c.RunID != a.RunID {
		t.Fatalf("input mid-run queued another run %d (active %d)", c.RunID, a.RunID)
	}
	f.noClaim()
	if _, err := f.assistant(a, "u1-a1", "answer to first"); err != nil {
		t.Fatal(err)
	}
	s, err := f.k.Finish(f.ctx, a, kernel.Settle{Outcome: gh.OutcomeDone})
	if err != nil || !s.Requeued || s.State != gh.RunDone || s.RunID == a.RunID {
		t.Fatalf("finish with unread input: %+v %v", s, err)
	}
	b := f.claim("beta")
	if b.RunID != s.RunID || !b.PendingInput || b.PrevReadWatermark != 2 || b.TookOver {
		t.Fatalf("next lease %+v", b)
	}
	if err := f.k.RecordRead(f.ctx, b, 3); err != nil {
		t.Fatal(err)
	}
	s, err = f.k.Finish(f.ctx, b, kernel.Settle{Outcome: gh.OutcomeDone, Events: []gh.NewEvent{{Kind: gh.KindRunFinished, Payload: json.RawMessage(`{"status":"done"}`)}}})
	if err != nil || s.Requeued {
		t.Fatalf("finish with everything read: %+v %v", s, err)
	}
	f.noClaim()
	if evs := f.events("s1"); evs[len(evs)-1].Kind != gh.KindRunFinished {
		t.Fatalf("run.finished not committed with the settle: %+v", evs[len(evs)-1])
	}
	// A stale settle commits neither its events nor its state.
	_, err = f.k.Finish(f.ctx, a, kernel.Settle{Outcome: gh.OutcomeDone, Events: []gh.NewEvent{{Kind: gh.KindRunFinished, Payload: json.RawMessage(`{"status":"late"}`)}}})
	wantCode(t, err, gh.CodeLeaseLost)
	if evs := f.said("s1"); len(evs) != 4 {
		t.Fatalf("stale settle wrote: %d events", len(evs))
	}
	// A settled lease writes nothing more.
	_, err = f.assistant(b, "", "after settle")
	wantCode(t, err, gh.CodeLeaseLost)
}

func testFailedAttempts(t *testing.T, h Harness) {
	f := newFixture(t, h, kernel.Config{MaxAttempts: 3, RetryBackoff: time.Second})
	f.session("s1")
	f.input("s1", "", "hi")
	var l gh.Lease
	for attempt := 1; attempt <= 3; attempt++ {
		l = f.claim("w")
		if l.Attempt != attempt {
			t.Fatalf("attempt %d reported as %d", attempt, l.Attempt)
		}
		if err := f.k.RecordRead(f.ctx, l, 1); err != nil {
			t.Fatal(err)
		}
		s, err := f.k.Finish(f.ctx, l, kernel.Settle{Outcome: gh.OutcomeFailed, Reason: fmt.Sprintf("model down (%d)", attempt)})
		if err != nil {
			t.Fatal(err)
		}
		if attempt < 3 {
			if !s.Requeued || s.State != gh.RunQueued {
				t.Fatalf("attempt %d not retried: %+v", attempt, s)
			}
			f.noClaim() // backoff not over yet
			f.clock.Advance(time.Duration(attempt) * time.Second)
		} else if s.State != gh.RunFailed || s.Requeued {
			t.Fatalf("last attempt: %+v", s)
		}
	}
	run, _ := f.k.Run(f.ctx, l.RunID)
	if run.State != gh.RunFailed || run.Reason != "model down (3)" || run.Attempts != 3 {
		t.Fatalf("failed run %+v", run)
	}
	f.noClaim()
	// A new message gets a new run.
	if c := f.input("s1", "", "again"); c.RunID == run.ID {
		t.Fatal("new input reused the failed run")
	}
	f.claim("w")
}

func testTakeoverExhaustion(t *testing.T, h Harness) {
	f := newFixture(t, h, kernel.Config{MaxAttempts: 2})
	f.session("s1")
	f.input("s1", "", "poison")
	a := f.claim("w1")
	f.clock.Advance(ttl + time.Second)
	b := f.claim("w2")
	if !b.TookOver || b.Attempt != 2 {
		t.Fatalf("lease %+v", b)
	}
	f.input("s1", "", "are you there?") // arrives while the second worker hangs
	f.clock.Advance(ttl + time.Second)
	next := f.claim("w3")
	run, _ := f.k.Run(f.ctx, a.RunID)
	if run.State != gh.RunFailed || run.Reason == "" {
		t.Fatalf("run after workers died twice: %+v", run)
	}
	// The user sees the failure, and the later message gets its own run.
	if e, ok, _ := f.st.EventByKey(f.ctx, "s1", fmt.Sprintf("run%d-exhausted", run.ID)); !ok || e.Kind != gh.KindRunFinished {
		t.Fatal("an exhausted run left nothing in the log")
	}
	if next.RunID == run.ID || next.TookOver {
		t.Fatalf("lease after exhaustion %+v", next)
	}
}

func testCancel(t *testing.T, h Harness) {
	f := newFixture(t, h, kernel.Config{})
	f.session("s1")
	f.input("s1", "", "hi")
	run, err := f.k.Cancel(f.ctx, "s1", "user pressed stop")
	if err != nil || run.State != gh.RunCancelled {
		t.Fatalf("cancel queued: %+v %v", run, err)
	}
	f.noClaim()
	_, err = f.k.Cancel(f.ctx, "s1", "")
	wantCode(t, err, gh.CodeConflict)
	_, err = f.k.Cancel(f.ctx, "nope", "")
	wantCode(t, err, gh.CodeUnknownSession)

	f.input("s1", "", "again")
	l := f.claim("w")
	if _, err := f.k.Cancel(f.ctx, "s1", "stop"); err != nil {
		t.Fatal(err)
	}
	f.input("s1", "", "more input while cancelling")
	l, err = f.k.Renew(f.ctx, l)
	if err != nil || !l.CancelRequested {
		t.Fatalf("renew after cancel: %+v %v", l, err)
	}
	s, err := f.k.Finish(f.ctx, l, kernel.Settle{Outcome: gh.OutcomeDone})
	if err != nil || s.State != gh.RunCancelled {
		t.Fatalf("finish after cancel: %+v %v", s, err)
	}
	// The cancelled turn ends, but the message typed after pressing stop
	// is not lost: it gets a run of its own.
	if !s.Requeued || f.claim("w2").RunID != s.RunID {
		t.Fatalf("input after the cancel was stranded: %+v", s)
	}
}

func testCancelClosesGates(t *testing.T, h Harness) {
	f := newFixture(t, h, kernel.Config{})
	// Without a gates service a cancel cannot leave a pending gate open:
	// it refuses (below); the service closes them (kernel.GateCloser).
	bare := kernel.New(f.st, kernel.Config{})
	f.session("s1")
	f.input("s1", "", "email Sara")
	l := f.claim("w")
	now := f.clock.Now()
	err := f.st.InTx(f.ctx, func(ctx context.Context, tx store.Tx) error {
		if _, err := f.k.CommitTx(ctx, tx, l, gh.NewEvent{Kind: gh.KindGateOpened, Payload: json.RawMessage(`{"gateId":"g1"}`), Key: "gateopen:c1:1"}); err != nil {
			return err
		}
		_, err := tx.InsertGate(ctx, gh.Gate{ID: "g1", SessionID: "s1", RunID: l.RunID, ToolCallID: "c1", Tool: "email_send", Arguments: json.RawMessage(`{}`), Kind: gh.GateKindApproval, ExpiresAt: now.Add(time.Hour), Created: now})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.k.Finish(f.ctx, l, kernel.Settle{Outcome: gh.OutcomeAwaitingApproval}); err != nil {
		t.Fatal(err)
	}
	if _, err := bare.Cancel(f.ctx, "s1", "stop"); !gh.IsCode(err, gh.CodeInternal) {
		t.Fatalf("a cancel with no gates service to close g1: %v", err)
	}
	if g, _ := f.st.GetGate(f.ctx, "g1"); g.State != gh.GatePending {
		t.Fatalf("the refused cancel decided the gate: %+v", g)
	}
	gates.NewService(gates.Config{Registry: gates.NewSQL(f.st, nil), Kernel: f.k, Store: f.st})
	if _, err := f.k.Cancel(f.ctx, "s1", "stop"); err != nil {
		t.Fatal(err)
	}
	g, err := f.st.GetGate(f.ctx, "g1")
	if err != nil || g.State != gh.GateDenied || g.DecidedBy != "cancel" || !g.Committed {
		t.Fatalf("gate after cancel: %+v %v", g, err)
	}
	if e, ok, _ := f.st.EventByKey(f.ctx, "s1", "gate:g1"); !ok || e.Kind != gh.KindGateDecided {
		t.Fatal("the cancel's decision is not in the log")
	}
	// A press afterwards cannot approve the cancelled turn's effect.
	if _, won, _ := f.st.DecideGate(f.ctx, store.GateDecision{ID: "g1", Decision: gh.Decision{State: gh.GateApproved, By: "ana", Surface: "web"}, Now: now}); won {
		t.Fatal("a press after the cancel won")
	}
}

func testAwaitingApproval(t *testing.T, h Harness) {
	f := newFixture(t, h, kernel.Config{})
	f.session("s1")
	f.input("s1", "", "email Sara")
	l := f.claim("w")
	if err := f.k.RecordRead(f.ctx, l, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := f.k.Commit(f.ctx, l, gh.NewEvent{Kind: gh.KindGateOpened, Payload: json.RawMessage(`{"gateId":"g1"}`)}); err != nil {
		t.Fatal(err)
	}
	s, err := f.k.Finish(f.ctx, l, kernel.Settle{Outcome: gh.OutcomeAwaitingApproval, Reason: "gate g1"})
	if err != nil || s.State != gh.RunAwaitingApproval || s.Requeued {
		t.Fatalf("settle awaiting: %+v %v", s, err)
	}
	// Waiting holds no lock and nothing is claimable, however long.
	f.clock.Advance(time.Hour)
	f.noClaim()
	c, err := f.k.EdgeCommit(f.ctx, kernel.EdgeInput{SessionID: "s1", Event: gh.NewEvent{Kind: gh.KindGateDecided, Payload: json.RawMessage(`{"gateId":"g1","decision":"approve"}`), Key: "gate:g1"}})
	if err != nil || c.RunID != l.RunID {
		t.Fatalf("decision: %+v %v", c, err)
	}
	b := f.claim("w2")
	// The decision resumes its run; it is not input a turn answers.
	if b.RunID != l.RunID || b.Attempt != 1 || b.TookOver || b.PendingInput {
		t.Fatalf("resumed lease %+v", b)
	}
}

func testLoadFromCompaction(t *testing.T, h Harness) {
	f := newFixture(t, h, kernel.Config{LoadPageSize: 3})
	f.session("s1")
	for i := range 10 {
		f.input("s1", "", fmt.Sprintf("m%d", i))
	}
	evs, err := f.k.Load(f.ctx, "s1")
	if err != nil || len(evs) != 10 {
		t.Fatalf("load without compaction: %d %v", len(evs), err)
	}
	checkGapFree(t, evs)
	l := f.claim("w")
	if _, err := f.k.Commit(f.ctx, l, gh.NewEvent{Kind: gh.KindCompaction, Payload: json.RawMessage(`{"summary":"ten messages","firstKept":9,"summarized":8}`)}); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		if _, err := f.assistant(l, "", fmt.Sprintf("a%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	evs, err = f.k.Load(f.ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	// Kept verbatim: 9 and 10, the claim's run.started (11); then the
	// compaction (12) and what follows.
	if len(evs) != 8 || evs[0].Seq != 9 || evs[2].Kind != gh.KindRunStarted || evs[3].Kind != gh.KindCompaction || evs[3].Seq != 12 || evs[7].Seq != 16 {
		t.Fatalf("load after compaction: %+v", evs)
	}
	checkGapFreeFrom(t, evs, 9)
	// A later compaction that keeps nothing starts the load at itself.
	if _, err := f.k.Commit(f.ctx, l, gh.NewEvent{Kind: gh.KindCompaction, Payload: json.RawMessage(`{"summary":"all of it","summarized":14}`)}); err != nil {
		t.Fatal(err)
	}
	if evs, _ = f.k.Load(f.ctx, "s1"); len(evs) != 1 || evs[0].Seq != 17 {
		t.Fatalf("load after second compaction: %+v", evs)
	}
	all, _ := f.k.Events(f.ctx, "s1", 0, 100)
	if len(all) != 17 {
		t.Fatalf("compaction lost history: %d events", len(all))
	}
	page, _ := f.k.Events(f.ctx, "s1", 12, 2)
	if len(page) != 2 || page[0].Seq != 13 {
		t.Fatalf("page after 12: %+v", page)
	}
	// The next attempt's lease carries the latest compaction, and loading
	// from it gives what Load gives, without the session row.
	if _, err := f.k.Finish(f.ctx, l, kernel.Settle{Outcome: gh.OutcomeDone, ReadWatermark: 17}); err != nil {
		t.Fatal(err)
	}
	f.input("s1", "", "after the compactions")
	next := f.claim("w2")
	if next.CompactionSeq != 17 {
		t.Fatalf("the lease's compaction seq %d, want 17", next.CompactionSeq)
	}
	want, _ := f.k.Load(f.ctx, "s1")
	got, err := f.k.LoadLeased(f.ctx, next)
	if err != nil || len(got) != len(want) || got[0].Seq != want[0].Seq || got[len(got)-1].Seq != want[len(want)-1].Seq {
		t.Fatalf("LoadLeased %d events from %v, Load %d from %v (%v)", len(got), got, len(want), want, err)
	}
}

func testInterleave(t *testing.T, h Harness) {
	f := newFixture(t, h, kernel.Config{})
	f.session("s1")
	f.input("s1", "", "start")
	l := f.claim("w")
	var wg sync.WaitGroup
	const n = 40
	wg.Go(func() {
		for i := range n {
			if _, err := f.k.EdgeCommit(f.ctx, kernel.EdgeInput{SessionID: "s1", Event: gh.NewEvent{Kind: gh.KindUserMessage, Payload: msg("u"), Key: fmt.Sprintf("u%d", i)}}); err != nil {
				t.Errorf("edge: %v", err)
				return
			}
		}
	})
	wg.Go(func() {
		for i := range n {
			if _, err := f.assistant(l, fmt.Sprintf("a%d", i), "a"); err != nil {
				t.Errorf("fenced: %v", err)
				return
			}
		}
	})
	wg.Go(func() {
		for range n / 4 {
			if err := f.k.RecordRead(f.ctx, l, 1); err != nil {
				t.Errorf("record read: %v", err)
				return
			}
			if _, err := f.k.Renew(f.ctx, l); err != nil {
				t.Errorf("renew: %v", err)
				return
			}
		}
	})
	wg.Wait()
	evs := f.events("s1") // the input, the claim's run.started, then 2n
	if len(evs) != 2+2*n {
		t.Fatalf("%d events, want %d", len(evs), 2+2*n)
	}
	checkGapFree(t, evs)
	s, err := f.k.Finish(f.ctx, l, kernel.Settle{Outcome: gh.OutcomeDone})
	if err != nil || !s.Requeued {
		t.Fatalf("input arrived above the watermark but finish did not requeue: %+v %v", s, err)
	}
}

func testTxRollback(t *testing.T, h Harness) {
	f := newFixture(t, h, kernel.Config{})
	f.session("s1")
	boom := fmt.Errorf("receive-log write failed")
	err := f.st.InTx(f.ctx, func(ctx context.Context, tx store.Tx) error {
		if _, err := f.k.EdgeCommitTx(ctx, tx, kernel.EdgeInput{SessionID: "s1", Event: gh.NewEvent{Kind: gh.KindUserMessage, Payload: msg("x"), Key: "k"}}); err != nil {
			return err
		}
		return boom
	})
	if err != boom {
		t.Fatalf("InTx returned %v", err)
	}
	if evs := f.events("s1"); len(evs) != 0 {
		t.Fatal("a rolled-back edge commit left an event")
	}
	f.noClaim()
	// Both commits in one transaction land together.
	f.session("s2")
	err = f.st.InTx(f.ctx, func(ctx context.Context, tx store.Tx) error {
		for _, s := range []string{"s1", "s2"} {
			if _, err := f.k.EdgeCommitTx(ctx, tx, kernel.EdgeInput{SessionID: s, Event: gh.NewEvent{Kind: gh.KindUserMessage, Payload: msg("x"), Key: "k"}}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil || len(f.events("s1")) != 1 || len(f.events("s2")) != 1 {
		t.Fatalf("composed commit: %v", err)
	}
}

func testWakeUps(t *testing.T, h Harness) {
	f := newFixture(t, h, kernel.Config{})
	f.session("s1")
	wake := f.k.WakeC()
	f.input("s1", "", "hi")
	select {
	case <-wake:
	case <-time.After(10 * time.Second):
		t.Fatal("no local wake-up after an edge commit queued a run")
	}
	if h.Peer == nil {
		return
	}
	peer := h.Peer(t, f.st)
	t.Cleanup(func() { peer.Close() })
	pk := kernel.New(peer, kernel.Config{Now: f.clock.Now})
	f.session("s2")
	// The listener may still be connecting: commit until the peer hears.
	deadline := time.After(20 * time.Second)
	for i := 0; ; i++ {
		pwake := pk.WakeC()
		f.input("s2", "", fmt.Sprintf("hi %d", i))
		select {
		case <-pwake:
			return
		case <-time.After(500 * time.Millisecond):
			// The run was already queued by the first commit; cancel
			// it so the next commit queues a new one and notifies.
			if _, err := f.k.Cancel(f.ctx, "s2", ""); err != nil {
				t.Fatal(err)
			}
		case <-deadline:
			t.Fatal("the other replica was never woken")
		}
	}
}

func testRestart(t *testing.T, h Harness) {
	f := newFixture(t, h, kernel.Config{})
	f.session("s1")
	f.input("s1", "r1", "before restart")
	l := f.claim("w")
	if err := f.k.RecordRead(f.ctx, l, 1); err != nil {
		t.Fatal(err)
	}
	st := h.Reopen(t, f.st)
	t.Cleanup(func() { st.Close() })
	k := kernel.New(st, kernel.Config{Now: f.clock.Now, LeaseTTL: ttl})
	c, err := k.EdgeCommit(f.ctx, kernel.EdgeInput{SessionID: "s1", Event: gh.NewEvent{Kind: gh.KindUserMessage, Payload: msg("before restart"), Key: "r1"}})
	if err != nil || !c.Duplicate || c.Event.Seq != 1 {
		t.Fatalf("repeat after restart: %+v %v", c, err)
	}
	f.clock.Advance(ttl + time.Second)
	b, ok, err := k.Claim(f.ctx, "w2")
	// The first claim's watermark (its run.started, seq 2) survived.
	if err != nil || !ok || !b.TookOver || b.PrevReadWatermark != 2 {
		t.Fatalf("claim after restart: %+v %v %v", b, ok, err)
	}
}

func testRelease(t *testing.T, h Harness) {
	f := newFixture(t, h, kernel.Config{MaxAttempts: 1})
	f.session("s1")
	f.input("s1", "", "hi")
	a := f.claim("w1")
	if err := f.k.Release(f.ctx, a); err != nil {
		t.Fatal(err)
	}
	_, err := f.assistant(a, "", "after release")
	wantCode(t, err, gh.CodeLeaseLost)
	b := f.claim("w2")
	if b.Attempt != 1 || b.Epoch <= a.Epoch {
		t.Fatalf("lease after release: %+v", b)
	}
}

func testLedger(t *testing.T, h Harness) {
	f := newFixture(t, h, kernel.Config{})
	for i, row := range []gh.LedgerRow{
		{SessionID: "s1", RunID: 7, UserKey: "ana", Provider: "openai", Model: "m", Attempt: 1, InputTokens: 10, OutputTokens: 0, DurationMs: 5, Error: "model-timeout"},
		{SessionID: "s1", RunID: 7, UserKey: "ana", Provider: "openai", Model: "m", Attempt: 2, InputTokens: 10, OutputTokens: 20, CostUSD: 0.5, DurationMs: 9},
		{SessionID: "s2", RunID: 8, Provider: "anthropic", Model: "x", Attempt: 1},
	} {
		if err := f.k.RecordCall(f.ctx, row); err != nil {
			t.Fatalf("row %d: %v", i, err)
		}
	}
	rows, err := f.k.Ledger(f.ctx, "s1", 0)
	if err != nil || len(rows) != 2 {
		t.Fatalf("ledger: %+v %v", rows, err)
	}
	if rows[0].Error != "model-timeout" || rows[1].CostUSD != 0.5 || rows[1].OutputTokens != 20 || rows[1].Created.IsZero() || rows[1].UserKey != "ana" {
		t.Fatalf("ledger rows: %+v", rows)
	}
	byUser, err := f.k.Usage(f.ctx, "user", f.clock.Now().Add(-time.Hour), "")
	if err != nil || len(byUser) != 2 || byUser[1].Key != "ana" || byUser[1].Calls != 2 || byUser[1].CostUSD != 0.5 || byUser[1].OutputTokens != 20 {
		t.Fatalf("usage by user: %+v %v", byUser, err)
	}
	byModel, err := f.k.Usage(f.ctx, "model", f.clock.Now().Add(-time.Hour), "ana")
	if err != nil || len(byModel) != 1 || byModel[0].Key != "openai:m" {
		t.Fatalf("usage by model: %+v %v", byModel, err)
	}
	if later, _ := f.k.Usage(f.ctx, "user", f.clock.Now().Add(time.Hour), ""); len(later) != 0 {
		t.Fatalf("usage since later: %+v", later)
	}
	// A run's cost sums its rows only (both attempts of run 7).
	if used, cost, err := f.k.RunCost(f.ctx, 7); err != nil || used.InputTokens != 20 || used.OutputTokens != 20 || cost != 0.5 {
		t.Fatalf("run cost: %+v %v %v", used, cost, err)
	}
	if used, cost, err := f.k.RunCost(f.ctx, 99); err != nil || used.InputTokens != 0 || cost != 0 {
		t.Fatalf("cost of a run without calls: %+v %v %v", used, cost, err)
	}
}
