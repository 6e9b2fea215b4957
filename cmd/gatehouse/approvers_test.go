package main

import (
	"encoding/json"
	"github.com/gatehouse/gatehouse/cmd/gatehouse/internal/config"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/gatehouse/gatehouse/adapters/telegram/telegramtest"
	"github.com/gatehouse/gatehouse/gateway/chat"
	"github.com/gatehouse/gatehouse/gateway/people"
	"github.com/gatehouse/gatehouse/models/modeltest"
)

// Who may approve, and denying with a reason, through the real binary and
// the Telegram fake.

// withEnviron makes loadConfig see the names of m as the environment.
func withEnviron(t *testing.T, m map[string]string) func(string) string {
	old := config.Environ
	config.Environ = func() []string {
		var out []string
		for k, v := range m {
			out = append(out, k+"="+v)
		}
		return out
	}
	t.Cleanup(func() { config.Environ = old })
	return env(m)
}

func TestConfigApprovers(t *testing.T) {
	c, err := loadConfig("", withEnviron(t, map[string]string{"GATEHOUSE_APPROVERS": "allowed",
		"GATEHOUSE_APPROVERS_EMAIL_SEND": "telegram:111, slack:U012", "GATEHOUSE_APPROVAL_CHAT": "slack:C0123"}))
	if err != nil {
		t.Fatal(err)
	}
	a := c.ApproverRules()
	if !a.Default.Allowed || a.For("shell_exec").Allowed != true || a.For("email_send").Allowed ||
		len(a.For("email_send").Users) != 2 || a.For("email_send").Users[1] != (people.Approver{Platform: "slack", UserID: "U012"}) {
		t.Fatalf("approvers from the environment: %+v", a)
	}
	if c.ApprovalChat != "slack:C0123" {
		t.Fatalf("approval chat %q", c.ApprovalChat)
	}
	// The file takes the same as a map; the environment wins per tool.
	file := filepath.Join(t.TempDir(), "gatehouse.yaml")
	os.WriteFile(file, []byte("approvers:\n  default: [telegram:1, telegram:2]\n  email_send: telegram:3\n  shell_exec: allowed\n"), 0o644)
	c, err = loadConfig(file, withEnviron(t, map[string]string{"GATEHOUSE_APPROVERS_SHELL_EXEC": "discord:4"}))
	if err != nil {
		t.Fatal(err)
	}
	a = c.ApproverRules()
	if len(a.Default.Users) != 2 || a.For("email_send").Users[0].UserID != "3" || a.For("SHELL-EXEC").Users[0] != (people.Approver{Platform: "discord", UserID: "4"}) {
		t.Fatalf("approvers from the file: %+v", a)
	}
	os.WriteFile(file, []byte("approvers: telegram:9\n"), 0o644)
	if c, err = loadConfig(file, withEnviron(t, nil)); err != nil || c.ApproverRules().Default.Users[0].UserID != "9" {
		t.Fatalf("one list in the file: %+v %v", c.ApproverRules(), err)
	}
	for name, value := range map[string]string{
		"GATEHOUSE_APPROVERS":            "telegram",
		"GATEHOUSE_APPROVERS_EMAIL_SEND": "icq:1",
		"GATEHOUSE_APPROVAL_CHAT":        "C0123",
	} {
		if _, err := loadConfig("", withEnviron(t, map[string]string{name: value})); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s=%s: %v", name, value, err)
		}
	}
	if _, err := loadConfig("", withEnviron(t, map[string]string{"GATEHOUSE_APPROVERS": "allowed,telegram:1"})); err == nil {
		t.Error("allowed mixed with named approvers")
	}
}

func tgEdited(t *testing.T, tg *telegramtest.TelegramFake, chat, id, want string) {
	t.Helper()
	waitUntil(t, "the card in "+chat+" edited to "+want, func() bool {
		for _, m := range tg.Messages(chat) {
			if m.ID == id {
				return len(m.Buttons) == 0 && strings.Contains(m.Text, want)
			}
		}
		return false
	})
}

func groupEnvs(tg *telegramtest.TelegramFake, users ...string) []string {
	ids := make([]string, len(users))
	for i, u := range users {
		ids[i] = tg.UserID(u)
	}
	return []string{"TELEGRAM_BOT_TOKEN=" + tg.Token, "TELEGRAM_API_URL=" + tg.URL, "TELEGRAM_ALLOWED_USERS=" + strings.Join(ids, ",")}
}

// In a group, another member's press is refused with who can approve
// and sends nothing; the requester's press wins and sends one mail.
func TestTelegramGroupOnlyTheRequesterApproves(t *testing.T) {
	tg := telegramtest.NewTelegram(t, telegramtest.TelegramOptions{})
	s := newEmailStack(t, groupEnvs(tg, "alice", "bob")...)
	p := start(t, s.envs...)
	tg.Say("group-team", "alice", "Email Sara that the report is ready.", false)
	card := waitCard(t, tg, "group-team")
	approve := button(t, card, chat.ChoiceApprove)
	reply, err := tg.Press("group-team", card.ID, approve, "bob")
	if err != nil || !strings.Contains(reply, "cannot decide") || !strings.Contains(reply, "the person who asked") {
		t.Fatalf("bob's press: %q %v", reply, err)
	}
	if n := len(s.smtp.Mails()); n != 0 {
		t.Fatalf("bob's press sent %d mails", n)
	}
	if reply, err := tg.Press("group-team", card.ID, approve, "alice"); err != nil || !strings.Contains(reply, "Approved") {
		t.Fatalf("alice's press: %q %v", reply, err)
	}
	waitUntil(t, "the answer after the mail", func() bool { return count(chatTexts(tg, "group-team"), "Done.") == 1 })
	tgEdited(t, tg, "group-team", card.ID, "Approved by alice")
	if n := len(s.smtp.Mails()); n != 1 {
		t.Fatalf("%d mails, want 1", n)
	}
	p.stopWith(t, syscall.SIGTERM)
}

// GATEHOUSE_APPROVERS=allowed keeps the old rule: bob approves alice's
// mail in the group.
func TestTelegramApproversAllowedKeepsTheOldRule(t *testing.T) {
	tg := telegramtest.NewTelegram(t, telegramtest.TelegramOptions{})
	s := newEmailStack(t, append(groupEnvs(tg, "alice", "bob"), "GATEHOUSE_APPROVERS=allowed")...)
	p := start(t, s.envs...)
	tg.Say("group-team", "alice", "Email Sara that the report is ready.", false)
	card := waitCard(t, tg, "group-team")
	if reply, err := tg.Press("group-team", card.ID, button(t, card, chat.ChoiceApprove), "bob"); err != nil || !strings.Contains(reply, "Approved") {
		t.Fatalf("bob's press under the old rule: %q %v", reply, err)
	}
	waitUntil(t, "the answer after the mail", func() bool { return count(chatTexts(tg, "group-team"), "Done.") == 1 })
	if n := len(s.smtp.Mails()); n != 1 {
		t.Fatalf("%d mails, want 1", n)
	}
	p.stopWith(t, syscall.SIGTERM)
}

// The approver named for email_send (which replaces the "allowed" rule
// for that tool) approves alice's mail from the approvers' chat, where
// every card is copied; an allowed member who is not named cannot; both
// copies of the card end edited to the decision.
func TestTelegramNamedApproverInTheApprovalChat(t *testing.T) {
	tg := telegramtest.NewTelegram(t, telegramtest.TelegramOptions{})
	envs := append(groupEnvs(tg, "alice", "bob"), "GATEHOUSE_APPROVERS=allowed", "GATEHOUSE_APPROVERS_EMAIL_SEND=telegram:"+tg.UserID("carol"),
		"GATEHOUSE_APPROVAL_CHAT=telegram:"+tg.ChatID("group-approvers"))
	s := newEmailStack(t, envs...)
	p := start(t, s.envs...)
	tg.Say("group-team", "alice", "Email Sara that the report is ready.", false)
	card := waitCard(t, tg, "group-team")
	copyCard := waitCard(t, tg, "group-approvers")
	if !strings.Contains(copyCard.Text, "sara@example.com") {
		t.Fatalf("the copy must show the card: %q", copyCard.Text)
	}
	reply, err := tg.Press("group-team", card.ID, button(t, card, chat.ChoiceApprove), "bob")
	if err != nil || !strings.Contains(reply, "cannot decide") || !strings.Contains(reply, "telegram:"+tg.UserID("carol")) {
		t.Fatalf("bob's press: %q %v", reply, err)
	}
	if reply, err := tg.Press("group-approvers", copyCard.ID, button(t, copyCard, chat.ChoiceApprove), "carol"); err != nil || !strings.Contains(reply, "Approved") {
		t.Fatalf("carol's press in the approvers' chat: %q %v", reply, err)
	}
	waitUntil(t, "the answer after the mail", func() bool { return count(chatTexts(tg, "group-team"), "Done.") == 1 })
	tgEdited(t, tg, "group-team", card.ID, "Approved by carol")
	tgEdited(t, tg, "group-approvers", copyCard.ID, "Approved by carol")
	if n := len(s.smtp.Mails()); n != 1 {
		t.Fatalf("%d mails, want 1", n)
	}
	if errs := tg.Errors(); len(errs) != 0 {
		t.Fatalf("the fake refused: %q", errs)
	}
	p.stopWith(t, syscall.SIGTERM)
}

// "Deny with reason…" on Telegram: the bot asks for a reply, the reply is
// the reason, the model reads it in the tool result, the card shows it.
func TestTelegramDenyReasonReachesTheModel(t *testing.T) {
	tg := telegramtest.NewTelegram(t, telegramtest.TelegramOptions{})
	s := newEmailStack(t, telegramEnvs(tg)...)
	s.fake.SetDefault(modeltest.Reply{Text: "Understood, I will not send it."})
	p := start(t, s.envs...)
	tg.Say("alice", "alice", "Email Sara that the report is ready.", false)
	card := waitCard(t, tg, "alice")
	const reason = "Sara is on holiday; send it to Ben instead."
	if _, err := tg.DenyWithReason("alice", card.ID, button(t, card, chat.ChoiceDenyReason), "alice", reason); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the answer after the denial", func() bool { return count(chatTexts(tg, "alice"), "Understood, I will not send it.") == 1 })
	tgEdited(t, tg, "alice", card.ID, "Reason: "+reason)
	told := false
	for _, r := range s.fake.Requests() {
		var body struct {
			Messages []struct {
				Role    string `json:"role"`
				Content any    `json:"content"`
			} `json:"messages"`
		}
		_ = json.Unmarshal(r.Body, &body)
		for _, m := range body.Messages {
			c, _ := json.Marshal(m.Content)
			if m.Role == "tool" && strings.Contains(string(c), reason) && strings.Contains(string(c), "denied") {
				told = true
			}
		}
	}
	if !told {
		t.Fatalf("the model never read the reason %q", reason)
	}
	if n := len(s.smtp.Mails()); n != 0 {
		t.Fatalf("%d mails after a denial", n)
	}
	var prompt string
	for _, m := range tg.TelegramMessages("alice") {
		if m.ForceReply {
			prompt = m.Text
		}
	}
	if !strings.Contains(prompt, "Why deny email_send") {
		t.Fatalf("the prompt for the reason: %q", prompt)
	}
	if errs := tg.Errors(); len(errs) != 0 {
		t.Fatalf("the fake refused: %q", errs)
	}
	p.stopWith(t, syscall.SIGTERM)
}
