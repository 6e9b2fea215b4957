package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/adapters/adaptertest"
	"github.com/gatehouse/gatehouse/adapters/telegram/telegramtest"
	"github.com/gatehouse/gatehouse/gateway/chat"
	"github.com/gatehouse/gatehouse/models/modeltest"
)

// askMail queues a model reply that mails to, and sends input n.
func (s *emailStack) askMail(addr string, n int, to string) {
	s.t.Helper()
	s.fake.Push(modeltest.Reply{ToolCalls: []modeltest.ToolCall{{ID: fmt.Sprintf("call_mail%d", n), Name: "email_send",
		Arguments: fmt.Sprintf(`{"to":%q,"subject":"Report %d","body":"The report is ready."}`, to, n)}}})
	if code, body := post(s.t, "http://"+addr+"/v1/sessions/s1/input", map[string]string{"text": "Mail " + to, "requestId": fmt.Sprintf("r%d", n)}); code != 202 {
		s.t.Fatalf("input %d: %d %v", n, code, body)
	}
}

type grantList struct {
	Grants []struct {
		ID        string    `json:"id"`
		Bound     string    `json:"bound"`
		GrantedBy string    `json:"grantedBy"`
		ExpiresAt time.Time `json:"expiresAt"`
		Active    bool      `json:"active"`
	} `json:"grants"`
}

func grantsOf(t *testing.T, addr string) grantList {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/v1/grants?session=s1")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out grantList
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

func approveForChat(t *testing.T, addr string, g gh.Gate) {
	t.Helper()
	code, body := post(t, "http://"+addr+"/v1/gates/"+g.ID+"/decision", map[string]string{"decision": "approve", "scope": "chat"})
	if code != 200 || body["won"] != true || body["answer"] != gh.ScopeChat {
		t.Fatalf("approve for this chat: %d %v", code, body)
	}
}

func TestGrantCoversSameRecipientsOnly(t *testing.T) {
	s := newEmailStack(t)
	p := start(t, s.envs...)
	s.ask(p.addr)
	g := waitGate(t, p.addr)
	// The card offers the grant: email_send declares its recipients.
	var opened gh.GateOpened
	for _, e := range sessionEvents(t, p.addr, "s1") {
		if e.Kind == gh.KindGateOpened {
			json.Unmarshal(e.Payload, &opened)
		}
	}
	if opened.GrantBound != "sara@example.com" || !strings.Contains(opened.GrantLabel, "same recipients") {
		t.Fatalf("gate.opened offers %q %q", opened.GrantBound, opened.GrantLabel)
	}
	approveForChat(t, p.addr, g)
	waitUntil(t, "the first answer", func() bool { return settledRuns(t, p.addr) == 1 })
	if n := len(s.smtp.Mails()); n != 1 {
		t.Fatalf("%d mails after the approval", n)
	}
	gl := grantsOf(t, p.addr)
	if len(gl.Grants) != 1 || !gl.Grants[0].Active || gl.Grants[0].Bound != "sara@example.com" || gl.Grants[0].GrantedBy != gh.LocalUser {
		t.Fatalf("grants %+v", gl)
	}
	// The next mail to the same recipient: no card, exactly one mail, and
	// the result says the grant covered it.
	s.askMail(p.addr, 2, "Sara <sara@example.com>")
	waitUntil(t, "the covered send", func() bool { return settledRuns(t, p.addr) == 2 })
	if pend := gatesOf(t, p.addr, "s1", gh.GatePending); len(pend) != 0 {
		t.Fatalf("a card for a covered call: %+v", pend)
	}
	mails := s.smtp.Mails()
	if len(mails) != 2 || mails[1].To[0] != "sara@example.com" || mails[1].Subject != "Report 2" {
		t.Fatalf("mails %+v", mails)
	}
	_, r := lastAnswer(t, p.addr)
	if r.IsError || !strings.Contains(r.Content, "under the grant from") {
		t.Fatalf("covered result %+v", r)
	}
	notice := false
	for _, e := range sessionEvents(t, p.addr, "s1") {
		notice = notice || (e.Kind == gh.KindNotice && strings.Contains(string(e.Payload), "grant-used"))
	}
	if !notice {
		t.Fatal("no notice that the grant covered the call")
	}
	// Another recipient still gets a card.
	s.askMail(p.addr, 3, "bo@example.com")
	g3 := waitGate(t, p.addr)
	if code, body := post(t, "http://"+p.addr+"/v1/gates/"+g3.ID+"/decision", map[string]string{"decision": "deny"}); code != 200 || body["won"] != true {
		t.Fatalf("deny: %d %v", code, body)
	}
	waitUntil(t, "the third answer", func() bool { return settledRuns(t, p.addr) == 3 })
	// Revoked: the same recipient asks again.
	req, _ := http.NewRequest(http.MethodDelete, "http://"+p.addr+"/v1/grants/"+gl.Grants[0].ID, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("revoke: %v %v", resp, err)
	}
	resp.Body.Close()
	if gl := grantsOf(t, p.addr); gl.Grants[0].Active {
		t.Fatalf("revoked grant still active: %+v", gl)
	}
	req, _ = http.NewRequest(http.MethodDelete, "http://"+p.addr+"/v1/grants/gr_nope", nil)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 404 {
		t.Fatalf("revoke unknown: %v %v", resp, err)
	}
	s.askMail(p.addr, 4, "sara@example.com")
	waitGate(t, p.addr)
	if n := len(s.smtp.Mails()); n != 2 {
		t.Fatalf("%d mails: a revoked grant still sends", n)
	}
	revokedInLog := false
	for _, e := range sessionEvents(t, p.addr, "s1") {
		revokedInLog = revokedInLog || e.Kind == gh.KindGrantRevoked
	}
	if !revokedInLog {
		t.Fatal("no grant.revoked in the log")
	}
}

func TestGrantExpires(t *testing.T) {
	s := newEmailStack(t, "GATEHOUSE_GRANT_TTL=2s")
	p := start(t, s.envs...)
	s.ask(p.addr)
	approveForChat(t, p.addr, waitGate(t, p.addr))
	waitUntil(t, "the first answer", func() bool { return settledRuns(t, p.addr) == 1 })
	gl := grantsOf(t, p.addr)
	if len(gl.Grants) != 1 {
		t.Fatalf("grants %+v", gl)
	}
	time.Sleep(time.Until(gl.Grants[0].ExpiresAt) + 100*time.Millisecond)
	s.askMail(p.addr, 2, "sara@example.com")
	waitGate(t, p.addr)
	if n := len(s.smtp.Mails()); n != 1 {
		t.Fatalf("%d mails: an expired grant still sends", n)
	}
}

func TestGrantScopeRefusedWithoutOffer(t *testing.T) {
	s := newEmailStack(t)
	p := start(t, s.envs...)
	s.ask(p.addr)
	g := waitGate(t, p.addr)
	if code, body := post(t, "http://"+p.addr+"/v1/gates/"+g.ID+"/decision", map[string]string{"decision": "deny", "scope": "chat"}); code != 400 {
		t.Fatalf("deny for the chat: %d %v", code, body)
	}
	if code, body := post(t, "http://"+p.addr+"/v1/gates/"+g.ID+"/decision", map[string]string{"decision": "approve", "scope": "forever"}); code != 400 {
		t.Fatalf("unknown scope: %d %v", code, body)
	}
}

// "Approve for this chat" pressed on Telegram through the binary: the
// next mail to Sara goes with no card and exactly one send; /grants lists
// the grant, its Revoke button ends it, and the next mail asks again.
func TestTelegramGrantCoversTheNextMailAndIsRevokedFromTheChat(t *testing.T) {
	tg := telegramtest.NewTelegram(t, telegramtest.TelegramOptions{})
	s := newEmailStack(t, telegramEnvs(tg)...)
	p := start(t, s.envs...)
	tg.Say("alice", "alice", "Email Sara that the report is ready.", false)
	card := waitCard(t, tg, "alice")
	if reply, err := tg.Press("alice", card.ID, button(t, card, chat.ChoiceApproveChat), "alice"); err != nil || !strings.Contains(reply, "Approved for this chat") {
		t.Fatalf("the press of Approve for this chat: %q %v", reply, err)
	}
	waitUntil(t, "the first answer", func() bool { return count(chatTexts(tg, "alice"), "Done.") == 1 })
	var notice adaptertest.Message
	waitUntil(t, "the grant's notice with its Revoke button", func() bool {
		for _, m := range tg.Messages("alice") {
			if strings.Contains(m.Text, "approved email_send for this chat") && len(m.Buttons) == 1 {
				notice = m
				return true
			}
		}
		return false
	})
	button(t, notice, chat.ChoiceRevokeGrant)

	s.fake.Push(modeltest.Reply{ToolCalls: []modeltest.ToolCall{{ID: "call_mail2", Name: "email_send",
		Arguments: `{"to":"sara@example.com","subject":"Report 2","body":"Again."}`}}})
	tg.Say("alice", "alice", "Email her again.", false)
	waitUntil(t, "the second answer", func() bool { return count(chatTexts(tg, "alice"), "Done.") == 2 })
	if mails := s.smtp.Mails(); len(mails) != 2 || mails[1].Subject != "Report 2" {
		t.Fatalf("mails %+v, want the approved one and the covered one", mails)
	}
	if pend := gatesOf(t, p.addr, "", gh.GatePending); len(pend) != 0 {
		t.Fatalf("a card for a covered call: %+v", pend)
	}
	waitUntil(t, "the chat told the grant covered it", func() bool { return count(chatTexts(tg, "alice"), "ran without a card") == 1 })

	list, err := tg.Command("alice", "alice", "grants")
	if err != nil || !strings.Contains(list.Text, "email_send") || !strings.Contains(list.Text, "sara@example.com") {
		t.Fatalf("/grants: %+v %v", list, err)
	}
	if reply, err := tg.Press("alice", list.ID, button(t, list, chat.ChoiceRevokeGrant), "alice"); err != nil || !strings.Contains(reply, "Revoked") {
		t.Fatalf("Revoke: %q %v", reply, err)
	}
	waitUntil(t, "the chat told of the revocation", func() bool { return count(chatTexts(tg, "alice"), "was revoked by") == 1 })

	s.fake.Push(modeltest.Reply{ToolCalls: []modeltest.ToolCall{{ID: "call_mail3", Name: "email_send",
		Arguments: `{"to":"sara@example.com","subject":"Report 3","body":"Once more."}`}}})
	tg.Say("alice", "alice", "And once more.", false)
	third := waitCard(t, tg, "alice")
	if !strings.Contains(third.Text, "Report 3") {
		t.Fatalf("after the revocation the mail must ask again: %q", third.Text)
	}
	if n := len(s.smtp.Mails()); n != 2 {
		t.Fatalf("%d mails: the revoked grant still sent", n)
	}
	p.stopWith(t, syscall.SIGTERM)
}
