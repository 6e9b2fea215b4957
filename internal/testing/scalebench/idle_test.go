package scalebench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/httpapi"
	"github.com/gatehouse/gatehouse/internal/testing/stacktest"
	"github.com/gatehouse/gatehouse/internal/testing/testenv"
	"github.com/gatehouse/gatehouse/store/storetest"
)

// anyInput is the scripted model's one step: "ok" to every message. The
// scripted model runs in process and keeps nothing per request, so the
// heap measured is the gateway's.
const anyInput = `[{"match":"*","text":"ok"}]`

// gateway is the whole gateway on one fresh database as the web chat and
// the API run it — store, kernel, supervisor, tool worker, gate sweeper,
// memory (rule pass) and the HTTP API on loopback — with a client for the
// API.
type gateway struct {
	d       *db
	commits *storetest.CountingStore
	env     *stacktest.Env
	tr      *http.Transport
	client  *http.Client
	base    string
}

func startGateway(tb testing.TB, backend string, api httpapi.Config) *gateway {
	tb.Helper()
	d := openDB(tb, backend)
	g := &gateway{d: d, commits: &storetest.CountingStore{Store: d.st}}
	g.env = stacktest.NewEnv(tb, nil, stacktest.EnvOptions{
		Store: g.commits, Script: anyInput, Memory: true,
		// serve's default: a claim without a wake-up once a second.
		Poll: time.Second,
		HTTP: &api,
	})
	g.tr = &http.Transport{MaxIdleConnsPerHost: 16}
	g.client = &http.Client{Transport: g.tr}
	tb.Cleanup(g.tr.CloseIdleConnections)
	g.base = "http://" + g.env.Addr
	return g
}

// turn posts an input to session over the API and waits until its run
// settled done.
func (g *gateway) turn(ctx context.Context, session, requestID string) error {
	body, _ := json.Marshal(map[string]string{"text": "hello", "requestId": requestID})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, g.base+"/v1/sessions/"+session+"/input", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := g.client.Do(g.env.Authorize(req))
	if err != nil {
		return err
	}
	raw, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusAccepted {
		return fmt.Errorf("input to %s: %d %s", session, res.StatusCode, raw)
	}
	var in struct {
		RunID int64 `json:"runId"`
	}
	if err := json.Unmarshal(raw, &in); err != nil || in.RunID <= 0 {
		return fmt.Errorf("input to %s answered %s", session, raw)
	}
	k := g.env.Kernel
	sub := k.Subscribe(session)
	defer sub.Close()
	deadline := time.Now().Add(testenv.Patience)
	for {
		r, err := k.Run(ctx, in.RunID)
		if err != nil {
			return err
		}
		if !r.State.Active() {
			if r.State != "done" {
				return fmt.Errorf("run %+v", r)
			}
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out waiting for run %d of %s", in.RunID, session)
		}
		select {
		case <-sub.Committed:
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// turns runs one turn on each of n sessions prefix0000000 …, c at a
// time.
func (g *gateway) turns(tb testing.TB, prefix string, n, c int) {
	tb.Helper()
	ctx := context.Background()
	next := make(chan int)
	var (
		mu    sync.Mutex
		first error
		wg    sync.WaitGroup
	)
	for range c {
		wg.Go(func() {
			for i := range next {
				if err := g.turn(ctx, fmt.Sprintf("%s%07d", prefix, i), fmt.Sprintf("r-%s%d", prefix, i)); err != nil {
					mu.Lock()
					first = err
					mu.Unlock()
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	must(tb, first)
}

// idle lets the gateway idle for at least d: the client's connections
// closed, nothing committed for 300 ms; then it takes the census.
func (g *gateway) idle(d time.Duration) census {
	g.tr.CloseIdleConnections()
	start := time.Now()
	last, still := g.commits.Commits(), 0
	for deadline := start.Add(20 * time.Second); (still < 3 || time.Since(start) < d) && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
		if n := g.commits.Commits(); n != last {
			last, still = n, 0
		} else {
			still++
		}
	}
	return take()
}

// bulk writes f's sessions behind the running gateway, with run ids past
// the ones it made.
func (g *gateway) bulk(tb testing.TB, prefix string, n int) {
	tb.Helper()
	f := newFill(prefix, n)
	var maxRun int64
	q := `SELECT COALESCE(MAX(id), 0) FROM runs`
	switch g.d.backend {
	case "sqlite":
		must(tb, g.d.lite.WriteDB().QueryRow(q).Scan(&maxRun))
	case "postgres":
		must(tb, g.d.pg.Pool().QueryRow(context.Background(), q).Scan(&maxRun))
	}
	f.firstRun = maxRun + 1
	g.d.load(tb, f)
	must(tb, verifyFilled(context.Background(), g.env.Kernel, f, n-1))
}

// idleSessions measures the gateway idle with no sessions but a few
// warm-up ones, then after live answered turns on live sessions through
// the API, then after bulk more sessions written to its database.
func idleSessions(tb testing.TB, backend string, live, bulk int, idleFor time.Duration) (before, mid, after census) {
	g := startGateway(tb, backend, httpapi.Config{})
	// Warm-up, at the concurrency of the live turns: the first turns
	// start what starts on first use (the database pool's connections
	// and their statement caches, the HTTP server's), which must not be
	// counted as the sessions' cost.
	g.turns(tb, "warm-", 32, 8)
	before = g.idle(idleFor)
	g.turns(tb, "live-", live, 8)
	mid = g.idle(idleFor)
	if bulk > 0 {
		g.bulk(tb, "bulk-", bulk)
	}
	after = g.idle(idleFor)
	return before, mid, after
}

// TestIdleSessionsHoldNoGoroutines: sessions that were answered and sit
// idle hold no goroutine of the gateway — 0 against 50 sessions answered
// through the API plus 2,000 more in the database differ by fewer than 10
// goroutines. A count of goroutines, not a time: it holds however slow
// the machine.
func TestIdleSessionsHoldNoGoroutines(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			before, mid, after := idleSessions(t, backend, 50, 2000, 300*time.Millisecond)
			t.Logf("goroutines: %d idle, %d after 50 answered sessions, %d with 2,000 more in the database", before.goroutines, mid.goroutines, after.goroutines)
			if d := after.goroutines - before.goroutines; d >= 10 {
				t.Errorf("goroutines grew by %d with 2,050 idle sessions (%d → %d → %d)", d, before.goroutines, mid.goroutines, after.goroutines)
			}
			if d := mid.goroutines - before.goroutines; d >= 10 {
				t.Errorf("goroutines grew by %d with 50 answered sessions (%d → %d)", d, before.goroutines, mid.goroutines)
			}
		})
	}
}

// BenchmarkIdleSessions reports what idle sessions cost the running
// gateway (store, supervisor, gate sweeper, memory, HTTP API): goroutines
// and heap in use after GC with 10,000 answered sessions against none.
// The sessions are GATEHOUSE_SCALE_IDLE_LIVE (default 2,000) answered
// through the API, one turn each, which leaves whatever a turn leaves in
// memory, plus bulk-written ones up to GATEHOUSE_SCALE_IDLE_SESSIONS
// (default 10,000), which only periodic work would see. Heap is reported
// per session overall, per live session and per bulk session. Run with
// -benchtime=1x.
func BenchmarkIdleSessions(b *testing.B) {
	total := envInt(b, "GATEHOUSE_SCALE_IDLE_SESSIONS", 10_000)
	live := min(envInt(b, "GATEHOUSE_SCALE_IDLE_LIVE", 2_000), total)
	for _, backend := range backends {
		b.Run(backend, func(b *testing.B) {
			start := time.Now()
			before, mid, after := idleSessions(b, backend, live, total-live, 3*time.Second)
			b.ReportMetric(float64(after.goroutines-before.goroutines)/float64(total), "goroutines-per-idle-session")
			b.ReportMetric(perSession(after.heapInuse, before.heapInuse, total), "heap-bytes-per-idle-session")
			b.ReportMetric(perSession(mid.heapInuse, before.heapInuse, live), "heap-bytes-per-live-session")
			if total > live {
				b.ReportMetric(perSession(after.heapInuse, mid.heapInuse, total-live), "heap-bytes-per-bulk-session")
			}
			b.ReportMetric(float64(before.goroutines), "goroutines-idle-empty")
			b.Logf("%s: goroutines %d → %d (%d live) → %d (%d sessions); heap in use %d → %d → %d bytes; took %v",
				backend, before.goroutines, mid.goroutines, live, after.goroutines, total, before.heapInuse, mid.heapInuse, after.heapInuse, time.Since(start).Round(time.Second))
		})
	}
}

func perSession(after, before uint64, n int) float64 {
	return (float64(after) - float64(before)) / float64(n)
}
