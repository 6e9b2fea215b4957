package telegram_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/adapters/adaptertest"
	"github.com/gatehouse/gatehouse/adapters/telegram"
	"github.com/gatehouse/gatehouse/adapters/telegram/telegramtest"
	"github.com/gatehouse/gatehouse/gateway"
	"github.com/gatehouse/gatehouse/gateway/chat"
	"github.com/gatehouse/gatehouse/internal/backoff"
	"github.com/gatehouse/gatehouse/internal/testing/stacktest"
)

// countingSink is a sink that notes, with each failure reported, how
// many getUpdates calls the fake had had by then: the poll loop reports
// a call's outcome before it makes the next, so that count names the
// call that failed.
type countingSink struct {
	*sink
	fake *telegramtest.TelegramFake
	mu   sync.Mutex
	// failedAt is, per failure report, the fake's getUpdates count.
	failedAt []int
}

func (s *countingSink) Health(ctx context.Context, platform string, err error) {
	if err != nil {
		s.mu.Lock()
		s.failedAt = append(s.failedAt, s.fake.Calls("getUpdates"))
		s.mu.Unlock()
	}
	s.sink.Health(ctx, platform, err)
}

func (s *countingSink) firstFailureAfter(n int) (int, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, at := range s.failedAt {
		if at > n {
			return at, true
		}
	}
	return 0, false
}

// lastFailed reports whether the newest Health report is a failure.
func lastFailed(s *sink) (error, bool) {
	r, ok := s.Last()
	return r.Err, ok && r.Err != nil
}

func lastOK(s *sink) bool {
	r, ok := s.Last()
	return ok && r.Err == nil
}

// maxCalls is the most calls a loop spaced by p can make in window,
// counting the first, when nothing resets it: the k-th wait is at least
// p.Min(k).
func maxCalls(p backoff.Policy, window time.Duration) int {
	n, sum := 1, time.Duration(0)
	for k := 1; ; k++ {
		sum += p.Min(k)
		if sum > window {
			return n
		}
		n++
	}
}

// A Bot API that fails every call is reported failing from the first
// poll that fails, with the cause, and answering again from the first
// poll that is answered.
func TestPollOutcomesAreReported(t *testing.T) {
	for name, mode := range map[string]int{"502": 502, "connection closed": telegramtest.FailConnection} {
		t.Run(name, func(t *testing.T) {
			a, f := telegramtest.NewTelegramAdapter(t, telegramtest.TelegramOptions{})
			s := &countingSink{sink: newSink(), fake: f}
			adaptertest.Connect(t, a, s, 5*time.Second)
			adaptertest.Eventually(t, "a poll reported answered", func() bool { return lastOK(s.sink) })
			for _, r := range s.Reports() {
				if r.Platform != gh.PlatformTelegram {
					t.Fatalf("reported for %q", r.Platform)
				}
			}

			f.FailAll(mode)
			before := f.Calls("getUpdates")
			var at int
			adaptertest.Eventually(t, "a failed poll reported", func() bool {
				var ok bool
				at, ok = s.firstFailureAfter(0)
				return ok
			})
			// Every call counted after FailAll fails; the one held when it
			// came may still be answered. So the first failure is at the
			// latest the first call after it.
			if at > before+1 {
				t.Fatalf("the first failure reported was getUpdates call %d; calls after %d fail", at, before)
			}
			err, _ := lastFailed(s.sink)
			if err == nil {
				t.Fatal("the newest report is not the failure")
			}
			if chat.IsTokenRefused(err) {
				t.Fatalf("a failing server reported as a refused token: %v", err)
			}
			if want := map[int]string{502: "HTTP 502", telegramtest.FailConnection: "EOF"}[mode]; !strings.Contains(err.Error(), want) {
				t.Fatalf("cause %q does not say %q", err, want)
			}

			f.FailAll(0)
			adaptertest.Eventually(t, "an answered poll reported after recovery", func() bool { return lastOK(s.sink) })
			up := f.Say("alice", "alice", "back", false)
			s.received(t, up)
		})
	}
}

// A revoked token is reported refused at the first poll Telegram refuses,
// and the loop then waits at least RefusedPolicy's floor before asking
// again.
func TestRevokedTokenIsReportedAndNotHammered(t *testing.T) {
	a, f := telegramtest.NewTelegramAdapter(t, telegramtest.TelegramOptions{})
	s := &countingSink{sink: newSink(), fake: f}
	adaptertest.Connect(t, a, s, 5*time.Second)
	adaptertest.Eventually(t, "a poll reported answered", func() bool { return lastOK(s.sink) })
	f.RevokeToken()
	var at int
	adaptertest.Eventually(t, "the refusal reported", func() bool {
		var ok bool
		at, ok = s.firstFailureAfter(0)
		return ok
	})
	err, _ := lastFailed(s.sink)
	if !chat.IsTokenRefused(err) || !strings.Contains(err.Error(), "401 Unauthorized") {
		t.Fatalf("reported %v, want a refused token with Telegram's 401", err)
	}
	refusedAt, _ := s.Last()
	time.Sleep(2 * time.Second)
	n := f.Calls("getUpdates") - at + 1
	window := time.Since(refusedAt.At)
	limit := maxCalls(telegram.RefusedPolicy, window)
	t.Logf("%d getUpdates calls in %s from the refusal on, at most %d allowed", n, window, limit)
	if n > limit {
		t.Fatalf("%d getUpdates calls in %s after the refusal; the refused-token policy allows %d", n, window, limit)
	}
}

// A server that answers every poll at once with nothing (an emulator, a
// proxy that cuts long polls) is polled with backoff, not in a loop, and
// an update that comes meanwhile still arrives.
func TestEmptyPollsAtOnceAreSpaced(t *testing.T) {
	a, f := telegramtest.NewTelegramAdapter(t, telegramtest.TelegramOptions{EmptyPollsAtOnce: true})
	s := newSink()
	start := time.Now()
	adaptertest.Connect(t, a, s, 5*time.Second)
	time.Sleep(3 * time.Second)
	// The window is measured at the count, so a late wake-up widens the
	// bound with it.
	n := f.Calls("getUpdates")
	window := time.Since(start)
	limit := maxCalls(telegram.EmptyPollPolicy, window)
	t.Logf("%d getUpdates calls in %s, at most %d allowed", n, window, limit)
	if n > limit {
		t.Fatalf("%d getUpdates calls in %s against a server that answers at once; the empty-poll policy allows %d", n, window, limit)
	}
	if !lastOK(s) {
		t.Fatal("an empty poll that was answered is not reported as answered")
	}
	up := f.Say("alice", "alice", "still here", false)
	s.received(t, up)
	noFakeErrors(t, f)
}

// A server that fails every call at once is polled with backoff too.
func TestFailingPollsAreSpaced(t *testing.T) {
	for name, mode := range map[string]int{"502": 502, "connection closed": telegramtest.FailConnection} {
		t.Run(name, func(t *testing.T) {
			a, f := telegramtest.NewTelegramAdapter(t, telegramtest.TelegramOptions{})
			f.FailAll(mode)
			s := newSink()
			start := time.Now()
			adaptertest.Connect(t, a, s, 5*time.Second)
			time.Sleep(3 * time.Second)
			n := f.Calls("getUpdates")
			window := time.Since(start)
			limit := maxCalls(telegram.PollErrorPolicy, window)
			t.Logf("%d getUpdates calls in %s, at most %d allowed", n, window, limit)
			if n > limit {
				t.Fatalf("%d getUpdates calls in %s against a server that fails at once; the poll error policy allows %d", n, window, limit)
			}
			failures := 0
			for _, r := range s.Reports() {
				if r.Err != nil {
					failures++
				}
			}
			if failures == 0 {
				t.Fatal("no failure reported")
			}
		})
	}
}

// ProbeWebhook, the Test's receiving step, fails when the webhook is
// lost (deleted, or pointed elsewhere) or its deliveries fail, each with
// its cause, and passes when Telegram delivers to us.
func TestProbeWebhook(t *testing.T) {
	a, f := telegramtest.NewTelegramAdapter(t, telegramtest.TelegramOptions{Webhook: true})
	p, ok := a.(chat.WebhookProber)
	if !ok {
		t.Fatal("the webhook-mode adapter is no chat.WebhookProber")
	}
	ctx := context.Background()
	if err := p.ProbeWebhook(ctx); !errors.Is(err, telegram.ErrWebhookNotSet) {
		t.Fatalf("before Connect registered it: %v, want ErrWebhookNotSet", err)
	}
	s := newSink()
	stop := connect(t, a, s)
	adaptertest.Eventually(t, "the webhook registered", func() bool { return f.WebhookURL() != "" })
	ours := f.WebhookURL()
	if err := p.ProbeWebhook(ctx); err != nil {
		t.Fatalf("registered: %v", err)
	}

	f.DeleteWebhook()
	err := p.ProbeWebhook(ctx)
	if !errors.Is(err, telegram.ErrWebhookNotSet) {
		t.Fatalf("deleted: %v, want ErrWebhookNotSet", err)
	}
	t.Logf("deleted: %v", err)

	const other = "https://elsewhere.example/hook"
	f.SetWebhook(other, "")
	err = p.ProbeWebhook(ctx)
	if !errors.Is(err, telegram.ErrWebhookElsewhere) || !strings.Contains(err.Error(), other) {
		t.Fatalf("pointed elsewhere: %v, want ErrWebhookElsewhere naming %s", err, other)
	}
	t.Logf("elsewhere: %v", err)

	f.SetWebhook(ours, telegramtest.TelegramSecret)
	if err := p.ProbeWebhook(ctx); err != nil {
		t.Fatalf("set back: %v", err)
	}

	// Between Connects the webhook answers 503: the delivery fails and
	// Telegram says so until the update is delivered.
	stop()
	up := f.Say("alice", "alice", "anyone there?", false)
	adaptertest.Eventually(t, "a failed delivery", func() bool { return len(f.WebhookStatuses(up)) > 0 })
	err = p.ProbeWebhook(ctx)
	if !errors.Is(err, telegram.ErrWebhookFailing) || !strings.Contains(err.Error(), "Wrong response from the webhook: 503") {
		t.Fatalf("failing deliveries: %v, want ErrWebhookFailing with Telegram's last_error_message", err)
	}
	t.Logf("failing: %v", err)
	connect(t, a, s)
	s.received(t, up)
	adaptertest.Eventually(t, "the update acknowledged", func() bool { return f.Acked(up) })
	if err := p.ProbeWebhook(ctx); err != nil {
		t.Fatalf("delivered since the failure: %v", err)
	}
}

// In polling mode a webhook is what stops the polls: ProbeWebhook names
// it. A refused token is a refused token here too.
func TestProbeWebhookWhilePolling(t *testing.T) {
	a, f := telegramtest.NewTelegramAdapter(t, telegramtest.TelegramOptions{})
	p := a.(chat.WebhookProber)
	ctx := context.Background()
	if err := p.ProbeWebhook(ctx); err != nil {
		t.Fatalf("no webhook: %v", err)
	}
	f.SetWebhook("https://elsewhere.example/hook", "")
	if err := p.ProbeWebhook(ctx); !errors.Is(err, telegram.ErrWebhookSet) {
		t.Fatalf("a webhook set while polling: %v, want ErrWebhookSet", err)
	}
	f.RevokeToken()
	if err := p.ProbeWebhook(ctx); !chat.IsTokenRefused(err) {
		t.Fatalf("revoked token: %v, want a refused token", err)
	}
}

// connect runs a.Connect until the returned stop is called or the test
// ends, whichever is first; Connect must return nil promptly.
func connect(t *testing.T, a chat.Adapter, s chat.Sink) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Connect(ctx, s) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Connect: %v", err)
				}
			case <-time.After(5 * time.Second):
				t.Error("Connect did not return within 5s of its context ending")
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// telegramStatus is the gateway's view of Telegram.
func telegramStatus(t *testing.T, e *stacktest.Env) gateway.AdapterStatus {
	t.Helper()
	list, err := e.Gateway.Status(e.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range list {
		if s.Platform == gh.PlatformTelegram {
			return s
		}
	}
	t.Fatal("no telegram in the gateway's status")
	return gateway.AdapterStatus{}
}

func telegramGateway(t *testing.T, prepare func(*telegramtest.TelegramFake)) (*stacktest.Env, *telegramtest.TelegramFake) {
	var fake *telegramtest.TelegramFake
	e := stacktest.NewEnv(t, func(tb adaptertest.TB) (chat.Adapter, adaptertest.Fake) {
		a, f := telegramtest.NewTelegramAdapter(tb, telegramtest.TelegramOptions{})
		if prepare != nil {
			prepare(f)
		}
		fake = f
		return a, f
	}, stacktest.EnvOptions{})
	return e, fake
}

// The status /v1/adapters shows follows the platform: connected while
// Telegram answers, retrying with the cause from the first poll that
// fails, connected again once it answers.
func TestGatewayStatusFollowsFailingTelegram(t *testing.T) {
	e, f := telegramGateway(t, nil)
	e.Eventually("connected", func() bool { return telegramStatus(t, e).State == gateway.StateConnected })
	f.FailAll(502)
	var st gateway.AdapterStatus
	e.Eventually("retrying", func() bool {
		st = telegramStatus(t, e)
		return st.State == gateway.StateRetrying
	})
	if !strings.Contains(st.LastError, "502") || st.TokenRefused {
		t.Fatalf("retrying with %q (token refused %v), want the 502", st.LastError, st.TokenRefused)
	}
	f.FailAll(0)
	e.Eventually("connected again", func() bool { return telegramStatus(t, e).State == gateway.StateConnected })
	if st := telegramStatus(t, e); st.LastError != "" {
		t.Fatalf("connected with last error %q", st.LastError)
	}
}

// A wrong token, from the start or revoked while polling, is retrying
// with tokenRefused.
func TestGatewayStatusSaysTokenRefused(t *testing.T) {
	check := func(t *testing.T, e *stacktest.Env) {
		t.Helper()
		var st gateway.AdapterStatus
		e.Eventually("retrying with the token refused", func() bool {
			st = telegramStatus(t, e)
			return st.State == gateway.StateRetrying && st.TokenRefused
		})
		if !strings.Contains(st.LastError, "Unauthorized") {
			t.Fatalf("last error %q does not carry Telegram's answer", st.LastError)
		}
	}
	t.Run("from the start", func(t *testing.T) {
		e, f := telegramGateway(t, func(f *telegramtest.TelegramFake) { f.RevokeToken() })
		check(t, e)
		if n := f.Calls("getUpdates"); n != 0 {
			t.Fatalf("%d getUpdates with a token getMe found refused", n)
		}
	})
	t.Run("revoked while polling", func(t *testing.T) {
		e, f := telegramGateway(t, nil)
		e.Eventually("connected", func() bool { return telegramStatus(t, e).State == gateway.StateConnected })
		f.RevokeToken()
		check(t, e)
	})
}
