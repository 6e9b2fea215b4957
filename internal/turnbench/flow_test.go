package turnbench

import (
	"context"
	"testing"

	gh "github.com/gatehouse/gatehouse"
)

// The benchmark's conversation, as a user sees it, three times on SQLite:
// the card's gate approved, one mail each, the answer on the stream; and
// the memory pass's jobs run and counted the way the benchmark does.
func TestApprovalTurnFlow(t *testing.T) {
	s := newStack(t, "sqlite")
	ctx := context.Background()
	const n = 3
	outs, err := s.runConversations(ctx, "flow", n, 2)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.checkMails(outs, n); err != nil {
		t.Fatal(err)
	}
	for i, o := range outs {
		g, err := s.store.GetGate(ctx, o.gateID)
		if err != nil || g.State != gh.GateApproved || g.Tool != "email_send" {
			t.Fatalf("conversation %d: gate %+v %v", i, g, err)
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
	t.Logf("%d conversations: %d memory-pass job attempts, %d model calls", n, ran, s.memoryCalls())
}
