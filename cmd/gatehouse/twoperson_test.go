package main

import (
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/adapters/adaptertest"
	"github.com/gatehouse/gatehouse/adapters/telegram/telegramtest"
	"github.com/gatehouse/gatehouse/gateway/chat"
	"github.com/gatehouse/gatehouse/models/modeltest"
)

// GATEHOUSE_APPROVERS_NEEDED_EMAIL_SEND=2, through the real binary, the
// Telegram fake and the SMTP fake: one press sends nothing and the card
// says "1 of 2 approvals" and who; the same person again counts once; a
// second person's press sends exactly one mail; 50 concurrent presses by
// two people give one decision and one mail; no "Approve for this chat".
func TestTelegramTwoPersonRule(t *testing.T) {
	tg := telegramtest.NewTelegram(t, telegramtest.TelegramOptions{})
	s := newEmailStack(t, append(groupEnvs(tg, "alice", "bob"), "GATEHOUSE_APPROVERS=allowed", "GATEHOUSE_APPROVERS_NEEDED_EMAIL_SEND=2")...)
	p := start(t, s.envs...)
	tg.Say("group-team", "alice", "Email Sara that the report is ready.", false)
	card := waitCard(t, tg, "group-team")
	for _, b := range card.Buttons {
		if strings.Contains(b, chat.ChoiceApproveChat+":") {
			t.Fatalf("a card that needs two approvals offers Approve for this chat: %q", card.Buttons)
		}
	}
	approve := button(t, card, chat.ChoiceApprove)
	for i := range 2 {
		reply, err := tg.Press("group-team", card.ID, approve, "alice")
		if err != nil || !strings.Contains(reply, "1 of 2 approvals: alice") {
			t.Fatalf("alice's press %d: %q %v", i+1, reply, err)
		}
	}
	waitUntil(t, "the card edited to 1 of 2", func() bool {
		for _, m := range tg.Messages("group-team") {
			if m.ID == card.ID {
				return strings.Contains(m.Text, "1 of 2 approvals: alice (telegram)") && len(m.Buttons) >= 2
			}
		}
		return false
	})
	time.Sleep(300 * time.Millisecond)
	if n := len(s.smtp.Mails()); n != 0 {
		t.Fatalf("one person's approval sent %d mails", n)
	}
	if g := gatesOf(t, p.addr, "", gh.GatePending); len(g) != 1 || len(g[0].Approvals) != 1 {
		t.Fatalf("pending gates: %+v", g)
	}
	if reply, err := tg.Press("group-team", card.ID, approve, "bob"); err != nil || !strings.Contains(reply, "Approved") {
		t.Fatalf("bob's press: %q %v", reply, err)
	}
	waitUntil(t, "the answer after the mail", func() bool { return count(chatTexts(tg, "group-team"), "Done.") == 1 })
	tgEdited(t, tg, "group-team", card.ID, "Approved by bob")
	if n := len(s.smtp.Mails()); n != 1 {
		t.Fatalf("%d mails, want 1", n)
	}

	// 50 presses at once, by two people: one decision, one mail.
	s.fake.Push(modeltest.Reply{ToolCalls: []modeltest.ToolCall{{ID: "call_email2", Name: "email_send",
		Arguments: `{"to":"Sara","subject":"Report 2","body":"The second report is ready."}`}}})
	tg.Say("group-team", "alice", "Email Sara that the second report is ready.", false)
	var card2 adaptertest.Message
	waitUntil(t, "the second card", func() bool {
		for _, m := range tg.Messages("group-team") {
			if m.ID != card.ID && len(m.Buttons) >= 2 {
				card2 = m
				return true
			}
		}
		return false
	})
	approve2 := button(t, card2, chat.ChoiceApprove)
	var wg sync.WaitGroup
	var mu sync.Mutex
	won := 0
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			who := []string{"alice", "bob"}[i%2]
			reply, err := tg.Press("group-team", card2.ID, approve2, who)
			_ = reply
			if err != nil {
				t.Errorf("press: %v", err)
			}
			if reply == "Approved." {
				mu.Lock()
				won++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	_ = won
	waitUntil(t, "the answer after the second mail", func() bool { return count(chatTexts(tg, "group-team"), "Done.") == 2 })
	time.Sleep(300 * time.Millisecond)
	if n := len(s.smtp.Mails()); n != 2 {
		t.Fatalf("%d mails after the concurrent presses, want 2", n)
	}
	if won < 1 {
		t.Fatal("no press was told it approved")
	}
	if g := gatesOf(t, p.addr, "", gh.GateApproved); len(g) != 2 {
		t.Fatalf("%d approved gates, want 2", len(g))
	}
	p.stopWith(t, syscall.SIGTERM)
}

// A card that reaches its timeout at 1 of 2 approvals is expired, never
// approved: nothing is sent.
func TestTelegramTwoPersonRuleExpiresShort(t *testing.T) {
	tg := telegramtest.NewTelegram(t, telegramtest.TelegramOptions{})
	s := newEmailStack(t, append(groupEnvs(tg, "alice", "bob"), "GATEHOUSE_APPROVERS=allowed", "GATEHOUSE_APPROVERS_NEEDED_EMAIL_SEND=2",
		"GATEHOUSE_APPROVAL_TIMEOUT=3s")...)
	p := start(t, s.envs...)
	tg.Say("group-team", "alice", "Email Sara that the report is ready.", false)
	card := waitCard(t, tg, "group-team")
	if reply, err := tg.Press("group-team", card.ID, button(t, card, chat.ChoiceApprove), "alice"); err != nil || !strings.Contains(reply, "1 of 2") {
		t.Fatalf("alice's press: %q %v", reply, err)
	}
	waitUntil(t, "the gate expired", func() bool { return len(gatesOf(t, p.addr, "", gh.GateExpired)) == 1 })
	if g := gatesOf(t, p.addr, "", gh.GateApproved); len(g) != 0 {
		t.Fatalf("approved gates: %+v", g)
	}
	tgEdited(t, tg, "group-team", card.ID, "1 of 2")
	time.Sleep(500 * time.Millisecond)
	if n := len(s.smtp.Mails()); n != 0 {
		t.Fatalf("%d mails from a card expired short", n)
	}
	p.stopWith(t, syscall.SIGTERM)
}
