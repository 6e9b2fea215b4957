package kerneltest

import (
	"encoding/json"
	"fmt"
	"testing"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/kernel"
)

// A run awaiting approval holds no lock (#30): these cases hold the rules
// of runs that wait beside the one that runs.

// decide commits the decision on gate id of run, as the gates service
// logs it (gh.GateDecidedEvent carries the run).
func (f *fixture) decide(session, id string, run int64) kernel.Committed {
	f.t.Helper()
	ev := gh.GateDecidedEvent(gh.Gate{ID: id, RunID: run, ToolCallID: "call-" + id, Tool: "email_send", State: gh.GateApproved, DecidedBy: "ana", Surface: "web"})
	c, err := f.k.EdgeCommit(f.ctx, kernel.EdgeInput{SessionID: session, Event: ev})
	if err != nil {
		f.t.Fatalf("decide %s: %v", id, err)
	}
	return c
}

// pause commits a gate.opened under l and settles it awaiting approval.
func (f *fixture) pause(l gh.Lease, id string) kernel.Settled {
	f.t.Helper()
	payload, _ := json.Marshal(gh.GateOpened{GateID: id, ToolCallID: "call-" + id, Tool: "email_send", Kind: gh.GateKindApproval})
	if _, err := f.k.Commit(f.ctx, l, gh.NewEvent{Kind: gh.KindGateOpened, Payload: payload, Key: gh.GateOpenedKey("call-"+id, 1)}); err != nil {
		f.t.Fatal(err)
	}
	s, err := f.k.Finish(f.ctx, l, kernel.Settle{Outcome: gh.OutcomeAwaitingApproval})
	if err != nil {
		f.t.Fatal(err)
	}
	return s
}

func (f *fixture) run(id int64) gh.Run {
	f.t.Helper()
	r, err := f.st.GetRun(f.ctx, id)
	if err != nil {
		f.t.Fatal(err)
	}
	return r
}

// A message under a pending card gets a run of its own at once, the
// waiting run is not claimed for it, and the decision that comes while
// that run runs resumes the waiting run when it settles — once.
func testAsideWhileACardWaits(t *testing.T, h Harness) {
	f := newFixture(t, h, kernel.Config{})
	f.session("s1")
	f.input("s1", "", "email Sara")
	paused := f.claim("w")
	if s := f.pause(paused, "g1"); s.State != gh.RunAwaitingApproval || s.Requeued {
		t.Fatalf("settle awaiting: %+v", s)
	}
	f.noClaim()
	c := f.input("s1", "", "what is the capital of France?")
	if c.RunID == 0 || c.RunID == paused.RunID {
		t.Fatalf("the message under the card queued run %d; want a new run beside waiting run %d", c.RunID, paused.RunID)
	}
	aside := f.claim("w")
	if aside.RunID != c.RunID {
		t.Fatalf("claimed run %d; want the aside's run %d", aside.RunID, c.RunID)
	}
	if r := f.run(paused.RunID); r.State != gh.RunAwaitingApproval {
		t.Fatalf("waiting run while the aside runs: %s", r.State)
	}
	// Only one run of the session runs at a time: the decision that
	// comes now flags the waiting run, which is not claimable yet.
	if d := f.decide("s1", "g1", paused.RunID); d.RunID != paused.RunID {
		t.Fatalf("decision resumed run %d; want %d", d.RunID, paused.RunID)
	}
	if r := f.run(paused.RunID); r.State != gh.RunAwaitingApproval || !r.ResumeRequested {
		t.Fatalf("waiting run after a decision while the session is busy: %+v", r)
	}
	f.noClaim()
	// A second message while the aside runs is answered after it, by
	// the queue as always.
	if again := f.input("s1", "", "and of Spain?"); again.RunID != aside.RunID {
		t.Fatalf("a message while the aside runs queued run %d; want the running %d", again.RunID, aside.RunID)
	}
	s, err := f.k.Finish(f.ctx, aside, kernel.Settle{Outcome: gh.OutcomeDone})
	if err != nil || s.State != gh.RunDone || !s.Requeued || s.RunID != paused.RunID {
		t.Fatalf("aside settle: %+v %v; want the waiting run %d queued", s, err, paused.RunID)
	}
	resumed := f.claim("w")
	if resumed.RunID != paused.RunID || resumed.Attempt != 1 {
		t.Fatalf("resumed lease %+v; want run %d, attempt 1", resumed, paused.RunID)
	}
	f.noClaim()
	// The resumed turn goes on; the message it found unread gets its own
	// run when it settles.
	s, err = f.k.Finish(f.ctx, resumed, kernel.Settle{Outcome: gh.OutcomeDone, Unanswered: true})
	if err != nil || !s.Requeued || s.RunID == paused.RunID || s.RunID == aside.RunID {
		t.Fatalf("resumed settle: %+v %v", s, err)
	}
	if r := f.run(paused.RunID); r.State != gh.RunDone || r.ResumeRequested {
		t.Fatalf("resumed run after its settle: %+v", r)
	}
	last := f.claim("w")
	if _, err := f.k.Finish(f.ctx, last, kernel.Settle{Outcome: gh.OutcomeDone}); err != nil {
		t.Fatal(err)
	}
	f.noClaim()
}

// A decision that comes while the run that opened the card still runs
// (before it settled awaiting) makes it settle queued again: it goes on
// at once, and no other run is made for it.
func testDecisionBeforeTheSettle(t *testing.T, h Harness) {
	f := newFixture(t, h, kernel.Config{})
	f.session("s1")
	f.input("s1", "", "email Sara")
	l := f.claim("w")
	payload, _ := json.Marshal(gh.GateOpened{GateID: "g1", ToolCallID: "call-g1", Tool: "email_send", Kind: gh.GateKindApproval})
	if _, err := f.k.Commit(f.ctx, l, gh.NewEvent{Kind: gh.KindGateOpened, Payload: payload, Key: gh.GateOpenedKey("call-g1", 1)}); err != nil {
		t.Fatal(err)
	}
	if d := f.decide("s1", "g1", l.RunID); d.RunID != l.RunID {
		t.Fatalf("decision resumed run %d; want %d", d.RunID, l.RunID)
	}
	s, err := f.k.Finish(f.ctx, l, kernel.Settle{Outcome: gh.OutcomeAwaitingApproval})
	if err != nil || s.State != gh.RunQueued || s.RunID != l.RunID {
		t.Fatalf("settle awaiting after its decision: %+v %v; want run %d queued", s, err, l.RunID)
	}
	next := f.claim("w")
	if next.RunID != l.RunID || next.Attempt != 1 {
		t.Fatalf("lease after the decision %+v", next)
	}
}

// Several runs may wait at once, each for its own card, and each decision
// resumes its own run; a cancel ends them all.
func testSeveralRunsWait(t *testing.T, h Harness) {
	f := newFixture(t, h, kernel.Config{})
	f.session("s1")
	var waiting []int64
	for i := range 3 {
		f.input("s1", "", fmt.Sprintf("task %d", i))
		l := f.claim("w")
		if s := f.pause(l, fmt.Sprintf("g%d", i)); s.State != gh.RunAwaitingApproval {
			t.Fatalf("pause %d: %+v", i, s)
		}
		waiting = append(waiting, l.RunID)
	}
	f.noClaim()
	// The second card decided first: its run, not the oldest, resumes.
	f.decide("s1", "g1", waiting[1])
	l := f.claim("w")
	if l.RunID != waiting[1] {
		t.Fatalf("claimed run %d after the decision of run %d's card", l.RunID, waiting[1])
	}
	if _, err := f.k.Finish(f.ctx, l, kernel.Settle{Outcome: gh.OutcomeDone}); err != nil {
		t.Fatal(err)
	}
	f.noClaim()
	f.input("s1", "", "one more")
	running := f.claim("w")
	if _, err := f.k.Cancel(f.ctx, "s1", "stop"); err != nil {
		t.Fatal(err)
	}
	for _, id := range []int64{waiting[0], waiting[2]} {
		if r := f.run(id); r.State != gh.RunCancelled {
			t.Fatalf("waiting run %d after cancel: %s", id, r.State)
		}
	}
	if r := f.run(running.RunID); !r.CancelRequested {
		t.Fatalf("running run after cancel: %+v", r)
	}
	// A decision on a cancelled run's card resumes nothing.
	if d := f.decide("s1", "g0", waiting[0]); d.RunID != 0 {
		t.Fatalf("decision on a cancelled run's card resumed run %d", d.RunID)
	}
	if s, err := f.k.Finish(f.ctx, running, kernel.Settle{Outcome: gh.OutcomeDone}); err != nil || s.State != gh.RunCancelled || s.Requeued {
		t.Fatalf("cancelled run's settle: %+v %v", s, err)
	}
	f.noClaim()
}
