package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/adapters/adaptertest"
	"github.com/gatehouse/gatehouse/adapters/telegram"
	"github.com/gatehouse/gatehouse/adapters/telegram/telegramtest"
	"github.com/gatehouse/gatehouse/gateway"
	"github.com/gatehouse/gatehouse/gateway/chat"
	"github.com/gatehouse/gatehouse/httpapi"
	"github.com/gatehouse/gatehouse/internal/testing/stacktest"
	"github.com/gatehouse/gatehouse/kernel"
	"github.com/gatehouse/gatehouse/store"
	"github.com/gatehouse/gatehouse/store/storetest"
)

// The ingest benchmark: Telegram updates POSTed to the webhook, each
// answered 200 only once its receive-log row, user.message and queued run
// are committed — against a bare insert into the same store in the same
// run. Phases run bare, ours, ours, bare so drift weighs on both alike.
//
//	go test -run XXX -bench Ingest -benchtime 2000x ./gateway/
//
// It reports p99-ratio (ours / bare; goal ≤ 2), throughput-ratio (goal ≥
// 0.5), and, with the supervisor's workers answering every update the
// whole time (busy-workers), the slowest acknowledgement and how many
// took over 3 s (goal 0).

var ingestTargets = []struct {
	name   string
	target storetest.BenchTarget
}{{"sqlite", storetest.SQLiteTarget}, {"postgres", storetest.PostgresTarget}}

func BenchmarkTelegramWebhookIngest(b *testing.B) {
	for _, tg := range ingestTargets {
		for _, busy := range []bool{false, true} {
			for _, senders := range []int{8, 32} {
				name := fmt.Sprintf("%s/senders=%d", tg.name, senders)
				if busy {
					name = fmt.Sprintf("%s/busy-workers/senders=%d", tg.name, senders)
				}
				b.Run(name, func(b *testing.B) { benchIngest(b, tg.target, senders, busy) })
			}
		}
	}
}

func benchIngest(b *testing.B, target storetest.BenchTarget, senders int, busy bool) {
	st, bare := target.Open(b)
	b.Cleanup(func() { st.Close() }) // first registered, so closed after the stack has stopped
	// The whole stack (internal/testing/stacktest) around a webhook-mode Telegram
	// adapter, everyone allowed. Its gateway is not started: Receive needs
	// no Start, and the follower and dispatcher are not what is measured.
	// With busy the supervisor's workers answer every update the whole
	// time, so ingest competes with turns being claimed and answered;
	// without, the same stack has no workers.
	e := stacktest.NewEnv(b, webhookTelegram, stacktest.EnvOptions{Store: st, Allowed: []string{"*"}, NoStart: true, NoWorkers: !busy, LogLevel: slog.LevelError})
	ctx := e.Ctx
	srv := httptest.NewServer(webhookServer(e.Adapter.Handler(e.Gateway)))
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: senders * 2}, Timeout: time.Minute}

	var nextUpdate atomic.Int64
	ours := func(w, i int) error {
		u := nextUpdate.Add(1)
		// Each chat sends 20 messages, under the flood limit, so the
		// path includes new chats (address and session created) and
		// known ones.
		chat := int64(w)*1_000_000 + int64(i/20)
		body, _ := json.Marshal(map[string]any{"update_id": u, "message": map[string]any{
			"message_id": u, "date": time.Now().Unix(), "text": fmt.Sprintf("message %d from sender %d", i, w),
			"chat": map[string]any{"id": chat, "type": "private", "first_name": "S"},
			"from": map[string]any{"id": chat, "is_bot": false, "first_name": "S"}}})
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/hooks/telegram", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Telegram-Bot-Api-Secret-Token", "bench-secret")
		res, err := client.Do(req)
		if err != nil {
			return err
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			return fmt.Errorf("webhook answered %d", res.StatusCode)
		}
		return nil
	}
	seq := make([]int64, senders)
	bareOp := func(w, i int) error {
		seq[w]++
		p, _ := json.Marshal(map[string]string{"text": fmt.Sprintf("message %d from sender %d", i, w), "delivery": "queue"})
		return bare(ctx, storetest.BareRow{SessionID: fmt.Sprintf("bare-%d", w), Seq: seq[w], Kind: string(gh.KindUserMessage),
			Payload: p, Key: fmt.Sprintf("in:%d:%d", w, seq[w]), CreatedAt: time.Now().UTC()})
	}
	n := max(b.N/2, senders)
	b.ResetTimer()
	var bareLat, ourLat []time.Duration
	var bareTime, ourTime time.Duration
	for _, phase := range []string{"bare", "ours", "ours", "bare"} {
		op := bareOp
		if phase == "ours" {
			op = ours
		}
		lat, took := storetest.RunPhase(b, senders, n/2, op)
		if phase == "bare" {
			bareLat, bareTime = append(bareLat, lat...), bareTime+took
		} else {
			ourLat, ourTime = append(ourLat, lat...), ourTime+took
		}
	}
	b.StopTimer()
	bp99, op99 := storetest.P99(bareLat), storetest.P99(ourLat)
	b.ReportMetric(float64(op99)/float64(bp99), "p99-ratio")
	b.ReportMetric((float64(len(ourLat))/ourTime.Seconds())/(float64(len(bareLat))/bareTime.Seconds()), "throughput-ratio")
	b.ReportMetric(float64(op99.Microseconds()), "ingest-p99-µs")
	b.ReportMetric(float64(bp99.Microseconds()), "bare-p99-µs")
	slowest, over3s := time.Duration(0), 0
	for _, l := range ourLat {
		slowest = max(slowest, l)
		if l > 3*time.Second {
			over3s++
		}
	}
	b.ReportMetric(float64(slowest.Milliseconds()), "slowest-ack-ms")
	b.ReportMetric(float64(over3s), "acks-over-3s")
	// Every acknowledged update is in the log, once.
	rows, err := st.ListReceive(ctx, store.ReceiveFilter{Outcome: chat.ReceiveHandedOn, Limit: 1})
	if err != nil || len(rows) == 0 || rows[0].ID < int64(len(ourLat)) {
		b.Fatalf("receive log after %d acknowledged updates: %+v %v", len(ourLat), rows, err)
	}
}

// webhookTelegram is a Telegram adapter in webhook mode with the secret
// the benchmarks send, logging nothing: a benchmark prints every line.
func webhookTelegram(t adaptertest.TB) (chat.Adapter, adaptertest.Fake) {
	fake := telegramtest.NewTelegram(t, telegramtest.TelegramOptions{})
	a, err := telegram.New(telegram.Config{Token: fake.Token, APIURL: fake.URL, WebhookSecret: "bench-secret", Logger: quiet})
	if err != nil {
		t.Fatalf("telegram adapter: %v", err)
	}
	return a, fake
}

// BenchmarkTelegramRedelivery delivers each of 1,000 updates 4 times at
// once through the webhook (as Telegram does when acknowledgements are
// slow) and reports the events, runs and duplicate rows that result
// (goal: exactly 1,000 events and 1,000 runs, 3,000 duplicates).
//
//	go test -run XXX -bench Redelivery -benchtime 1x ./gateway/
func BenchmarkTelegramRedelivery(b *testing.B) {
	for _, tg := range ingestTargets {
		b.Run(tg.name, func(b *testing.B) {
			for range b.N {
				benchRedelivery(b, tg.target)
			}
		})
	}
}

// benchRedelivery wires only the kernel and the gateway, by hand, not the
// whole stack: what it counts (one user.message and one queued run per
// update) is what the receive path alone writes. Workers answering would
// add events and settle runs under the count, and a gate service or a
// started gateway would measure nothing more.
func benchRedelivery(b *testing.B, target storetest.BenchTarget) {
	const updates, copies, senders = 1000, 4, 32
	st, _ := target.Open(b)
	defer st.Close()
	ctx := context.Background()
	k := kernel.New(st, kernel.Config{})
	fake := telegramtest.NewTelegram(b, telegramtest.TelegramOptions{})
	a, err := telegram.New(telegram.Config{Token: fake.Token, APIURL: fake.URL, WebhookSecret: "bench-secret", Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		b.Fatal(err)
	}
	gw := gateway.New(gateway.Config{Kernel: k, Store: st, Adapters: []chat.Adapter{a}, Allowed: map[string][]string{gh.PlatformTelegram: {"*"}}, Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))})
	srv := httptest.NewServer(webhookServer(a.Handler(gw)))
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: senders * 2}, Timeout: time.Minute}
	work := make(chan int64)
	var wg sync.WaitGroup
	var failed atomic.Int64
	for range senders {
		wg.Go(func() {
			for u := range work {
				body, _ := json.Marshal(map[string]any{"update_id": u, "message": map[string]any{
					"message_id": u, "date": time.Now().Unix(), "text": fmt.Sprintf("update %d", u),
					"chat": map[string]any{"id": u, "type": "private", "first_name": "S"},
					"from": map[string]any{"id": u, "is_bot": false, "first_name": "S"}}})
				req, _ := http.NewRequest(http.MethodPost, srv.URL+"/hooks/telegram", bytes.NewReader(body))
				req.Header.Set("X-Telegram-Bot-Api-Secret-Token", "bench-secret")
				res, err := client.Do(req)
				if err != nil || res.StatusCode != http.StatusOK {
					if failed.Add(1) == 1 {
						status := 0
						if res != nil {
							status = res.StatusCode
						}
						b.Logf("first failed post: status %d, %v", status, err)
					}
				}
				if res != nil {
					res.Body.Close()
				}
			}
		})
	}
	// The copies of one update go out back to back, so they race.
	for u := range int64(updates) {
		for range copies {
			work <- 1 + u
		}
	}
	close(work)
	wg.Wait()
	events, runs := 0, map[int64]bool{}
	for u := range int64(updates) {
		session := chat.SessionFor(gh.PlatformTelegram, fmt.Sprint(1+u), "")
		evs, err := k.Events(ctx, session, 0, 10)
		if err != nil {
			b.Fatal(err)
		}
		events += len(evs)
		if run, ok, _ := k.LatestRun(ctx, session); ok {
			runs[run.ID] = true
		}
	}
	dups, _ := st.ListReceive(ctx, store.ReceiveFilter{Reason: chat.ReasonDuplicate, Limit: 10000})
	b.ReportMetric(float64(events), "events")
	b.ReportMetric(float64(len(runs)), "runs")
	b.ReportMetric(float64(len(dups)), "duplicates")
	b.ReportMetric(float64(failed.Load()), "failed-posts")
	if events != updates || len(runs) != updates || failed.Load() != 0 {
		b.Fatalf("%d updates × %d: %d events, %d runs, %d failed posts", updates, copies, events, len(runs), failed.Load())
	}
}

// webhookServer serves the webhook the way the binary does: through the
// HTTP surface, whose per-request deadlines and bounded body read are part
// of the measured path.
func webhookServer(h http.Handler) http.Handler {
	return httpapi.New(httpapi.Config{Hooks: map[string]http.Handler{gh.PlatformTelegram: h}, Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))}).Handler()
}
