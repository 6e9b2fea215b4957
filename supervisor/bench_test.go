package supervisor_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/kernel"
	"github.com/gatehouse/gatehouse/models"
	"github.com/gatehouse/gatehouse/store"
	"github.com/gatehouse/gatehouse/store/postgres"
	"github.com/gatehouse/gatehouse/store/sqlite"
	"github.com/gatehouse/gatehouse/store/storetest"
	"github.com/gatehouse/gatehouse/supervisor"
)

// instant is a zero-latency model: the benchmark measures our path.
type instant struct{}

func (instant) Name() string { return "instant" }
func (instant) Stream(ctx context.Context, req models.Request, onDelta func(string)) (models.Response, error) {
	if onDelta != nil {
		onDelta("ok")
	}
	return models.Response{Text: "ok", StopReason: models.StopEndTurn, Usage: gh.Usage{InputTokens: 10, OutputTokens: 1}}, nil
}

type benchStack struct {
	st   *storetest.CountingStore
	k    *kernel.Kernel
	bare func(ctx context.Context, session string, seq int64) error

	mu   sync.Mutex
	subs map[string]*kernel.Subscription // a client's stream, held across its turns
}

func openBench(b *testing.B, backend string) *benchStack {
	ctx := context.Background()
	var st store.Store
	var bare func(ctx context.Context, session string, seq int64) error
	const table = `CREATE TABLE bench_bare (session_id TEXT NOT NULL, seq BIGINT NOT NULL, kind TEXT NOT NULL, payload TEXT NOT NULL, idem_key TEXT, created_at BIGINT NOT NULL, PRIMARY KEY (session_id, seq))`
	const insert = `INSERT INTO bench_bare (session_id, seq, kind, payload, idem_key, created_at) VALUES ($1, $2, 'user.message', '{"text":"hi","delivery":"queue"}', NULL, 0)`
	switch backend {
	case "sqlite":
		s, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(b.TempDir(), "bench.db")})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.WriteDB().Exec(table); err != nil {
			b.Fatal(err)
		}
		st = s
		bare = func(ctx context.Context, session string, seq int64) error {
			_, err := s.WriteDB().ExecContext(ctx, insert, session, seq)
			return err
		}
	case "postgres":
		s := storetest.OpenPostgres(b, postgres.Config{})
		if _, err := s.Pool().Exec(ctx, table); err != nil {
			b.Fatal(err)
		}
		st = s
		bare = func(ctx context.Context, session string, seq int64) error {
			_, err := s.Pool().Exec(ctx, insert, session, seq)
			return err
		}
	}
	cs := &storetest.CountingStore{Store: st}
	b.Cleanup(func() { st.Close() })
	return &benchStack{st: cs, k: kernel.New(cs, kernel.Config{}), bare: bare}
}

func (s *benchStack) start(b *testing.B, workers int) {
	reg, err := models.New(models.Config{})
	if err != nil {
		b.Fatal(err)
	}
	reg.Register(instant{})
	sup, err := supervisor.New(supervisor.Config{Kernel: s.k, Models: reg, Workers: workers, Poll: 50 * time.Millisecond,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	sup.Start(context.Background())
	b.Cleanup(func() { sup.Stop(context.Background()) })
}

// turn sends one input and waits until its run settled.
func (s *benchStack) turn(b *testing.B, session string) {
	ctx := context.Background()
	// The client keeps its session's stream open across turns, as the web
	// chat keeps its SSE stream.
	s.mu.Lock()
	sub, ok := s.subs[session]
	if !ok {
		if s.subs == nil {
			s.subs = map[string]*kernel.Subscription{}
		}
		sub = s.k.Subscribe(session)
		s.subs[session] = sub
		b.Cleanup(sub.Close)
	}
	s.mu.Unlock()
	p, _ := json.Marshal(gh.UserMessage{Text: "hi", Delivery: gh.DeliveryQueue, Selection: "instant:zero"})
	c, err := s.k.EdgeCommit(ctx, kernel.EdgeInput{SessionID: session, Event: gh.NewEvent{Kind: gh.KindUserMessage, Payload: p}})
	if err != nil {
		b.Fatal(err)
	}
	// The client follows the feed as the SSE stream does: the settle's
	// run.finished arrives with its signal, so waiting reads nothing
	// (the store is read only when the feed cannot say).
	read := false
	for {
		if read {
			r, err := s.k.Run(ctx, c.RunID)
			if err != nil {
				b.Fatal(err)
			}
			if !r.State.Active() {
				if r.State != gh.RunDone {
					b.Fatalf("run %+v", r)
				}
				return
			}
		}
		select {
		case <-sub.Committed:
			evs, complete := sub.Take()
			read = !complete
			for _, e := range evs {
				if e.Kind == gh.KindRunFinished && e.Seq > c.Event.Seq {
					var f gh.RunFinished
					if json.Unmarshal(e.Payload, &f) == nil && f.RunID == c.RunID && f.Status == "done" {
						return
					}
					read = true
				}
			}
		case <-time.After(20 * time.Millisecond):
			read = true
		}
	}
}

// BenchmarkTurn measures a simple turn with a zero-latency model: commits
// per turn (goal ≤ 4), turns per second against the store's bare insert
// rate in the same run, and the cost of a turn after 10,000 prior events
// against one after 10 (goal ≤ 1.5×, thanks to loads that start at the
// latest compaction). Run with -benchtime=200x.
func BenchmarkTurn(b *testing.B) {
	for _, backend := range []string{"sqlite", "postgres"} {
		b.Run(backend, func(b *testing.B) {
			s := openBench(b, backend)
			// Aged sessions are prepared before any worker runs.
			young, old := prepare(b, s, "young", 10), prepare(b, s, "old", 10000)
			s.start(b, 8)
			ctx := context.Background()
			const clients = 8
			for c := range clients {
				s.k.CreateSession(ctx, gh.Session{ID: fmt.Sprintf("c%d", c)})
			}
			// Commits of one turn.
			before := s.st.Commits()
			s.turn(b, "c0")
			perTurn := s.st.Commits() - before

			// Throughput: clients each run turns back to back.
			n := max(b.N, clients)
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			for c := range clients {
				wg.Go(func() {
					for range n / clients {
						s.turn(b, fmt.Sprintf("c%d", c))
					}
				})
			}
			wg.Wait()
			turnRate := float64(n/clients*clients) / time.Since(start).Seconds()
			start = time.Now()
			for c := range clients {
				wg.Go(func() {
					for i := range n / clients {
						if err := s.bare(ctx, fmt.Sprintf("c%d", c), int64(i+1)); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			bareRate := float64(n/clients*clients) / time.Since(start).Seconds()
			b.StopTimer()

			// Age: a session with 10 prior events and one with 10,000.
			var ty, to []time.Duration
			for range 15 {
				t0 := time.Now()
				s.turn(b, young)
				ty = append(ty, time.Since(t0))
				t0 = time.Now()
				s.turn(b, old)
				to = append(to, time.Since(t0))
			}
			b.ReportMetric(float64(perTurn), "commits/turn")
			b.ReportMetric(turnRate, "turns/s")
			b.ReportMetric(bareRate, "bare-inserts/s")
			b.ReportMetric(turnRate/bareRate, "turn-to-insert-ratio")
			b.ReportMetric(float64(median(to))/float64(median(ty)), "age-cost-ratio")
		})
	}
}

// prepare makes a session whose log has prior answered exchanges — and,
// as the supervisor would have written past the context window, a
// compaction near the end.
func prepare(b *testing.B, s *benchStack, id string, prior int) string {
	ctx := context.Background()
	s.k.CreateSession(ctx, gh.Session{ID: id})
	var l gh.Lease
	for i := 0; i < prior; i += 2 {
		p, _ := json.Marshal(gh.UserMessage{Text: fmt.Sprintf("question %d", i), Delivery: gh.DeliveryQueue})
		c, err := s.k.EdgeCommit(ctx, kernel.EdgeInput{SessionID: id, Event: gh.NewEvent{Kind: gh.KindUserMessage, Payload: p}})
		if err != nil {
			b.Fatal(err)
		}
		if i == 0 {
			l = claimFor(b, s.k, id)
		}
		// Answered under the lease, as a worker would.
		a, _ := json.Marshal(gh.AssistantMessage{GenerationID: fmt.Sprintf("u%d-a1", c.Event.Seq), Text: "answer", InputSeqs: []int64{c.Event.Seq}, StopReason: gh.StopEndTurn})
		events := []gh.NewEvent{{Kind: gh.KindAssistantMessage, Payload: a}}
		if i+2 >= prior && prior > 100 {
			cp, _ := json.Marshal(gh.Compaction{Summary: "a long conversation of questions and answers", FirstKept: c.Event.Seq, Summarized: prior})
			events = append(events, gh.NewEvent{Kind: gh.KindCompaction, Payload: cp})
		}
		if _, err := s.k.Commit(ctx, l, events...); err != nil {
			b.Fatal(err)
		}
		if i%500 == 498 {
			if l, err = s.k.Renew(ctx, l); err != nil {
				b.Fatal(err)
			}
		}
	}
	if _, err := s.k.Finish(ctx, l, kernel.Settle{Outcome: gh.OutcomeDone, ReadWatermark: int64(prior + 1)}); err != nil {
		b.Fatal(err)
	}
	return id
}

func claimFor(b *testing.B, k *kernel.Kernel, session string) gh.Lease {
	for range 1000 {
		l, ok, err := k.Claim(context.Background(), "bench-prep")
		if err != nil {
			b.Fatal(err)
		}
		if ok && l.SessionID == session {
			return l
		}
		if ok {
			b.Fatalf("claimed another session's run %s", l.SessionID)
		}
	}
	b.Fatal("no run to claim")
	return gh.Lease{}
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}
