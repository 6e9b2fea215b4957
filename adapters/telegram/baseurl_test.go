package telegram_test

import (
	"context"
	"testing"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/adapters/adaptertest"
	"github.com/gatehouse/gatehouse/adapters/telegram"
	"github.com/gatehouse/gatehouse/adapters/telegram/telegramtest"
	"github.com/gatehouse/gatehouse/gateway/chat"
)

// TELEGRAM_API_URL written as Telegram's documentation writes a method's
// address without the method still reaches the Bot API: updates are
// fetched and messages sent, and the fake sees no request it refuses.
func TestDocumentedAPIURLFormsReachTheBotAPI(t *testing.T) {
	for name, suffix := range map[string]func(token string) string{
		"trailing slash": func(string) string { return "/" },
		"/bot":           func(string) string { return "/bot" },
		"/bot<token>/":   func(token string) string { return "/bot" + token + "/" },
	} {
		t.Run(name, func(t *testing.T) {
			f := telegramtest.NewTelegram(t, telegramtest.TelegramOptions{PollTimeout: time.Second})
			a, err := telegram.New(telegram.Config{Token: f.Token, APIURL: f.URL + suffix(f.Token), PollTimeout: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			s := newSink()
			adaptertest.Connect(t, a, s, 5*time.Second)
			up := f.Say("alice", "alice", "over the documented URL", false)
			if in := s.received(t, up); in.Text != "over the documented URL" {
				t.Fatalf("inbound %+v", in)
			}
			if _, err := a.Send(context.Background(), chat.Outgoing{Address: gh.Address{ChatID: f.ChatID("alice")}, Text: "answer"}); err != nil {
				t.Fatalf("send: %v", err)
			}
			if msgs := f.Messages("alice"); len(msgs) != 1 || msgs[0].Text != "answer" {
				t.Fatalf("the bot's messages: %+v", msgs)
			}
			noFakeErrors(t, f)
		})
	}
}
