package storetest

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/store"
)

// testIncidents checks what package incidents reads: the running runs
// whose step is older than a time, oldest first (a run waiting for a
// person never), the incident gates apart from the others, and that a
// pending incident is not a gate an input waits behind.
func testIncidents(t *testing.T, h Harness) {
	f := newFixture(t, h)
	now := f.clock.Now().UTC().Truncate(time.Microsecond)
	runOf := func(session string) int64 {
		t.Helper()
		if _, _, err := f.st.CreateSession(f.ctx, gh.Session{ID: session, Tenant: gh.DefaultTenant, Created: now}); err != nil {
			t.Fatal(err)
		}
		res, err := f.st.Append(f.ctx, store.AppendParams{SessionID: session, Kind: gh.KindUserMessage, Payload: json.RawMessage(`{"text":"hi"}`),
			Key: session + "-m1", Now: now, Input: true, QueueRun: true, MaxAttempts: 3})
		if err != nil || res.RunID == 0 {
			t.Fatalf("input of %s: %+v %v", session, res, err)
		}
		return res.RunID
	}
	setRun := func(id int64, state gh.RunState, step string, since time.Time) {
		t.Helper()
		err := f.st.InTx(f.ctx, func(ctx context.Context, tx store.Tx) error {
			r, err := tx.LockRun(ctx, id)
			if err != nil {
				return err
			}
			r.State, r.Owner, r.Epoch, r.LeaseExpiresAt, r.Step, r.StepStarted, r.Updated = state, "w1", 1, now.Add(time.Minute), step, since, now
			return tx.UpdateRun(ctx, r)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	old, recent, waiting := runOf("s1"), runOf("s2"), runOf("s3")
	setRun(old, gh.RunRunning, "tool:web_fetch", now.Add(-20*time.Minute))
	setRun(recent, gh.RunRunning, "model", now.Add(-time.Minute))
	setRun(waiting, gh.RunAwaitingApproval, "tool:email_send", now.Add(-time.Hour))

	stuck, err := f.st.StuckRuns(f.ctx, now.Add(-10*time.Minute), 10)
	if err != nil || len(stuck) != 1 || stuck[0].ID != old || stuck[0].Step != "tool:web_fetch" || !stuck[0].StepStarted.Equal(now.Add(-20*time.Minute)) {
		t.Fatalf("stuck for 10 minutes: %+v %v", stuck, err)
	}
	stuck, err = f.st.StuckRuns(f.ctx, now, 10)
	if err != nil || len(stuck) != 2 || stuck[0].ID != old || stuck[1].ID != recent {
		t.Fatalf("stuck at all, oldest step first (the waiting run never): %+v %v", stuck, err)
	}
	if stuck, err = f.st.StuckRuns(f.ctx, now, 1); err != nil || len(stuck) != 1 {
		t.Fatalf("the limit: %+v %v", stuck, err)
	}

	gate := func(id, session, kind string) gh.Gate {
		return gh.Gate{ID: id, SessionID: session, RunID: old, ToolCallID: "tc-" + id, Tool: kind, Arguments: json.RawMessage(`{}`),
			Kind: kind, Options: []string{gh.IncidentClose, gh.IncidentDiagnose}, State: gh.GatePending, ExpiresAt: now.Add(time.Hour), Created: now}
	}
	for _, g := range []gh.Gate{gate("i1", "s1", gh.GateKindIncident), gate("a1", "s2", gh.GateKindApproval), gate("l1", "s1", gh.GateKindLibrary)} {
		if ok, err := f.st.InsertGate(f.ctx, g); err != nil || !ok {
			t.Fatalf("insert %s: %v %v", g.ID, ok, err)
		}
	}
	if gs, err := f.st.GatesOfKind(f.ctx, gh.GateKindIncident, "", 10); err != nil || len(gs) != 1 || gs[0].ID != "i1" || gs[0].Kind != gh.GateKindIncident {
		t.Fatalf("incident gates: %+v %v", gs, err)
	}
	if gs, err := f.st.GatesOfKind(f.ctx, gh.GateKindLibrary, gh.GatePending, 10); err != nil || len(gs) != 1 || gs[0].ID != "l1" {
		t.Fatalf("library gates: %+v %v", gs, err)
	}
	// A message under a pending incident or library card is not held as
	// one under a card.
	res, err := f.st.Append(f.ctx, store.AppendParams{SessionID: "s1", Kind: gh.KindUserMessage, Payload: json.RawMessage(`{"text":"still there?"}`),
		Key: "s1-m2", Now: now, Input: true, QueueRun: true, MaxAttempts: 3, UnlessGatePending: true})
	if err != nil || res.GatePending || res.Event.Seq != 2 {
		t.Fatalf("input under a pending incident: %+v %v", res, err)
	}
	res, err = f.st.Append(f.ctx, store.AppendParams{SessionID: "s2", Kind: gh.KindUserMessage, Payload: json.RawMessage(`{"text":"and?"}`),
		Key: "s2-m2", Now: now, Input: true, QueueRun: true, MaxAttempts: 3, UnlessGatePending: true})
	if err != nil || !res.GatePending {
		t.Fatalf("input under a pending approval: %+v %v", res, err)
	}
	if _, won, err := f.st.DecideGate(f.ctx, store.GateDecision{ID: "i1", Now: now,
		Decision: gh.Decision{State: gh.GateAnswered, By: "ana", Surface: "web", Answer: gh.IncidentClose}}); err != nil || !won {
		t.Fatalf("decide the incident: %v %v", won, err)
	}
	if gs, err := f.st.GatesOfKind(f.ctx, gh.GateKindIncident, gh.GatePending, 10); err != nil || len(gs) != 0 {
		t.Fatalf("open incidents after the decision: %+v %v", gs, err)
	}
	if gs, err := f.st.GatesOfKind(f.ctx, gh.GateKindIncident, gh.GateAnswered, 10); err != nil || len(gs) != 1 || gs[0].Answer != gh.IncidentClose {
		t.Fatalf("decided incidents: %+v %v", gs, err)
	}
}
