package gateway_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/adapters/adaptertest"
	"github.com/gatehouse/gatehouse/adapters/telegram"
	"github.com/gatehouse/gatehouse/adapters/telegram/telegramtest"
	"github.com/gatehouse/gatehouse/gateway"
	"github.com/gatehouse/gatehouse/gateway/chat"
	"github.com/gatehouse/gatehouse/internal/testing/stacktest"
	"github.com/gatehouse/gatehouse/store"
)

// The Test, walked through the real Telegram adapter against the strict
// Telegram fake.

func check(t *testing.T, e *stacktest.Env, platform string) gateway.CheckResult {
	t.Helper()
	res, err := e.Gateway.Check(e.Ctx, platform)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range res.Steps {
		names = append(names, s.Name)
		t.Logf("%s %s: %s %s", s.Name, s.Result, s.Detail, s.Fix)
	}
	if got := strings.Join(names, ","); got != "token,lease,receiving,last_message,reply" {
		t.Fatalf("steps %s, want token,lease,receiving,last_message,reply in that order", got)
	}
	return res
}

func step(res gateway.CheckResult, name string) gateway.CheckStep {
	for _, s := range res.Steps {
		if s.Name == name {
			return s
		}
	}
	return gateway.CheckStep{}
}

func state(e *stacktest.Env, platform string) gateway.AdapterStatus {
	e.T.Helper()
	st, err := e.Gateway.Status(e.Ctx)
	if err != nil {
		e.T.Fatal(err)
	}
	for _, s := range st {
		if s.Platform == platform {
			return s
		}
	}
	e.T.Fatalf("no status for %s", platform)
	return gateway.AdapterStatus{}
}

func TestCheckPassesAWorkingPlatform(t *testing.T) {
	e, _ := telegramEnv(t, telegramtest.TelegramOptions{}, stacktest.EnvOptions{})
	session(e, "c1")
	e.Eventually("the reply recorded as sent", func() bool {
		rows, err := e.Store.ListOutbox(e.Ctx, store.OutboxFilter{Platform: gh.PlatformTelegram, Limit: 1})
		return err == nil && len(rows) == 1 && rows[0].State == store.OutboxSent
	})
	res := check(t, e, gh.PlatformTelegram)
	if !res.OK || res.Failed != "" {
		t.Fatalf("a working platform fails the Test at %q", res.Failed)
	}
	for _, s := range res.Steps {
		if s.Result != gateway.CheckPass {
			t.Errorf("step %s: %s (%s), want pass", s.Name, s.Result, s.Detail)
		}
	}
	if d := step(res, gateway.StepLease).Detail; !strings.Contains(d, "held here") {
		t.Errorf("lease: %q, want held here", d)
	}
	if d := step(res, gateway.StepLastMessage).Detail; !strings.Contains(d, "handed on") {
		t.Errorf("last message: %q, want handed on", d)
	}
	if d := step(res, gateway.StepReply).Detail; !strings.Contains(d, "delivered") {
		t.Errorf("reply: %q, want delivered", d)
	}
}

func TestCheckNamesARefusedToken(t *testing.T) {
	e := stacktest.NewEnv(t, func(tb adaptertest.TB) (chat.Adapter, adaptertest.Fake) {
		f := telegramtest.NewTelegram(tb, telegramtest.TelegramOptions{})
		a, err := telegram.New(telegram.Config{Token: "987654321:AAWrongTokenForThisBot_0123456789abcdef", APIURL: f.URL, PollTimeout: time.Second,
			Logger: slog.New(slog.NewTextHandler(adaptertest.LogWriter(tb), nil))})
		if err != nil {
			tb.Fatalf("telegram adapter: %v", err)
		}
		return a, f
	}, stacktest.EnvOptions{})
	e.Eventually("the state to say the token was refused", func() bool { return state(e, gh.PlatformTelegram).TokenRefused })
	res := check(t, e, gh.PlatformTelegram)
	if res.OK || res.Failed != gateway.StepToken {
		t.Fatalf("a refused token fails the Test at %q, want the token step", res.Failed)
	}
	tok := step(res, gateway.StepToken)
	if !strings.Contains(tok.Fix, "TELEGRAM_BOT_TOKEN") {
		t.Errorf("token fix %q does not name TELEGRAM_BOT_TOKEN", tok.Fix)
	}
	if l := step(res, gateway.StepLease); l.Result != gateway.CheckPass {
		t.Errorf("lease: %s (%s): the replica holds it while it retries", l.Result, l.Detail)
	}
	if r := step(res, gateway.StepReceiving); r.Result != gateway.CheckFail || !strings.Contains(r.Fix, "TELEGRAM_BOT_TOKEN") {
		t.Errorf("receiving: %s (%s; %s), want a failure naming the token", r.Result, r.Detail, r.Fix)
	}
}

// Standby is not an outage: another replica holds the lease and runs the
// connection.
func TestCheckStandbyPasses(t *testing.T) {
	e, _ := telegramEnv(t, telegramtest.TelegramOptions{}, stacktest.EnvOptions{NoStart: true})
	now := time.Now().UTC()
	if ok, err := e.Store.AcquirePlatformLease(e.Ctx, "platform:telegram", "replica-b", now, now.Add(time.Hour)); err != nil || !ok {
		t.Fatalf("lease for replica-b: %v %v", ok, err)
	}
	if err := e.Gateway.Start(e.Ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		e.Gateway.Stop(ctx)
	})
	e.Eventually("standby", func() bool { return state(e, gh.PlatformTelegram).State == gateway.StateStandby })
	res := check(t, e, gh.PlatformTelegram)
	if !res.OK {
		t.Fatalf("a standby replica fails the Test at %q", res.Failed)
	}
	if l := step(res, gateway.StepLease); l.Result != gateway.CheckPass || !strings.Contains(l.Detail, "replica-b") {
		t.Errorf("lease: %s (%s), want a pass naming replica-b", l.Result, l.Detail)
	}
	if r := step(res, gateway.StepReceiving); r.Result != gateway.CheckSkip {
		t.Errorf("receiving: %s (%s), want a skip: the connection runs elsewhere", r.Result, r.Detail)
	}
	if m := step(res, gateway.StepLastMessage); m.Result != gateway.CheckSkip {
		t.Errorf("last message: %s (%s), want a skip: nothing received", m.Result, m.Detail)
	}
}

func TestCheckNamesADroppedMessage(t *testing.T) {
	e, fake := telegramEnv(t, telegramtest.TelegramOptions{}, stacktest.EnvOptions{})
	e.Receive(fake.Say("c1", "mallory", "hello", false))
	res := check(t, e, gh.PlatformTelegram)
	m := step(res, gateway.StepLastMessage)
	if res.Failed != gateway.StepLastMessage || !strings.Contains(m.Detail, "not_allowed") || !strings.Contains(m.Fix, "TELEGRAM_ALLOWED_USERS") {
		t.Fatalf("failed at %q; last message %s (%s; %s), want a failure naming not_allowed and TELEGRAM_ALLOWED_USERS", res.Failed, m.Result, m.Detail, m.Fix)
	}
}

func TestCheckUnknownPlatform(t *testing.T) {
	e, _ := telegramEnv(t, telegramtest.TelegramOptions{}, stacktest.EnvOptions{NoStart: true})
	if _, err := e.Gateway.Check(e.Ctx, "irc"); !gh.IsCode(err, gh.CodeNotFound) {
		t.Fatalf("Check(irc) = %v, want not_found", err)
	}
}

// A webhook removed behind the gateway's back (another program with the
// token called deleteWebhook, or set its own URL): the Test's receiving
// step names it, through the real adapter's getWebhookInfo against the
// fake; with the webhook in place the step passes.
func TestCheckNamesALostWebhook(t *testing.T) {
	var fake *telegramtest.TelegramFake
	e := stacktest.NewEnv(t, func(tb adaptertest.TB) (chat.Adapter, adaptertest.Fake) {
		a, f := telegramtest.NewTelegramAdapter(tb, telegramtest.TelegramOptions{Webhook: true})
		fake = f
		return a, f
	}, stacktest.EnvOptions{})
	e.Eventually("the lease held and the webhook set", func() bool {
		return state(e, gh.PlatformTelegram).LeaseOwner != "" && fake.WebhookURL() != ""
	})
	if r := step(check(t, e, gh.PlatformTelegram), gateway.StepReceiving); r.Result != gateway.CheckPass {
		t.Fatalf("receiving with the webhook in place: %s (%s)", r.Result, r.Detail)
	}
	fake.DeleteWebhook()
	res := check(t, e, gh.PlatformTelegram)
	r := step(res, gateway.StepReceiving)
	if res.Failed != gateway.StepReceiving || !strings.Contains(strings.ToLower(r.Detail), "webhook") || !strings.Contains(r.Fix, "/hooks/telegram") {
		t.Fatalf("failed at %q; receiving %s (%s; %s), want the receiving step failing with the platform's answer", res.Failed, r.Result, r.Detail, r.Fix)
	}
}
