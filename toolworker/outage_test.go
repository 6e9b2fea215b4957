package toolworker_test

import (
	"context"
	"strings"
	"testing"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/internal/testing/pgcut"
	"github.com/gatehouse/gatehouse/internal/testing/testenv"
	"github.com/gatehouse/gatehouse/kernel"
	"github.com/gatehouse/gatehouse/store/postgres"
	"github.com/gatehouse/gatehouse/store/storetest"
	"github.com/gatehouse/gatehouse/tools"
	"github.com/gatehouse/gatehouse/toolworker"
)

// The issue this guards (#28): a mail whose SMTP 250 arrived while the
// database was down was delivered, but the attempt gave up at the first
// refused write, and its successor told the user the outcome was
// unknown. Now the attempt keeps the outcome and saves it when the
// database is back, while its lease is its own: the log says "sent",
// once, and nothing is left for a successor to guess.
func TestAnOutcomeLearnedDuringAnOutageIsSaved(t *testing.T) {
	ctx := context.Background()
	u := testenv.PostgresURL(t)
	proxy := pgcut.Start(t, pgcut.Target(t, u))
	st := storetest.OpenPostgres(t, postgres.Config{URL: proxy.URL(t, u)})
	e := &env{t: t, ctx: ctx, st: st, k: kernel.New(st, kernel.Config{LeaseTTL: 30 * time.Second})}
	sends := 0
	restored := make(chan struct{})
	send := toolworker.FuncTool{ToolName: "send", ToolTier: tools.Danger,
		Fn: func(ctx context.Context, c tools.Call) (string, error) {
			sends++
			// The server's 250 arrives just after the primary died.
			proxy.Cut()
			go func() {
				time.Sleep(800 * time.Millisecond) // a standby promoted
				proxy.Restore()
				close(restored)
			}()
			return "sent: 250 OK queued as 7F3A", nil
		}}
	e.w = toolworker.New(toolworker.Config{Kernel: e.k, Gates: sqlGates(st, e.k), Tools: tools.NewRegistry(send), ApprovalTimeout: time.Minute})
	l := e.lease("s1")
	if out := e.batch(l, call("c1", "send", `{"to":"sara@example.com"}`)); !out.Paused {
		t.Fatalf("the danger call did not wait for its card: %+v", out)
	}
	l = e.decide(l, gh.GateApproved, "")
	out, err := e.w.RunBatch(ctx, l, e.who, []gh.ToolCall{call("c1", "send", `{"to":"sara@example.com"}`)})
	if err != nil {
		t.Fatalf("the batch across the outage: %v", err)
	}
	<-restored
	if sends != 1 || len(out.Results) != 1 || !strings.Contains(out.Results[0].Result.Content, "250 OK") {
		t.Fatalf("sends %d, results %+v", sends, out.Results)
	}
	evs, err := st.Events(ctx, "s1", 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	results, finished := 0, 0
	for _, ev := range evs {
		switch {
		case ev.Kind == gh.KindToolResult:
			results++
			if !strings.Contains(string(ev.Payload), "250 OK") {
				t.Fatalf("the saved result is not the outcome learned: %s", ev.Payload)
			}
		case ev.Kind == gh.KindReceipt && strings.Contains(string(ev.Payload), `"finished"`):
			finished++
		}
	}
	if results != 1 || finished != 1 {
		t.Fatalf("the log holds %d results and %d finished receipts, want 1 and 1", results, finished)
	}
}
