package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/adapters/adaptertest"
	"github.com/gatehouse/gatehouse/adapters/telegram/telegramtest"
	"github.com/gatehouse/gatehouse/gateway/chat"
	"github.com/gatehouse/gatehouse/models/modeltest"
	"github.com/gatehouse/gatehouse/store"
)

// "cancel" from the requester, with the real binary, denies the card: the
// card says so, the model hears why, no mail leaves, and the word gets no
// turn of its own.
func TestTelegramCancelDeniesTheCard(t *testing.T) {
	tg := telegramtest.NewTelegram(t, telegramtest.TelegramOptions{})
	s := newEmailStack(t, telegramEnvs(tg)...)
	s.fake.SetDefault(modeltest.Reply{Text: "Not sent, as you asked."})
	p := start(t, s.envs...)
	tg.Say("alice", "alice", "Email Sara that the report is ready.", false)
	card := waitCard(t, tg, "alice")
	tg.Say("alice", "alice", "Cancel", false)
	waitUntil(t, "the answer after the cancel", func() bool { return count(chatTexts(tg, "alice"), "Not sent, as you asked.") == 1 })
	waitUntil(t, "the card edited to the denial", func() bool {
		for _, m := range tg.Messages("alice") {
			if m.ID == card.ID {
				return len(m.Buttons) == 0 && strings.Contains(m.Text, "Denied by") && strings.Contains(m.Text, "cancelled by")
			}
		}
		return false
	})
	rows := receiveRows(t, p.addr, "reason="+chat.ReasonCancel)
	if len(rows) != 1 || rows[0].Outcome != chat.ReceiveDropped {
		t.Fatalf("the cancel's receive-log rows: %+v", rows)
	}
	time.Sleep(time.Second) // room for a turn of the cancel's own, if one were coming
	reqs := turnRequests(s.fake)
	if len(reqs) != 2 || !strings.Contains(reqs[1], "Reason: cancelled by") {
		t.Fatalf("%d turn requests; the second must hear the card was cancelled:\n%s", len(reqs), strings.Join(reqs, "\n"))
	}
	if n := len(s.smtp.Mails()); n != 0 || count(chatTexts(tg, "alice"), "A card is waiting") != 0 {
		t.Fatalf("%d mails after the cancel, or the cancel got a notice: %q", n, chatTexts(tg, "alice"))
	}
	p.stopWith(t, syscall.SIGTERM)
}

// turnRequests are the bodies of the model requests of turns (those that
// offer tools), leaving out the memory passes between them.
func turnRequests(fake *modeltest.OpenAI) []string {
	var out []string
	for _, r := range fake.Requests() {
		if _, ok := r.JSON()["tools"]; ok {
			out = append(out, string(r.Body))
		}
	}
	return out
}

// waitCard waits for an approval card in chat.
func waitCard(t *testing.T, tg *telegramtest.TelegramFake, chat string) adaptertest.Message {
	t.Helper()
	var card adaptertest.Message
	waitUntil(t, "an approval card in "+chat, func() bool {
		for _, m := range tg.Messages(chat) {
			if len(m.Buttons) >= 2 {
				card = m
				return true
			}
		}
		return false
	})
	return card
}

func button(t *testing.T, card adaptertest.Message, choice string) string {
	t.Helper()
	for _, b := range card.Buttons {
		if _, c, ok := chat.ParseButtonData(b); ok && c == choice {
			return b
		}
	}
	t.Fatalf("card has no %s button: %+v", choice, card)
	return ""
}

func index(list []string, want string) int {
	for i, s := range list {
		if strings.Contains(s, want) {
			return i
		}
	}
	return -1
}

func receiveRows(t *testing.T, addr, query string) []store.ReceiveEntry {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/v1/receive-log?" + query)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct{ Entries []store.ReceiveEntry }
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out.Entries
}
