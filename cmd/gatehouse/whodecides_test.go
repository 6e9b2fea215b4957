package main

import (
	"encoding/json"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/gatehouse/gatehouse/adapters/telegram/telegramtest"
	"github.com/gatehouse/gatehouse/gateway/chat"
	"github.com/gatehouse/gatehouse/models/modeltest"
)

// The one rule of who may decide, through the real binary and the
// Telegram fake: the sender of a /library shared file never approves it,
// whatever GATEHOUSE_APPROVERS says; with GATEHOUSE_REQUESTER_APPROVES=off
// the requester's press changes nothing and a named approver's decides.

func TestTelegramLibrarySenderNeverApprovesTheirOwnFile(t *testing.T) {
	tg := telegramtest.NewTelegram(t, telegramtest.TelegramOptions{})
	alice := "telegram:" + tg.UserID("alice")
	for _, mode := range []string{"", "GATEHOUSE_APPROVERS=allowed", "GATEHOUSE_APPROVERS=" + alice,
		"GATEHOUSE_APPROVERS_LIBRARY_ADD=allowed", "GATEHOUSE_APPROVERS_LIBRARY_ADD=" + alice} {
		t.Run("mode="+strings.TrimPrefix(strings.ReplaceAll(mode, alice, "alice"), "GATEHOUSE_"), func(t *testing.T) {
			tg := telegramtest.NewTelegram(t, telegramtest.TelegramOptions{})
			model := modeltest.NewOpenAI(t, "test-key")
			model.SetDefault(modeltest.Reply{Text: "Noted."})
			envs := append([]string{"GATEHOUSE_MODEL=openai:test-model", "OPENAI_API_KEY=test-key",
				"OPENAI_BASE_URL=" + model.BaseURL()}, telegramEnvs(tg)...)
			if mode != "" {
				envs = append(envs, strings.ReplaceAll(mode, alice, "telegram:"+tg.UserID("alice")))
			}
			p := start(t, envs...)
			_, docMsg := tg.SayDocument("alice", "alice", "/library", "handbook.md", "text/markdown", []byte("# Handbook\n\nThe quindle wrench, every Tuesday.\n"))
			waitUntil(t, "the chat's library add answered", func() bool { return count(chatTexts(tg, "alice"), "this chat's library") >= 1 })
			tg.ReplyCommand("alice", "alice", "/library shared", docMsg)
			card := waitCard(t, tg, "alice")
			if got, err := tg.Press("alice", card.ID, button(t, card, chat.ChoiceApprove), "alice"); err != nil || !strings.Contains(got, "cannot decide") {
				t.Fatalf("the sender's own press: %q %v", got, err)
			}
			var pending struct {
				Gates []struct{ Kind, State string }
			}
			if err := json.Unmarshal([]byte(getText(t, "http://"+p.addr+"/v1/gates?state=pending")), &pending); err != nil ||
				len(pending.Gates) != 1 || pending.Gates[0].Kind != "library" {
				t.Fatalf("the card must still be pending: %+v %v", pending, err)
			}
			var docs struct{ Documents []struct{ Name string } }
			if err := json.Unmarshal([]byte(getText(t, "http://"+p.addr+"/v1/documents?collection=shared")), &docs); err != nil || len(docs.Documents) != 0 {
				t.Fatalf("the shared collection: %+v %v", docs, err)
			}
			p.stopWith(t, syscall.SIGTERM)
		})
	}
}

func TestTelegramRequesterApprovesOff(t *testing.T) {
	tg := telegramtest.NewTelegram(t, telegramtest.TelegramOptions{})
	s := newEmailStack(t, append(groupEnvs(tg, "alice", "bob"), "GATEHOUSE_REQUESTER_APPROVES=off",
		"GATEHOUSE_APPROVERS=telegram:"+tg.UserID("carol"))...)
	p := start(t, s.envs...)
	tg.Say("group-team", "alice", "Email Sara that the report is ready.", false)
	card := waitCard(t, tg, "group-team")
	approve := button(t, card, chat.ChoiceApprove)
	for _, who := range []string{"alice", "bob"} {
		reply, err := tg.Press("group-team", card.ID, approve, who)
		if err != nil || !strings.Contains(reply, "cannot decide") || strings.Contains(reply, "the person who asked") {
			t.Fatalf("%s's press: %q %v", who, reply, err)
		}
	}
	if n := len(s.smtp.Mails()); n != 0 {
		t.Fatalf("the requester's press sent %d mails", n)
	}
	if reply, err := tg.Press("group-team", card.ID, approve, "carol"); err != nil || !strings.Contains(reply, "Approved") {
		t.Fatalf("the named approver's press: %q %v", reply, err)
	}
	waitUntil(t, "the answer after the mail", func() bool { return count(chatTexts(tg, "group-team"), "Done.") == 1 })
	tgEdited(t, tg, "group-team", card.ID, "Approved by carol")
	if n := len(s.smtp.Mails()); n != 1 {
		t.Fatalf("%d mails, want 1", n)
	}
	p.stopWith(t, syscall.SIGTERM)
}

// An allow-list of "*" while the requester approves their own danger
// calls is warned about at start; with GATEHOUSE_REQUESTER_APPROVES=off
// it is not.
func TestStartWarnsOfOpenSelfApproval(t *testing.T) {
	tg := telegramtest.NewTelegram(t, telegramtest.TelegramOptions{})
	envs := []string{"TELEGRAM_BOT_TOKEN=" + tg.Token, "TELEGRAM_API_URL=" + tg.URL, "TELEGRAM_ALLOWED_USERS=*"}
	const warning = "anyone may write to the bot and approve their own cards"
	p := start(t, envs...)
	waitUntil(t, "the warning", func() bool { return strings.Contains(p.out.String(), warning) })
	p.stopWith(t, syscall.SIGTERM)
	p = start(t, append(envs, "GATEHOUSE_REQUESTER_APPROVES=off", "GATEHOUSE_APPROVERS=telegram:"+tg.UserID("carol"))...)
	p.stopWith(t, syscall.SIGTERM)
	if strings.Contains(p.out.String(), warning) {
		t.Fatalf("warned with the requester off:\n%s", p.out.String())
	}
}

func TestConfigRequesterApprovesAndApproversNeeded(t *testing.T) {
	c, err := loadConfig("", withEnviron(t, map[string]string{"GATEHOUSE_REQUESTER_APPROVES": "off",
		"GATEHOUSE_REQUESTER_APPROVES_SHELL_EXEC": "on", "GATEHOUSE_APPROVERS_NEEDED_EMAIL_SEND": "2", "GATEHOUSE_APPROVERS": "telegram:1"}))
	if err != nil {
		t.Fatal(err)
	}
	a := c.ApproverRules()
	if a.RequesterApproves("email_send") || !a.RequesterApproves("shell_exec") || a.Needed("email_send") != 2 || a.Needed("shell_exec") != 1 ||
		len(a.Tools) != 0 || a.Default.Users[0].UserID != "1" {
		t.Fatalf("from the environment: %+v", a)
	}
	file := t.TempDir() + "/gatehouse.yaml"
	if err := os.WriteFile(file, []byte("requester_approves:\n  default: on\n  email_send: off\napprovers_needed: 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if c, err = loadConfig(file, withEnviron(t, nil)); err != nil {
		t.Fatal(err)
	}
	if a := c.ApproverRules(); !a.RequesterApproves("shell_exec") || a.RequesterApproves("email_send") || a.Needed("x") != 3 {
		t.Fatalf("from the file: %+v", a)
	}
	for name, value := range map[string]string{"GATEHOUSE_REQUESTER_APPROVES": "maybe", "GATEHOUSE_APPROVERS_NEEDED": "0",
		"GATEHOUSE_APPROVERS_NEEDED_EMAIL_SEND": "two"} {
		if _, err := loadConfig("", withEnviron(t, map[string]string{name: value})); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s=%s: %v", name, value, err)
		}
	}
}
