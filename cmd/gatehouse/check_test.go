package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"os/exec"
	"strings"
	"testing"

	"github.com/gatehouse/gatehouse/adapters/telegram/telegramtest"
)

// checkRun runs `gatehouse check args...` against the gateway p, with its
// environment (its address and data directory: the API token is read from
// its store), and returns the exit code and what it printed.
func checkRun(t *testing.T, p *proc, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(binary(t), append([]string{"check"}, args...)...)
	cmd.Env = p.cmd.Env
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), out.String() + errOut.String()
}

// readyState is the platform's state as /readyz shows it.
func readyState(t *testing.T, p *proc, platform string) string {
	t.Helper()
	resp, err := http.Get("http://" + p.addr + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r struct {
		Platforms []struct{ Platform, State string }
	}
	_ = json.NewDecoder(resp.Body).Decode(&r)
	for _, s := range r.Platforms {
		if s.Platform == platform {
			return s.State
		}
	}
	return ""
}

func TestCheckCommandNamesARefusedToken(t *testing.T) {
	tg := telegramtest.NewTelegram(t, telegramtest.TelegramOptions{})
	p := start(t, "TELEGRAM_BOT_TOKEN=987654321:AAWrongTokenForThisBot_0123456789abcdef", "TELEGRAM_API_URL="+tg.URL, "TELEGRAM_ALLOWED_USERS=*")
	waitUntil(t, "telegram retrying", func() bool { return readyState(t, p, "telegram") == "retrying" })
	code, out := checkRun(t, p, "telegram")
	t.Logf("gatehouse check telegram:\n%s", out)
	if code != 1 || !strings.Contains(out, "fail  token") || !strings.Contains(out, "TELEGRAM_BOT_TOKEN") || !strings.Contains(out, "failed at token") {
		t.Fatalf("a refused token: exit %d, want 1 naming the token step and TELEGRAM_BOT_TOKEN", code)
	}
}

func TestCheckCommandPassesAWorkingTelegram(t *testing.T) {
	tg := telegramtest.NewTelegram(t, telegramtest.TelegramOptions{})
	p := start(t, "TELEGRAM_BOT_TOKEN="+tg.Token, "TELEGRAM_API_URL="+tg.URL, "TELEGRAM_ALLOWED_USERS="+tg.UserID("alice"))
	waitUntil(t, "telegram connected", func() bool { return readyState(t, p, "telegram") == "connected" })
	code, out := checkRun(t, p, "telegram")
	t.Logf("gatehouse check telegram:\n%s", out)
	if code != 0 || strings.Contains(out, "fail ") || !strings.Contains(out, "pass  token") || !strings.Contains(out, "every step passed") {
		t.Fatalf("a working Telegram: exit %d, want 0 with no failing step", code)
	}
	// A platform the gateway does not serve: the gateway says so.
	if code, out := checkRun(t, p, "slack"); code != 1 || !strings.Contains(out, "slack") || !strings.Contains(out, "404") {
		t.Fatalf("check slack on a Telegram gateway: exit %d: %s", code, out)
	}
}

func TestCheckCommandLine(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"check", "irc"}, &out, &errOut, func(string) string { return "" }); code != 2 || !strings.Contains(errOut.String(), "telegram|discord|slack") {
		t.Fatalf("check irc: exit %d: %s", code, errOut.String())
	}
	if code := run([]string{"check"}, &out, &errOut, func(string) string { return "" }); code != 2 {
		t.Fatalf("check with no platform: exit %d", code)
	}
	out.Reset()
	if code := run([]string{"check", "--help"}, &out, &errOut, func(string) string { return "" }); code != 0 || !strings.Contains(out.String(), "last_message") {
		t.Fatalf("check --help: exit %d: %s", code, out.String())
	}
}

// A webhook removed behind the gateway's back (another program with the
// bot's token called deleteWebhook): `gatehouse check` names the
// receiving step and what to do.
func TestCheckCommandNamesALostWebhook(t *testing.T) {
	tg := telegramtest.NewTelegram(t, telegramtest.TelegramOptions{})
	// Registered at start; nothing is delivered to it in this test.
	p := start(t, append([]string{"TELEGRAM_WEBHOOK_SECRET=s3cret", "TELEGRAM_WEBHOOK_URL=http://127.0.0.1:1/hooks/telegram"}, telegramEnvs(tg)...)...)
	waitUntil(t, "the webhook registered", func() bool { return tg.WebhookURL() != "" })
	if code, out := checkRun(t, p, "telegram"); strings.Contains(out, "fail  receiving") {
		t.Fatalf("receiving fails with the webhook in place: exit %d\n%s", code, out)
	}
	tg.DeleteWebhook()
	code, out := checkRun(t, p, "telegram")
	t.Logf("gatehouse check telegram:\n%s", out)
	if code != 1 || !strings.Contains(out, "fail  receiving") || !strings.Contains(out, "/hooks/telegram") {
		t.Fatalf("a lost webhook: exit %d, want 1 naming the receiving step and the hook", code)
	}
}
