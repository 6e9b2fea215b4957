package turnbench

import (
	"context"
	"testing"
)

// maxApprovalWriteTx is what one approval turn costs on Postgres in
// write transactions today, each turn followed by a client on a stream of
// its own: the input with its run, the claim, the tool call with its gate
// and the settle, the decision, the resumed claim, the receipt before the
// effect, the result with its finished receipt, and the answer with the
// settle. Opening and closing the stream adds none (it added two before
// stream_followers kept one row per replica). #32 aims at 6: the two
// claims ride on other commits, and the result on the answer's.
const maxApprovalWriteTx = 8

// The write transactions of an approval turn, counted by the pgx tracer
// (no timing): a client that opens a stream for every turn, as clients of
// an HTTP API do, costs what one kept open costs, and no turn costs more
// than maxApprovalWriteTx. CI keeps the count.
func TestApprovalTurnWriteTransactions(t *testing.T) {
	s := newStack(t, "postgres")
	s.streamPerTurn = true
	ctx := context.Background()
	// A first session warms up (caches, prepared statements).
	warm, err := s.runConversations(ctx, "warm", turnsPerSession, turnsPerSession, 1)
	if err != nil {
		t.Fatal(err)
	}
	s.quiesce()
	// One session of turns, streams opened and closed turn by turn; its
	// creation (one write of its own, once a session) is not a turn's.
	const turns = turnsPerSession
	before := s.tracer.snapshot()
	outs, err := s.runConversations(ctx, "count", turns, turns, 1)
	if err != nil {
		t.Fatal(err)
	}
	s.quiesce()
	d := s.tracer.snapshot().sub(before)
	if err := s.checkMails(append(warm, outs...)); err != nil {
		t.Fatal(err)
	}
	d.writeTx-- // the session's creation
	per := float64(d.writeTx) / turns
	t.Logf("%d approval turns, a stream each: %.2f write transactions a turn, %.2f writes, %.2f reads", turns, per,
		float64(d.n[stmtWrite])/turns, float64(d.n[stmtRead])/turns)
	for _, k := range d.top(stmtWrite, 12) {
		t.Logf("  %6.2f  %s", float64(k.n)/turns, k.key)
	}
	if per > maxApprovalWriteTx {
		t.Fatalf("%.2f write transactions per approval turn, want at most %d", per, maxApprovalWriteTx)
	}
}
