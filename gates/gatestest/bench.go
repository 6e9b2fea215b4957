package gatestest

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/store"
	"github.com/gatehouse/gatehouse/store/storetest"
)

// CountingStore counts durable commits of a real store; it is the
// conformance suite's.
type CountingStore = storetest.CountingStore

// BenchGates inserts n pending approval gates named prefix+number, one per
// session, expiring in an hour, in a few transactions.
func BenchGates(tb testing.TB, st store.Store, now time.Time, prefix string, n int) []gh.Gate {
	tb.Helper()
	now = now.UTC().Truncate(time.Microsecond)
	out := make([]gh.Gate, 0, n)
	for i := range n {
		id := fmt.Sprintf("%s%04d", prefix, i)
		out = append(out, gh.Gate{
			ID: id, SessionID: "s-" + id, RunID: 0, ToolCallID: "call-" + id, Tool: "email_send",
			Arguments: json.RawMessage(`{"to":"sara@example.com"}`), ArgsHash: "sha256:" + id, Kind: gh.GateKindApproval,
			State: gh.GatePending, ExpiresAt: now.Add(time.Hour), Created: now,
		})
	}
	for lo := 0; lo < n; lo += 250 {
		chunk := out[lo:min(lo+250, n)]
		err := st.InTx(context.Background(), func(ctx context.Context, tx store.Tx) error {
			for _, g := range chunk {
				if _, _, err := tx.CreateSession(ctx, gh.Session{ID: g.SessionID, Tenant: gh.DefaultTenant, Created: now}); err != nil {
					return err
				}
				if _, err := tx.InsertGate(ctx, g); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			tb.Fatalf("create gates: %v", err)
		}
	}
	return out
}

// PressFunc is one press: presser p of gate id.
type PressFunc func(ctx context.Context, id string, d gh.Decision) (won bool, err error)

// Presses returns presser p's decision: approve or deny, by "user<p>" on
// one of four surfaces.
func Presses(p int) gh.Decision {
	d := gh.Decision{State: gh.GateApproved, By: fmt.Sprintf("user%02d", p), Surface: surfaces[p%len(surfaces)]}
	if p%2 == 1 {
		d.State = gh.GateDenied
	}
	return d
}

// PressResult is what a round of presses did.
type PressResult struct {
	Presses int
	Winners int
	Elapsed time.Duration
}

// PerSecond is presses per second.
func (r PressResult) PerSecond() float64 { return float64(r.Presses) / r.Elapsed.Seconds() }

// Press presses every gate pressers times, with pressers goroutines taking
// the presses in gate order (gate 0's presses, then gate 1's …), so the
// pressers crowd the same gate at once.
func Press(ctx context.Context, ids []string, pressers int, press PressFunc) (PressResult, error) {
	total := len(ids) * pressers
	var next, winners atomic.Int64
	var once sync.Once
	var firstErr error
	var wg sync.WaitGroup
	start := time.Now()
	for range pressers {
		wg.Go(func() {
			for {
				k := int(next.Add(1)) - 1
				if k >= total {
					return
				}
				won, err := press(ctx, ids[k/pressers], Presses(k%pressers))
				if err != nil {
					once.Do(func() { firstErr = fmt.Errorf("press %d of %s: %w", k%pressers, ids[k/pressers], err) })
					return
				}
				if won {
					winners.Add(1)
				}
			}
		})
	}
	wg.Wait()
	return PressResult{Presses: total, Winners: int(winners.Load()), Elapsed: time.Since(start)}, firstErr
}

// DecidedCounts returns how many gate.decided events each gate has.
func DecidedCounts(ctx context.Context, st store.Store, gs []gh.Gate) (map[string]int, error) {
	out := make(map[string]int, len(gs))
	for _, g := range gs {
		evs, err := st.Events(ctx, g.SessionID, 0, 1000)
		if err != nil {
			return nil, err
		}
		out[g.ID] = 0
		for _, e := range evs {
			if e.Kind == gh.KindGateDecided && e.Key == "gate:"+g.ID {
				out[g.ID]++
			}
		}
	}
	return out, nil
}

// CheckDecided fails the benchmark unless every gate has exactly one
// gate.decided; it returns how many extra decisions there were.
func CheckDecided(b *testing.B, st store.Store, gs []gh.Gate) int {
	b.Helper()
	counts, err := DecidedCounts(context.Background(), st, gs)
	if err != nil {
		b.Fatal(err)
	}
	doubles, missing := 0, 0
	for _, n := range counts {
		if n == 0 {
			missing++
		}
		if n > 1 {
			doubles += n - 1
		}
	}
	if missing > 0 {
		b.Fatalf("%d gates have no gate.decided", missing)
	}
	return doubles
}
