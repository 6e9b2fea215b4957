package main

import (
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/adapters/adaptertest"
	"github.com/gatehouse/gatehouse/adapters/telegram/telegramtest"
	"github.com/gatehouse/gatehouse/gateway/chat"
	"github.com/gatehouse/gatehouse/models/modeltest"
)

// The gateway as a Telegram user meets it, with real processes: the
// binary long-polls a fake Bot API on loopback and is killed with SIGKILL
// in the middle of a turn and of an approval.

func telegramEnvs(fake *telegramtest.TelegramFake) []string {
	return []string{"TELEGRAM_BOT_TOKEN=" + fake.Token, "TELEGRAM_API_URL=" + fake.URL, "TELEGRAM_ALLOWED_USERS=" + fake.UserID("alice")}
}

func chatTexts(fake *telegramtest.TelegramFake, chat string) []string {
	var out []string
	for _, m := range fake.Messages(chat) {
		out = append(out, m.Text)
	}
	return out
}

func count(list []string, want string) int {
	n := 0
	for _, s := range list {
		if strings.Contains(s, want) {
			n++
		}
	}
	return n
}

func TestTelegramTurnKilledMidStreamIsAnsweredOnce(t *testing.T) {
	tg := telegramtest.NewTelegram(t, telegramtest.TelegramOptions{})
	model := modeltest.NewOpenAI(t, "test-key")
	model.Push(modeltest.Reply{Stall: true, Text: "this stream never finishes"})
	model.SetDefault(modeltest.Reply{Text: "The one answer."})
	envs := append([]string{"GATEHOUSE_DATA_DIR=" + t.TempDir(), "GATEHOUSE_MODEL=openai:test-model", "OPENAI_API_KEY=test-key",
		"OPENAI_BASE_URL=" + model.BaseURL(), "GATEHOUSE_LEASE_TTL=1s", "GATEHOUSE_MODEL_RETRIES=1"}, telegramEnvs(tg)...)
	p := start(t, envs...)
	upd := tg.Say("alice", "alice", "hello", false)
	waitUntil(t, "the model request", func() bool { return len(model.Requests()) == 1 })
	waitUntil(t, "the update acknowledged", func() bool { return tg.Acked(upd) })
	time.Sleep(100 * time.Millisecond) // the first delta is streaming
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p.done

	p2 := start(t, envs...)
	waitUntil(t, "the answer in the chat", func() bool { return count(chatTexts(tg, "alice"), "The one answer.") == 1 })
	time.Sleep(1500 * time.Millisecond) // room for a second copy to show up, if one were coming
	if got := chatTexts(tg, "alice"); count(got, "The one answer.") != 1 || count(got, "never finishes") != 0 || len(got) != 1 {
		t.Fatalf("after the kill the chat holds %q; want the one answer, once", got)
	}
	p2.stopWith(t, syscall.SIGTERM)
}

func TestTelegramApprovalSurvivesAKillAndSendsOneMail(t *testing.T) {
	tg := telegramtest.NewTelegram(t, telegramtest.TelegramOptions{})
	s := newEmailStack(t, telegramEnvs(tg)...)
	p := start(t, s.envs...)
	tg.Say("alice", "alice", "Email Sara that the report is ready.", false)
	var card adaptertest.Message
	waitUntil(t, "the approval card in the chat", func() bool {
		for _, m := range tg.Messages("alice") {
			if len(m.Buttons) >= 2 {
				card = m
				return true
			}
		}
		return false
	})
	if !strings.Contains(card.Text, "email_send") || !strings.Contains(card.Text, "sara@example.com") {
		t.Fatalf("the card must say what will be sent to whom: %q", card.Text)
	}
	var approve string
	for _, b := range card.Buttons {
		if _, c, ok := chat.ParseButtonData(b); ok && c == chat.ChoiceApprove {
			approve = b
		}
	}
	// The kill comes while the approval waits, once the card's send is
	// recorded: a kill between the send and its record leaves the row
	// "sending", which by design is never sent again and holds the chat's
	// queue until its claim expires (minutes).
	waitUntil(t, "the card's send recorded", func() bool {
		return strings.Contains(getText(t, "http://"+p.addr+"/v1/outbox?state=sent"), `"kind":"card"`)
	})
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p.done

	p2 := start(t, s.envs...)
	var reply string
	waitUntil(t, "the press answered by the restarted gateway", func() bool {
		r, err := tg.Press("alice", card.ID, approve, "alice")
		reply = r
		return err == nil
	})
	if !strings.Contains(reply, "Approved") {
		t.Fatalf("the presser hears %q", reply)
	}
	waitUntil(t, "the answer after the mail", func() bool { return count(chatTexts(tg, "alice"), "Done.") == 1 })
	if n := len(s.smtp.Mails()); n != 1 {
		t.Fatalf("%d mails sent, want exactly 1", n)
	}
	waitUntil(t, "the card edited to its outcome", func() bool {
		for _, m := range tg.Messages("alice") {
			if m.ID == card.ID {
				return len(m.Buttons) == 0 && strings.Contains(m.Text, "Approved by")
			}
		}
		return false
	})
	// Pressed again from a stale client: the decision made, no second mail.
	again, err := tg.Press("alice", card.ID, approve, "alice")
	if err != nil || !strings.Contains(strings.ToLower(again), "already") {
		t.Fatalf("second press: %q %v", again, err)
	}
	if n := len(s.smtp.Mails()); n != 1 {
		t.Fatalf("%d mails after a second press", n)
	}
	p2.stopWith(t, syscall.SIGTERM)
}

func TestTelegramWebhookModeServesHooksAndRefusesAWrongSecret(t *testing.T) {
	tg := telegramtest.NewTelegram(t, telegramtest.TelegramOptions{})
	model := modeltest.NewOpenAI(t, "test-key")
	model.SetDefault(modeltest.Reply{Text: "Hello over the webhook."})
	p := start(t, append([]string{"GATEHOUSE_MODEL=openai:test-model", "OPENAI_API_KEY=test-key", "OPENAI_BASE_URL=" + model.BaseURL(),
		"TELEGRAM_WEBHOOK_SECRET=s3cret"}, telegramEnvs(tg)...)...)
	upd := `{"update_id": 77, "message": {"message_id": 5, "date": 1796029897, "text": "hi", "chat": {"id": ` + tg.UserID("alice") +
		`, "type": "private", "first_name": "Alice"}, "from": {"id": ` + tg.UserID("alice") + `, "is_bot": false, "first_name": "Alice"}}}`
	for secret, want := range map[string]int{"": 401, "wrong": 401} {
		req, _ := http.NewRequest("POST", "http://"+p.addr+"/hooks/telegram", strings.NewReader(upd))
		if secret != "" {
			req.Header.Set("X-Telegram-Bot-Api-Secret-Token", secret)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != want {
			t.Fatalf("secret %q: %d, want %d", secret, res.StatusCode, want)
		}
	}
	tg.ChatID("alice") // the fake knows the chat it will be answered in
	req, _ := http.NewRequest("POST", "http://"+p.addr+"/hooks/telegram", strings.NewReader(upd))
	req.Header.Set("X-Telegram-Bot-Api-Secret-Token", "s3cret")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("right secret: %d", res.StatusCode)
	}
	waitUntil(t, "the answer sent back to the chat", func() bool { return count(chatTexts(tg, "alice"), "Hello over the webhook.") == 1 })
	// What ops see: one update handed on (the refused ones never got in),
	// one message sent, the platform connected here.
	waitUntil(t, "the send counted in /metrics", func() bool {
		return strings.Contains(metricsText(t, p.addr), `gatehouse_outbox_sends_total{kind="message",platform="telegram",result="sent"} 1`)
	})
	m := metricsText(t, p.addr)
	for _, want := range []string{`gatehouse_receive_total{outcome="handed_on",platform="telegram",reason=""} 1`,
		`gatehouse_platform_connected{platform="telegram"} 1`, `gatehouse_receive_seconds_count{platform="telegram"} 1`} {
		if !strings.Contains(m, want) {
			t.Fatalf("/metrics lacks %s:\n%s", want, m)
		}
	}
	p.stopWith(t, syscall.SIGTERM)
}

func metricsText(t *testing.T, addr string) string {
	t.Helper()
	res, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return string(b)
}

func getText(t *testing.T, url string) string {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return string(b)
}
