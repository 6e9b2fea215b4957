package slackchat_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/adapters/adaptertest"
	"github.com/gatehouse/gatehouse/adapters/slackchat"
	"github.com/gatehouse/gatehouse/adapters/slackchat/slacktest"
	"github.com/gatehouse/gatehouse/gateway"
	"github.com/gatehouse/gatehouse/gateway/chat"
	"github.com/gatehouse/gatehouse/internal/backoff"
	"github.com/gatehouse/gatehouse/internal/testing/stacktest"
)

// slackStatusEnv is a whole gateway holding a Socket Mode adapter aimed
// at a fake Slack; mutate adjusts the adapter's configuration.
func slackStatusEnv(t *testing.T, mutate func(*slacktest.SlackFake, *slackchat.Config)) (*stacktest.Env, *slacktest.SlackFake) {
	t.Helper()
	var fake *slacktest.SlackFake
	e := stacktest.NewEnv(t, func(tb adaptertest.TB) (chat.Adapter, adaptertest.Fake) {
		f := slacktest.NewSlack(tb)
		cfg := f.SocketConfig()
		if mutate != nil {
			mutate(f, &cfg)
		}
		a, err := slackchat.New(cfg)
		if err != nil {
			tb.Fatalf("slack adapter: %v", err)
		}
		fake = f
		return a, f
	}, stacktest.EnvOptions{})
	return e, fake
}

// slackStatus is what /v1/adapters says of Slack.
func slackStatus(e *stacktest.Env) gateway.AdapterStatus {
	e.T.Helper()
	st, err := e.Gateway.Status(e.Ctx)
	if err != nil {
		e.T.Fatal(err)
	}
	for _, s := range st {
		if s.Platform == "slack" {
			return s
		}
	}
	e.T.Fatalf("no slack in %+v", st)
	return gateway.AdapterStatus{}
}

// waitStatus waits until Slack's status satisfies ok, and returns it.
func waitStatus(e *stacktest.Env, what string, ok func(gateway.AdapterStatus) bool) gateway.AdapterStatus {
	e.T.Helper()
	var last gateway.AdapterStatus
	e.Eventually(what, func() bool {
		last = slackStatus(e)
		return ok(last)
	})
	return last
}

// While every Web API call fails (a Slack that is down, a proxy that
// serves something else), /v1/adapters says retrying with the cause —
// not connected, as it did — and connected again once Slack answers,
// with the socket back.
func TestStatusRetryingWhileEveryCallFailsAndConnectedAfter(t *testing.T) {
	for _, status := range []int{404, 503} {
		t.Run(strconv.Itoa(status), func(t *testing.T) {
			t.Parallel()
			e, f := slackStatusEnv(t, nil)
			waitStatus(e, "connected with a socket", func(s gateway.AdapterStatus) bool {
				return s.State == gateway.StateConnected && f.Connections() == 1
			})
			f.FailCalls(status)
			s := waitStatus(e, "retrying with the HTTP status", func(s gateway.AdapterStatus) bool {
				return s.State == gateway.StateRetrying && strings.Contains(s.LastError, strconv.Itoa(status))
			})
			if s.TokenRefused {
				t.Errorf("a %d is not a refused token: %+v", status, s)
			}
			f.FailCalls(0)
			waitStatus(e, "connected again with a socket", func(s gateway.AdapterStatus) bool {
				return s.State == gateway.StateConnected && s.LastError == "" && f.Connections() == 1
			})
			noErrors(t, f)
		})
	}
}

// A token Slack refuses is said to be refused: the bot token at
// auth.test, the app token at apps.connections.open.
func TestStatusSaysTheTokenWasRefused(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*slacktest.SlackFake, *slackchat.Config)
	}{
		{"bot token", func(_ *slacktest.SlackFake, c *slackchat.Config) { c.BotToken = "xoxb-1000-2000-revoked" }},
		{"app token", func(_ *slacktest.SlackFake, c *slackchat.Config) { c.AppToken = "xapp-1-A0FAKEAPP1-3000-revoked" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e, f := slackStatusEnv(t, tc.mutate)
			s := waitStatus(e, "retrying, the token refused", func(s gateway.AdapterStatus) bool {
				return s.State == gateway.StateRetrying && s.TokenRefused
			})
			if !strings.Contains(s.LastError, "invalid_auth") {
				t.Errorf("the cause does not say what Slack said: %+v", s)
			}
			if f.Connections() != 0 {
				t.Errorf("%d sockets open with a refused token", f.Connections())
			}
		})
	}
}

// attemptsAllowed is the most attempts a loop paced by p can make within
// w of its first: one at once, then one after each wait, the n-th wait
// at least p.Min(n).
func attemptsAllowed(p backoff.Policy, w time.Duration) int {
	n, spent := 1, time.Duration(0)
	for {
		spent += p.Min(n)
		if spent > w {
			return n
		}
		n++
	}
}

// Against a Slack that fails at once, every reconnect waits its turn:
// slack-go on its own retries apps.connections.open after 100 ms, 200 ms
// … (up to 5 minutes apart), and reopens a socket that closed with no
// pause at all. Counted at the fake over a window from the first
// attempt, the attempts are never more than the policy allows: the
// adapter's own (Config.Reconnect's default) for a socket that closes
// and for auth.test, the gateway's (the same 1s–1m; 30s–10m for a
// refused token) once Connect has handed a failed connections.open to
// it.
func TestReconnectsAgainstAnInstantlyFailingSlackKeepThePolicy(t *testing.T) {
	const window = 3 * time.Second
	for _, tc := range []struct {
		name string
		// fail makes the fake fail; attempts are when it saw the loop's
		// tries.
		fail     func(*slacktest.SlackFake)
		attempts func(*slacktest.SlackFake) []time.Time
		policy   backoff.Policy
		// gateway: the loop is the gateway's, through a whole stack.
		gateway bool
		// cause is in the failure reported.
		cause   string
		refused bool
	}{
		{
			name:     "the socket closes after its hello",
			fail:     func(f *slacktest.SlackFake) { f.DropSockets(true) },
			attempts: func(f *slacktest.SlackFake) []time.Time { return f.SocketDials() },
			cause:    "closed",
		},
		{
			name:     "auth.test answers 503",
			fail:     func(f *slacktest.SlackFake) { f.FailCalls(503) },
			attempts: func(f *slacktest.SlackFake) []time.Time { return f.Calls("auth.test") },
			cause:    "503",
		},
		{
			name:     "connections.open answers 503",
			fail:     func(f *slacktest.SlackFake) { f.FailMethod("apps.connections.open", 503) },
			attempts: func(f *slacktest.SlackFake) []time.Time { return f.Calls("apps.connections.open") },
			gateway:  true,
			cause:    "503",
		},
		{
			name:     "connections.open refuses the app token with 401",
			fail:     func(f *slacktest.SlackFake) { f.FailMethod("apps.connections.open", 401) },
			attempts: func(f *slacktest.SlackFake) []time.Time { return f.Calls("apps.connections.open") },
			policy:   slackchat.RefusedReconnect,
			gateway:  true,
			cause:    "401",
			refused:  true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var f *slacktest.SlackFake
			var failure func() error
			if tc.gateway {
				var e *stacktest.Env
				e, f = slackStatusEnv(t, func(f *slacktest.SlackFake, _ *slackchat.Config) { tc.fail(f) })
				failure = func() error {
					if s := slackStatus(e); s.State == gateway.StateRetrying && s.LastError != "" {
						if s.TokenRefused {
							return chat.TokenRefused(errors.New(s.LastError))
						}
						return errors.New(s.LastError)
					}
					return nil
				}
			} else {
				f = slacktest.NewSlack(t)
				tc.fail(f)
				// The adapter's own default policy: what production runs.
				a, err := slackchat.New(f.SocketConfig())
				if err != nil {
					t.Fatal(err)
				}
				rec := newRecorder()
				adaptertest.Connect(t, a, rec, 10*time.Second)
				failure = func() error {
					var last error
					for _, r := range rec.Reports() {
						if r.Err != nil {
							last = r.Err
						}
					}
					return last
				}
			}
			stacktest.Eventually(t, "the first attempt", func() bool { return len(tc.attempts(f)) > 0 })
			t0 := tc.attempts(f)[0]
			if !tc.refused {
				// It keeps trying: the bound is not met by giving up.
				stacktest.Eventually(t, "a second attempt", func() bool { return len(tc.attempts(f)) > 1 })
			}
			time.Sleep(time.Until(t0.Add(window)) + 200*time.Millisecond)
			in := 0
			for _, at := range tc.attempts(f) {
				if !at.After(t0.Add(window)) {
					in++
				}
			}
			max := attemptsAllowed(tc.policy, window)
			t.Logf("%d attempts within %s of the first; the policy allows %d", in, window, max)
			if in > max {
				t.Errorf("%d attempts within %s of the first; the policy allows %d (%v)", in, window, max, tc.attempts(f))
			}
			var err error
			stacktest.Eventually(t, "the failure reported", func() bool { err = failure(); return err != nil })
			if !strings.Contains(err.Error(), tc.cause) {
				t.Errorf("the failure reported is %v, want one saying %q", err, tc.cause)
			}
			if tc.refused != chat.IsTokenRefused(err) {
				t.Errorf("token refused: %v, want %v (%v)", chat.IsTokenRefused(err), tc.refused, err)
			}
		})
	}
}

// The socket's round trips are evidence: hello is a success, a socket
// that closed a failure, the next hello a success again.
func TestSocketReportsHelloAndClose(t *testing.T) {
	rec := newRecorder()
	f := slacktest.NewSlack(t)
	a, err := slackchat.New(f.SocketConfig())
	if err != nil {
		t.Fatal(err)
	}
	adaptertest.Connect(t, a, rec, 10*time.Second)
	stacktest.Eventually(t, "hello reported", func() bool {
		last, ok := rec.Last()
		return ok && last.Err == nil && f.Connections() == 1
	})
	f.DropSockets(true)
	stacktest.Eventually(t, "the closed socket reported", func() bool {
		last, ok := rec.Last()
		return ok && last.Err != nil && strings.Contains(last.Err.Error(), "closed")
	})
	f.DropSockets(false)
	stacktest.Eventually(t, "the socket back and reported", func() bool {
		last, ok := rec.Last()
		return ok && last.Err == nil && f.Connections() == 1
	})
	for _, r := range rec.Reports() {
		if errors.Is(r.Err, context.Canceled) {
			t.Errorf("a cancellation reported as the platform failing: %v", r.Err)
		}
	}
}
