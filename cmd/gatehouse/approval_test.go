package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/internal/testing/smtptest"
	"github.com/gatehouse/gatehouse/models/modeltest"
)

// emailStack is a gateway wired to a fake model that asks to email Sara,
// and to a loopback SMTP server.
type emailStack struct {
	t    *testing.T
	smtp *smtptest.Server
	fake *modeltest.OpenAI
	envs []string
}

func newEmailStack(t *testing.T, extra ...string) *emailStack {
	s := &emailStack{t: t, smtp: smtptest.Start(t), fake: modeltest.NewOpenAI(t, "test-key")}
	s.fake.Push(modeltest.Reply{ToolCalls: []modeltest.ToolCall{{ID: "call_email", Name: "email_send",
		Arguments: `{"to":"Sara","subject":"Report","body":"The report is ready."}`}}})
	s.fake.SetDefault(modeltest.Reply{Text: "Done."})
	s.envs = append([]string{
		"GATEHOUSE_DATA_DIR=" + filepath.Join(t.TempDir(), "data"),
		"GATEHOUSE_MODEL=openai:test-model", "OPENAI_API_KEY=test-key", "OPENAI_BASE_URL=" + s.fake.BaseURL(),
		"GATEHOUSE_SMTP_URL=" + s.smtp.URL(), "GATEHOUSE_EMAIL_FROM=agent@example.com",
		"GATEHOUSE_CONTACTS=Sara=sara@example.com", "GATEHOUSE_LEASE_TTL=1s", "GATEHOUSE_MODEL_RETRIES=1",
	}, extra...)
	return s
}

func gatesOf(t *testing.T, addr, session string, state gh.GateState) []gh.Gate {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/v1/gates?session=" + session + "&state=" + string(state))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct{ Gates []gh.Gate }
	json.NewDecoder(resp.Body).Decode(&out)
	return out.Gates
}

func waitGate(t *testing.T, addr string) gh.Gate {
	t.Helper()
	var g []gh.Gate
	waitUntil(t, "an approval card", func() bool { g = gatesOf(t, addr, "s1", gh.GatePending); return len(g) == 1 })
	return g[0]
}

func settledRuns(t *testing.T, addr string) int {
	n := 0
	for _, e := range sessionEvents(t, addr, "s1") {
		if e.Kind == gh.KindRunFinished {
			var f gh.RunFinished
			json.Unmarshal(e.Payload, &f)
			if f.Status == "done" {
				n++
			}
		}
	}
	return n
}

func lastAnswer(t *testing.T, addr string) (gh.AssistantMessage, gh.ToolResult) {
	var a gh.AssistantMessage
	var r gh.ToolResult
	for _, e := range sessionEvents(t, addr, "s1") {
		switch e.Kind {
		case gh.KindAssistantMessage:
			json.Unmarshal(e.Payload, &a)
		case gh.KindToolResult:
			json.Unmarshal(e.Payload, &r)
		}
	}
	return a, r
}

func (s *emailStack) ask(addr string) {
	if code, body := post(s.t, "http://"+addr+"/v1/sessions/s1/input", map[string]string{"text": "Email Sara that the report is ready.", "requestId": "r1"}); code != 202 {
		s.t.Fatalf("input: %d %v", code, body)
	}
}

func TestEmailApprovedSendsExactlyOneMail(t *testing.T) {
	s := newEmailStack(t)
	p := start(t, s.envs...)
	s.ask(p.addr)
	g := waitGate(t, p.addr)
	if g.Tool != "email_send" || !strings.Contains(string(g.Arguments), "sara@example.com") {
		t.Fatalf("card %+v", g)
	}
	if len(s.smtp.Mails()) != 0 {
		t.Fatal("mail sent before approval")
	}
	code, body := post(t, "http://"+p.addr+"/v1/gates/"+g.ID+"/decision", map[string]string{"decision": "approve", "by": "ana"})
	if code != 200 || body["won"] != true || body["decision"] != "approved" {
		t.Fatalf("approve: %d %v", code, body)
	}
	// A second press, from another surface, hears the decision made.
	code, body = post(t, "http://"+p.addr+"/v1/gates/"+g.ID+"/decision", map[string]string{"decision": "deny", "by": "bob"})
	if code != 200 || body["won"] != false || body["decision"] != "approved" || body["by"] != gh.LocalUser {
		t.Fatalf("second press: %d %v", code, body)
	}
	waitUntil(t, "the answer", func() bool { return settledRuns(t, p.addr) == 1 })
	mails := s.smtp.Mails()
	if len(mails) != 1 || mails[0].To[0] != "sara@example.com" || mails[0].Subject != "Report" {
		t.Fatalf("mails %+v", mails)
	}
	a, r := lastAnswer(t, p.addr)
	if r.IsError || a.Text != "Done." {
		t.Fatalf("result %+v answer %+v", r, a)
	}
	p.stopWith(t, syscall.SIGTERM)
}

func TestEmailDeniedSendsNothing(t *testing.T) {
	s := newEmailStack(t)
	p := start(t, s.envs...)
	s.ask(p.addr)
	g := waitGate(t, p.addr)
	if code, body := post(t, "http://"+p.addr+"/v1/gates/"+g.ID+"/decision", map[string]string{"decision": "deny", "by": "ana", "reason": "not yet"}); code != 200 || body["won"] != true {
		t.Fatalf("deny: %d %v", code, body)
	}
	waitUntil(t, "the answer", func() bool { return settledRuns(t, p.addr) == 1 })
	_, r := lastAnswer(t, p.addr)
	if len(s.smtp.Mails()) != 0 || !r.IsError || !strings.Contains(r.Content, "denied") {
		t.Fatalf("mails %d, result %+v", len(s.smtp.Mails()), r)
	}
	// The model was told it was denied.
	told := false
	for _, r := range s.fake.Requests() {
		told = told || (strings.Contains(string(r.Body), "denied") && strings.Contains(string(r.Body), `"tool"`))
	}
	if !told {
		t.Fatal("the model never saw the denial")
	}
}

func TestEmailApprovalTimeoutExpiresNeverDenies(t *testing.T) {
	s := newEmailStack(t, "GATEHOUSE_APPROVAL_TIMEOUT=1s")
	p := start(t, s.envs...)
	s.ask(p.addr)
	g := waitGate(t, p.addr)
	waitUntil(t, "the answer", func() bool { return settledRuns(t, p.addr) == 1 })
	_, r := lastAnswer(t, p.addr)
	if len(s.smtp.Mails()) != 0 || !strings.Contains(r.Content, "expired") || strings.Contains(r.Content, "denied") {
		t.Fatalf("mails %d, result %+v", len(s.smtp.Mails()), r)
	}
	// A press after expiry gets "expired".
	code, body := post(t, "http://"+p.addr+"/v1/gates/"+g.ID+"/decision", map[string]string{"decision": "approve", "by": "ana"})
	if code != 200 || body["decision"] != "expired" || body["won"] != false {
		t.Fatalf("late press: %d %v", code, body)
	}
}

// The crash of the journal window, with real processes: the mail reached
// the server, the gateway died before it heard back. The next process must
// not send it again, and must say the outcome is unknown.
func TestCrashInTheJournalWindowNeverSendsTwice(t *testing.T) {
	s := newEmailStack(t)
	p := start(t, s.envs...)
	s.ask(p.addr)
	g := waitGate(t, p.addr)
	s.smtp.Hold()
	post(t, "http://"+p.addr+"/v1/gates/"+g.ID+"/decision", map[string]string{"decision": "approve", "by": "ana"})
	select {
	case <-s.smtp.Arrived:
	case <-time.After(60 * time.Second):
		t.Fatal("the mail never reached the server")
	}
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p.done
	s.smtp.Release()

	p2 := start(t, s.envs...)
	waitUntil(t, "the turn to end", func() bool { return settledRuns(t, p2.addr) == 1 })
	a, _ := lastAnswer(t, p2.addr)
	if n := len(s.smtp.Mails()); n != 1 {
		t.Fatalf("%d mails after the crash", n)
	}
	if !strings.Contains(a.Text, "can't tell") {
		t.Fatalf("the user was not told the outcome is unknown: %+v", a)
	}
	p2.stopWith(t, syscall.SIGTERM)
}

func TestPendingGateSurvivesARestart(t *testing.T) {
	s := newEmailStack(t)
	p := start(t, s.envs...)
	s.ask(p.addr)
	g := waitGate(t, p.addr)
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p.done
	p2 := start(t, s.envs...)
	if got := waitGate(t, p2.addr); got.ID != g.ID {
		t.Fatalf("gate after restart %+v", got)
	}
	if code, body := post(t, "http://"+p2.addr+"/v1/gates/"+g.ID+"/decision", map[string]string{"decision": "approve", "by": "ana"}); code != 200 || body["won"] != true {
		t.Fatalf("approve after restart: %d %v", code, body)
	}
	waitUntil(t, "the answer", func() bool { return settledRuns(t, p2.addr) == 1 })
	if n := len(s.smtp.Mails()); n != 1 {
		t.Fatalf("%d mails", n)
	}
}

// A contact the user told the agent about is what "Sara" resolves to.
func TestRememberedContactResolvesTheRecipient(t *testing.T) {
	smtp := smtptest.Start(t)
	fake := modeltest.NewOpenAI(t, "test-key")
	fake.Push(modeltest.Reply{Text: "Noted."},
		modeltest.Reply{ToolCalls: []modeltest.ToolCall{{ID: "call_email", Name: "email_send", Arguments: `{"to":"Sara","subject":"Report","body":"ready"}`}}})
	fake.SetDefault(modeltest.Reply{Text: "Done."})
	p := start(t, "GATEHOUSE_DATA_DIR="+filepath.Join(t.TempDir(), "data"), "GATEHOUSE_MODEL=openai:test-model", "OPENAI_API_KEY=test-key",
		"OPENAI_BASE_URL="+fake.BaseURL(), "GATEHOUSE_SMTP_URL="+smtp.URL(), "GATEHOUSE_EMAIL_FROM=agent@example.com")
	post(t, "http://"+p.addr+"/v1/sessions/s1/input", map[string]string{"text": "Sara is sara.lind@example.com", "requestId": "r1"})
	waitUntil(t, "the first answer", func() bool { return settledRuns(t, p.addr) == 1 })
	post(t, "http://"+p.addr+"/v1/sessions/s1/input", map[string]string{"text": "Email Sara that the report is ready.", "requestId": "r2"})
	g := waitGate(t, p.addr)
	if !strings.Contains(string(g.Arguments), "sara.lind@example.com") {
		t.Fatalf("the remembered contact was not used: %s", g.Arguments)
	}
	// People can see what is kept about them, and remove it.
	facts := func() []map[string]any {
		resp, err := http.Get("http://" + p.addr + "/v1/memory")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out struct{ Facts []map[string]any }
		json.NewDecoder(resp.Body).Decode(&out)
		return out.Facts
	}
	kept := facts()
	if len(kept) != 1 || !strings.Contains(fmt.Sprint(kept[0]["text"]), "sara.lind@example.com") {
		t.Fatalf("memory list %v", kept)
	}
	req, _ := http.NewRequest("DELETE", fmt.Sprintf("http://%s/v1/memory/%v", p.addr, kept[0]["id"]), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("forget: %v %v", resp.Status, err)
	}
	resp.Body.Close()
	if left := facts(); len(left) != 0 {
		t.Fatalf("after forget: %v", left)
	}
}
