package toolworker_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/kernel"
	"github.com/gatehouse/gatehouse/store"
	"github.com/gatehouse/gatehouse/store/sqlite"
	"github.com/gatehouse/gatehouse/store/storetest"
	"github.com/gatehouse/gatehouse/tools"
	"github.com/gatehouse/gatehouse/toolworker"
)

// BenchmarkApprovedStep counts the durable commits of running one approved
// tool call (goal ≤ 2: the receipt started; the result with the receipt
// finished).
func BenchmarkApprovedStep(b *testing.B) {
	ctx := context.Background()
	raw, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(b.TempDir(), "b.db")})
	if err != nil {
		b.Fatal(err)
	}
	defer raw.Close()
	st := &storetest.CountingStore{Store: raw}
	k := kernel.New(st, kernel.Config{})
	var sends atomic.Int64
	w := toolworker.New(toolworker.Config{Kernel: k, Gates: sqlGates(st, k), Tools: tools.NewRegistry(toolworker.FuncTool{ToolName: "send", ToolTier: tools.Danger,
		Fn: func(context.Context, tools.Call) (string, error) { sends.Add(1); return "ok", nil }})})
	var commits int64
	for i := range b.N {
		session := fmt.Sprintf("s%d", i)
		e := &env{t: nil, ctx: ctx, st: st, k: k, w: w}
		l := benchLease(b, e, session)
		c := call("c1", "send", `{}`)
		if _, err := w.RunBatch(ctx, l, toolworker.Asker{}, []gh.ToolCall{c}); err != nil {
			b.Fatal(err)
		}
		l = benchDecide(b, e, l)
		before := st.Commits()
		out, err := w.RunBatch(ctx, l, toolworker.Asker{}, []gh.ToolCall{c})
		if err != nil || len(out.Results) != 1 {
			b.Fatalf("%v %+v", err, out)
		}
		commits += st.Commits() - before
	}
	if sends.Load() != int64(b.N) {
		b.Fatalf("%d effects for %d approved steps", sends.Load(), b.N)
	}
	b.ReportMetric(float64(commits)/float64(b.N), "commits/approved-step")
}

func benchLease(b *testing.B, e *env, session string) gh.Lease {
	e.k.CreateSession(e.ctx, gh.Session{ID: session})
	if _, err := e.k.EdgeCommit(e.ctx, kernel.EdgeInput{SessionID: session, Event: gh.NewEvent{Kind: gh.KindUserMessage, Payload: []byte(`{"text":"go"}`)}}); err != nil {
		b.Fatal(err)
	}
	l, ok, err := e.k.Claim(e.ctx, "w")
	if err != nil || !ok {
		b.Fatalf("claim: %v %v", ok, err)
	}
	return l
}

func benchDecide(b *testing.B, e *env, l gh.Lease) gh.Lease {
	if _, err := e.k.Finish(e.ctx, l, kernel.Settle{Outcome: gh.OutcomeAwaitingApproval}); err != nil {
		b.Fatal(err)
	}
	gs, _ := e.st.ListGates(e.ctx, l.SessionID, gh.GatePending, 10)
	g, _, err := e.st.DecideGate(e.ctx, store.GateDecision{ID: gs[0].ID, Decision: gh.Decision{State: gh.GateApproved, By: "b", Surface: "bench"}, Now: gs[0].Created})
	if err != nil {
		b.Fatal(err)
	}
	p := fmt.Appendf(nil, `{"gateId":%q,"toolCallId":%q,"tool":"send","decision":"approved","by":"b","surface":"bench"}`, g.ID, g.ToolCallID)
	if _, err := e.k.EdgeCommit(e.ctx, kernel.EdgeInput{SessionID: l.SessionID, Event: gh.NewEvent{Kind: gh.KindGateDecided, Payload: p, Key: "gate:" + g.ID}}); err != nil {
		b.Fatal(err)
	}
	nl, ok, err := e.k.Claim(e.ctx, "w2")
	if err != nil || !ok {
		b.Fatalf("claim: %v %v", ok, err)
	}
	return nl
}
