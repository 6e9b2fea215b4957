package turnbench

import (
	"context"
	"testing"

	gh "github.com/gatehouse/gatehouse"
)

// The benchmark's conversations, as a user sees them, on SQLite: two
// sessions of three turns each, side by side, every turn with its own
// card's gate approved, its own mail and its answer on the session's one
// stream; and the memory pass's jobs run and counted the way the
// benchmark does, one model call per session's turns.
func TestApprovalTurnFlow(t *testing.T) {
	s := newStack(t, "sqlite")
	ctx := context.Background()
	const sessions, per = 2, 3
	const n = sessions * per
	outs, err := s.runConversations(ctx, "flow", n, per, 2)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.checkMails(outs); err != nil {
		t.Fatal(err)
	}
	gates := map[string]bool{}
	for i, o := range outs {
		if o.session == "" || o.turn != i%per {
			t.Fatalf("turn %d: %+v", i, o)
		}
		if i%per > 0 && o.inputSeq <= outs[i-1].inputSeq || gates[o.gateID] {
			t.Fatalf("turn %d took an earlier turn's input or card: %+v after %+v", i, o, outs[i-1])
		}
		gates[o.gateID] = true
		g, err := s.store.GetGate(ctx, o.gateID)
		if err != nil || g.State != gh.GateApproved || g.Tool != "email_send" {
			t.Fatalf("turn %d: gate %+v %v", i, g, err)
		}
	}
	s.quiesce()
	if got := s.memoryCalls(); got != 0 {
		t.Fatalf("%d memory model calls before the jobs ran", got)
	}
	ran, err := s.runMemoryJobs(ctx)
	if err != nil || ran < 1 {
		t.Fatalf("memory jobs: %d attempts, %v", ran, err)
	}
	if got := s.memoryCalls(); got != ran {
		t.Fatalf("%d memory model calls for %d job attempts", got, ran)
	}
	// Batch (default 5) holds a session's three turns: a call a session.
	if s.env.Memory.Config().Batch >= per && ran != sessions {
		t.Fatalf("%d memory model calls for %d sessions of %d turns", ran, sessions, per)
	}
	t.Logf("%d turns in %d sessions: %d memory-pass batch attempts, %d model calls", n, sessions, ran, s.memoryCalls())
}
