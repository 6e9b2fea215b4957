package discord_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/adapters/adaptertest"
	"github.com/gatehouse/gatehouse/adapters/discord"
	"github.com/gatehouse/gatehouse/adapters/discord/discordtest"
	"github.com/gatehouse/gatehouse/gateway"
	"github.com/gatehouse/gatehouse/gateway/chat"
	"github.com/gatehouse/gatehouse/internal/backoff"
	"github.com/gatehouse/gatehouse/internal/testing/stacktest"
)

func lastOK(s *recSink) bool {
	r, ok := s.Last()
	return ok && r.Err == nil
}

// okReports counts the round trips reported as having succeeded.
func okReports(s *recSink) int {
	n := 0
	for _, r := range s.Reports() {
		if r.Err == nil {
			n++
		}
	}
	return n
}

// reported finds a failure report whose cause says want.
func reported(s *recSink, want string) (error, bool) {
	for _, r := range s.Reports() {
		if r.Err != nil && strings.Contains(r.Err.Error(), want) {
			return r.Err, true
		}
	}
	return nil, false
}

// maxCalls is the most attempts a loop spaced by p can make in window,
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

func newAdapter(t *testing.T, f *discordtest.DiscordFake, token string) chat.Adapter {
	t.Helper()
	a, err := discord.New(discord.Config{
		Token: token, APIURL: f.URL(),
		Logger: slog.New(slog.NewTextHandler(discordtest.NewDiscordLogWriter(t), &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// READY and every heartbeat ACK are reported as round trips that
// succeeded; a Discord that fails every call is reported failing with
// the cause from the socket's loss on, and answering again from the
// first READY or RESUMED after it recovers.
func TestGatewayOutcomesAreReported(t *testing.T) {
	t.Parallel()
	e := start(t, discord.Config{})
	adaptertest.Eventually(t, "READY reported", func() bool { return lastOK(e.sink) })
	// The fake's heartbeat interval is 1 s: ACKs keep coming.
	n := okReports(e.sink)
	adaptertest.Eventually(t, "heartbeat ACKs reported", func() bool { return okReports(e.sink) >= n+2 })
	for _, r := range e.sink.Reports() {
		if r.Platform != gh.PlatformDiscord {
			t.Fatalf("reported for %q", r.Platform)
		}
	}

	e.f.FailAll(true)
	adaptertest.Eventually(t, "the lost socket reported", func() bool {
		_, ok := reported(e.sink, "gateway socket closed")
		return ok
	})
	var err error
	adaptertest.Eventually(t, "the 502 reported", func() bool {
		var ok bool
		err, ok = reported(e.sink, "502")
		return ok
	})
	if chat.IsTokenRefused(err) {
		t.Fatalf("a failing Discord reported as a refused token: %v", err)
	}
	if lastOK(e.sink) {
		t.Fatal("the newest report is a success while every call fails")
	}

	e.f.FailAll(false)
	adaptertest.Eventually(t, "connected again", func() bool { return lastOK(e.sink) && e.f.Connected() })
	id := e.f.Say("room", "alice", "back", false)
	adaptertest.Eventually(t, "the message after recovery", func() bool { return len(e.sink.calls(id)) == 1 })
	noErrors(t, e.f)
}

// A token revoked while connected ends Connect at the first RESUME the
// gateway refuses with 4004, reported as a refused token: one socket
// after the revocation, no loop. A wrong token from the start ends it at
// the first IDENTIFY.
func TestRefusedTokenEndsConnect(t *testing.T) {
	t.Parallel()
	run := func(t *testing.T, a chat.Adapter, s *recSink) <-chan error {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		t.Cleanup(cancel)
		done := make(chan error, 1)
		go func() { done <- a.Connect(ctx, s) }()
		return done
	}
	check := func(t *testing.T, done <-chan error, s *recSink) {
		t.Helper()
		var err error
		select {
		case err = <-done:
		case <-time.After(20 * time.Second):
			t.Fatal("Connect still running 20s after the token was refused")
		}
		if !chat.IsTokenRefused(err) || !strings.Contains(err.Error(), "4004") {
			t.Fatalf("Connect = %v, want a refused token with close code 4004", err)
		}
		r, ok := s.Last()
		if !ok || !chat.IsTokenRefused(r.Err) {
			t.Fatalf("last report %v, want the refused token", r.Err)
		}
	}
	t.Run("revoked while connected", func(t *testing.T) {
		t.Parallel()
		f := discordtest.NewDiscord(t)
		s := &recSink{}
		done := run(t, newAdapter(t, f, f.Token()), s)
		adaptertest.Eventually(t, "the gateway session", f.Connected)
		before := f.Sockets()
		f.RevokeToken()
		check(t, done, s)
		if n := f.Sockets() - before; n != 1 {
			t.Fatalf("%d sockets after the revocation, want the one RESUME Discord refused", n)
		}
	})
	t.Run("wrong from the start", func(t *testing.T) {
		t.Parallel()
		f := discordtest.NewDiscord(t)
		s := &recSink{}
		check(t, run(t, newAdapter(t, f, "not-the-token"), s), s)
		if n := f.Sockets(); n != 1 {
			t.Fatalf("%d sockets with a wrong token, want 1", n)
		}
	})
}

// Against a Discord that fails every call at once, or a gateway whose
// sockets close at once, the reconnect loop keeps within
// ReconnectPolicy: its attempts (a GET /gateway or a socket each) are
// counted over a window and held to the most the policy's shortest
// waits allow.
func TestFailingGatewayIsSpaced(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		fail     func(*discordtest.DiscordFake)
		attempts func(*discordtest.DiscordFake) int
		cause    string
	}{
		"every call fails": {
			fail:     func(f *discordtest.DiscordFake) { f.FailAll(true) },
			attempts: func(f *discordtest.DiscordFake) int { return f.Calls("GET gateway") + f.Sockets() },
			cause:    "502",
		},
		"sockets close at once": {
			fail:     func(f *discordtest.DiscordFake) { f.FailSockets(true) },
			attempts: func(f *discordtest.DiscordFake) int { return f.Sockets() },
			cause:    "EOF",
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := discordtest.NewDiscord(t)
			tc.fail(f)
			s := &recSink{}
			a := newAdapter(t, f, f.Token())
			start := time.Now()
			adaptertest.Connect(t, a, s, 15*time.Second)
			time.Sleep(3 * time.Second)
			// The window is measured at the count, so a late wake-up
			// widens the bound with it.
			n := tc.attempts(f)
			window := time.Since(start)
			limit := maxCalls(discord.ReconnectPolicy, window)
			t.Logf("%d attempts in %s, at most %d allowed", n, window, limit)
			if n > limit {
				t.Fatalf("%d gateway attempts in %s against a Discord that fails at once; the reconnect policy allows %d", n, window, limit)
			}
			if n < 2 {
				t.Fatalf("%d attempts in %s: the loop gave up instead of retrying", n, window)
			}
			err, ok := reported(s, tc.cause)
			if !ok {
				t.Fatalf("no failure reported with %q: %v", tc.cause, s.Reports())
			}
			if chat.IsTokenRefused(err) {
				t.Fatalf("reported as a refused token: %v", err)
			}
			if lastOK(s) {
				t.Fatal("the newest report is a success")
			}
		})
	}
}

// discordStatus is the gateway's view of Discord.
func discordStatus(t *testing.T, e *stacktest.Env) gateway.AdapterStatus {
	t.Helper()
	list, err := e.Gateway.Status(e.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range list {
		if s.Platform == gh.PlatformDiscord {
			return s
		}
	}
	t.Fatal("no discord in the gateway's status")
	return gateway.AdapterStatus{}
}

func discordGateway(t *testing.T, prepare func(*discordtest.DiscordFake)) (*stacktest.Env, *discordtest.DiscordFake) {
	var fake *discordtest.DiscordFake
	e := stacktest.NewEnv(t, func(tb adaptertest.TB) (chat.Adapter, adaptertest.Fake) {
		a, f := discordtest.DiscordFactory(tb)
		fake = f.(*discordtest.DiscordFake)
		if prepare != nil {
			prepare(fake)
		}
		return a, f
	}, stacktest.EnvOptions{})
	return e, fake
}

// The status /v1/adapters shows follows Discord: connected while the
// socket answers, retrying with the cause once every call fails,
// connected again after it recovers.
func TestGatewayStatusFollowsFailingDiscord(t *testing.T) {
	e, f := discordGateway(t, nil)
	e.Eventually("connected", func() bool { return discordStatus(t, e).State == gateway.StateConnected })
	f.FailAll(true)
	e.Eventually("retrying", func() bool { return discordStatus(t, e).State == gateway.StateRetrying })
	var st gateway.AdapterStatus
	e.Eventually("retrying with the 502", func() bool {
		st = discordStatus(t, e)
		return st.State == gateway.StateRetrying && strings.Contains(st.LastError, "502")
	})
	if st.TokenRefused {
		t.Fatalf("a failing Discord said token refused: %q", st.LastError)
	}
	f.FailAll(false)
	e.Eventually("connected again", func() bool { return discordStatus(t, e).State == gateway.StateConnected })
	if st := discordStatus(t, e); st.LastError != "" {
		t.Fatalf("connected with last error %q", st.LastError)
	}
}

// A refused token, from the start or revoked while connected, is
// retrying with tokenRefused and Discord's answer.
func TestGatewayStatusSaysTokenRefused(t *testing.T) {
	check := func(t *testing.T, e *stacktest.Env, want ...string) {
		t.Helper()
		var st gateway.AdapterStatus
		e.Eventually("retrying with the token refused", func() bool {
			st = discordStatus(t, e)
			return st.State == gateway.StateRetrying && st.TokenRefused
		})
		for _, w := range want {
			if strings.Contains(st.LastError, w) {
				return
			}
		}
		t.Fatalf("last error %q does not carry Discord's answer (%q)", st.LastError, want)
	}
	t.Run("from the start", func(t *testing.T) {
		e, f := discordGateway(t, func(f *discordtest.DiscordFake) { f.RevokeToken() })
		check(t, e, "401")
		if n := f.Sockets(); n != 0 {
			t.Fatalf("%d gateway sockets with a token GET /users/@me found refused", n)
		}
	})
	t.Run("revoked while connected", func(t *testing.T) {
		e, f := discordGateway(t, nil)
		e.Eventually("connected", func() bool { return discordStatus(t, e).State == gateway.StateConnected })
		f.RevokeToken()
		check(t, e, "4004", "401")
	})
}
