package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/gateway/chat"
	"github.com/gatehouse/gatehouse/httpapi"
	"github.com/gatehouse/gatehouse/httpapi/adminapi"
	"github.com/gatehouse/gatehouse/kernel"
	"github.com/gatehouse/gatehouse/store"
	"github.com/gatehouse/gatehouse/store/storetest"
)

// GET /v1/admin/stats counts what the store recorded in the last hour
// and the last day, on both backends, with no platform configured.
func TestAdminStats(t *testing.T) {
	storetest.EachBackend(t, testAdminStats)
}

func testAdminStats(t *testing.T, st store.Store) {
	ctx := context.Background()
	now := time.Now().UTC()
	// Activity at three ages: 5 minutes (in both windows), 3 hours (the
	// day only) and 30 hours (neither).
	ages := []time.Duration{5 * time.Minute, 3 * time.Hour, 30 * time.Hour}
	for i, age := range ages {
		at := now.Add(-age)
		for j, outcome := range []string{chat.ReceiveHandedOn, chat.ReceiveHandedOn, chat.ReceiveDropped} {
			e := store.ReceiveEntry{Platform: "telegram", UpdateID: fmt.Sprintf("u%d-%d", i, j), ChatID: "1", UserID: "1", Outcome: outcome, ReceivedAt: at}
			if outcome == chat.ReceiveDropped {
				e.Reason = chat.ReasonNotAllowed
			}
			if _, _, err := st.InsertReceive(ctx, e); err != nil {
				t.Fatal(err)
			}
		}
		// Two turns settled: one done after 2s, one failed after 4s.
		if err := st.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
			for k, r := range []struct {
				state gh.RunState
				took  time.Duration
			}{{gh.RunDone, 2 * time.Second}, {gh.RunFailed, 4 * time.Second}} {
				if _, err := tx.InsertRun(ctx, gh.Run{SessionID: fmt.Sprintf("s%d-%d", i, k), State: r.state, MaxAttempts: 3,
					AvailableAt: at.Add(-r.took), Created: at.Add(-r.took), Updated: at}); err != nil {
					return err
				}
			}
			// A run still running is not a turn yet.
			_, err := tx.InsertRun(ctx, gh.Run{SessionID: fmt.Sprintf("s%d-run", i), State: gh.RunRunning, MaxAttempts: 3, AvailableAt: at, Created: at, Updated: at})
			return err
		}); err != nil {
			t.Fatal(err)
		}
		// Two gates opened, one approved a minute later; one model call.
		for k := range 2 {
			g := gh.Gate{ID: fmt.Sprintf("g%d-%d", i, k), SessionID: "s", RunID: 1, ToolCallID: fmt.Sprintf("c%d-%d", i, k), Tool: "send", Arguments: json.RawMessage(`{}`),
				ArgsHash: "h", Kind: gh.GateKindApproval, State: gh.GatePending, ExpiresAt: at.Add(time.Hour), Created: at.Add(-time.Minute)}
			if _, err := st.InsertGate(ctx, g); err != nil {
				t.Fatal(err)
			}
		}
		if err := st.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
			_, _, err := tx.DecideGate(ctx, store.GateDecision{ID: fmt.Sprintf("g%d-0", i), Decision: gh.Decision{State: gh.GateApproved, By: "local", Surface: "web"}, Now: at})
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if err := st.AddLedger(ctx, gh.LedgerRow{SessionID: "s", RunID: 1, Provider: "p", Model: "m", Attempt: 1, CostUSD: 0.25, Created: at}); err != nil {
			t.Fatal(err)
		}
	}

	ts := httptest.NewServer(httpapi.New(httpapi.Config{Kernel: kernel.New(st, kernel.Config{}), Store: st, APIToken: testToken, Logger: slog.New(slog.DiscardHandler)}).Handler())
	defer ts.Close()
	read := func(window string, n int) adminapi.StatsReply {
		t.Helper()
		code, body := call(t, "GET", ts.URL+"/v1/admin/stats?window="+window, "")
		if code != 200 {
			t.Fatalf("stats %s: %d %s", window, code, body)
		}
		var r adminapi.StatsReply
		if err := json.Unmarshal([]byte(body), &r); err != nil {
			t.Fatalf("stats %s: %v %s", window, err, body)
		}
		if r.Window != window || len(r.Buckets) != n || !r.Until.After(now) || r.Until.Sub(r.Since) != time.Duration(n)*time.Duration(r.StepSeconds)*time.Second {
			t.Fatalf("stats %s: window %q, %d buckets of %ds, %s to %s", window, r.Window, len(r.Buckets), r.StepSeconds, r.Since, r.Until)
		}
		return r
	}
	for _, c := range []struct {
		window  string
		buckets int
		times   int64 // how many of the ages fall in the window
	}{{"1h", 60, 1}, {"24h", 48, 2}} {
		r := read(c.window, c.buckets)
		tot := r.Totals
		if tot.Receives[chat.ReceiveHandedOn] != 2*c.times || tot.Receives[chat.ReceiveDropped] != c.times {
			t.Errorf("%s: receives %v", c.window, tot.Receives)
		}
		if tot.Turns[string(gh.RunDone)] != c.times || tot.Turns[string(gh.RunFailed)] != c.times || tot.Turns[string(gh.RunCancelled)] != 0 {
			t.Errorf("%s: turns %v", c.window, tot.Turns)
		}
		if tot.GatesOpened != 2*c.times || tot.GatesDecided[string(gh.GateApproved)] != c.times || tot.GatesDecided[string(gh.GateDenied)] != 0 {
			t.Errorf("%s: gates opened %d, decided %v", c.window, tot.GatesOpened, tot.GatesDecided)
		}
		if tot.ModelCalls != c.times || tot.SpendUSD < 0.25*float64(c.times)-1e-9 || tot.SpendUSD > 0.25*float64(c.times)+1e-9 {
			t.Errorf("%s: %d model calls, $%f", c.window, tot.ModelCalls, tot.SpendUSD)
		}
		// The buckets sum to the totals, and the turns' p95 is the slower
		// of each bucket's two (nearest rank of 2 is the second).
		var turns, p95s int64
		for _, b := range r.Buckets {
			turns += b.Turns[string(gh.RunDone)] + b.Turns[string(gh.RunFailed)]
			if n := b.Turns[string(gh.RunDone)] + b.Turns[string(gh.RunFailed)]; n > 0 {
				p95s++
				if b.TurnP95Ms != 4000 {
					t.Errorf("%s: bucket %s: p95 %dms of turns of 2s and 4s", c.window, b.Start, b.TurnP95Ms)
				}
			} else if b.TurnP95Ms != 0 {
				t.Errorf("%s: bucket %s without turns has p95 %dms", c.window, b.Start, b.TurnP95Ms)
			}
		}
		if turns != 2*c.times || p95s != c.times {
			t.Errorf("%s: %d turns in %d buckets", c.window, turns, p95s)
		}
		// The 5-minute-old activity sits in the bucket that holds its time.
		i := int(now.Add(-5*time.Minute).Sub(r.Since) / (time.Duration(r.StepSeconds) * time.Second))
		if b := r.Buckets[i]; b.Receives[chat.ReceiveHandedOn] != 2 || b.GatesDecided[string(gh.GateApproved)] != 1 || b.ModelCalls != 1 {
			t.Errorf("%s: bucket %d (%s): %+v", c.window, i, b.Start, b)
		}
	}
	if code, body := call(t, "GET", ts.URL+"/v1/admin/stats?window=7d", ""); code != 400 {
		t.Errorf("an unknown window: %d %s", code, body)
	}
}
