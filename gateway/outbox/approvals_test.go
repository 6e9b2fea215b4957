package outbox_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/adapters/adaptertest"
	"github.com/gatehouse/gatehouse/adapters/telegram/telegramtest"
	"github.com/gatehouse/gatehouse/gateway/chat"
	"github.com/gatehouse/gatehouse/httpapi"
	"github.com/gatehouse/gatehouse/internal/testing/stacktest"
	"github.com/gatehouse/gatehouse/models/modeltest"
	"github.com/gatehouse/gatehouse/store"
)

const apiToken = "approvals-test-token"

// post calls the /v1 API with the token and wants status want.
func post(t *testing.T, e *stacktest.Env, path string, body any, want int) {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", "http://"+e.Addr+path, bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+apiToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("POST %s: %d %s, want %d", path, resp.StatusCode, got, want)
	}
}

// answers counts the session's answers with text.
func answers(t *testing.T, e *stacktest.Env, session string) int {
	t.Helper()
	evs, err := e.Kernel.Events(e.Ctx, session, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, ev := range evs {
		var a gh.AssistantMessage
		if ev.Kind == gh.KindAssistantMessage && json.Unmarshal(ev.Payload, &a) == nil && a.Text != "" {
			n++
		}
	}
	return n
}

// A web/API session has no chat address, but its approval card still
// reaches the approval chat (here Telegram's): an approver's press there
// decides it once, the card is edited to the outcome, and the turn goes
// on. The session's ordinary answers go nowhere: the approval chat gets
// the one card.
func TestApprovalChatGetsCardsOfSessionsWithoutAChat(t *testing.T) {
	e := stacktest.NewEnv(t, telegramtest.TelegramFactory, stacktest.EnvOptions{Approvers: []string{"carol"}, ApprovalChat: "group-approvers",
		HTTP: &httpapi.Config{APIToken: apiToken}})
	e.Model.Push(modeltest.Reply{Text: "Hello from the web chat."},
		modeltest.Reply{ToolCalls: []modeltest.ToolCall{{ID: "call_1", Name: "post_note", Arguments: `{"text": "lunch at noon"}`}}},
		modeltest.Reply{Text: "Posted the note."})

	post(t, e, "/v1/sessions/web-1/input", map[string]string{"text": "hello", "requestId": "r1"}, http.StatusAccepted)
	e.Eventually("the ordinary answer", func() bool { return answers(t, e, "web-1") == 1 })
	post(t, e, "/v1/sessions/web-1/input", map[string]string{"text": "post the lunch note", "requestId": "r2"}, http.StatusAccepted)

	var card adaptertest.Message
	e.Eventually("the card in the approval chat", func() bool {
		for _, m := range e.Fake.Messages("group-approvers") {
			if len(m.Buttons) >= 2 {
				card = m
				return true
			}
		}
		return false
	})
	if !strings.Contains(card.Text, "post_note") || !strings.Contains(card.Text, "lunch at noon") {
		t.Fatalf("the card %q: want the call", card.Text)
	}
	var approve string
	for _, b := range card.Buttons {
		if _, choice, ok := chat.ParseButtonData(b); ok && choice == chat.ChoiceApprove {
			approve = b
		}
	}
	if approve == "" {
		t.Fatalf("the card's buttons %q: no Approve", card.Buttons)
	}
	// Someone who is not an approver decides nothing.
	if reply, err := e.Fake.Press("group-approvers", card.ID, approve, "mallory"); err != nil || strings.Contains(reply, "Approved") {
		t.Fatalf("a stranger's press: %q %v", reply, err)
	}
	reply, err := e.Fake.Press("group-approvers", card.ID, approve, "carol")
	if err != nil || !strings.Contains(reply, "Approved") {
		t.Fatalf("the approver's press: %q %v", reply, err)
	}
	if reply, err := e.Fake.Press("group-approvers", card.ID, approve, "carol"); err != nil || !strings.Contains(strings.ToLower(reply), "already") {
		t.Fatalf("a second press: %q %v", reply, err)
	}
	e.Eventually("the answer after the decision", func() bool { return answers(t, e, "web-1") == 2 })
	e.Eventually("the card edited to the outcome", func() bool {
		for _, m := range e.Fake.Messages("group-approvers") {
			if m.ID == card.ID {
				return len(m.Buttons) == 0 && strings.Contains(m.Text, "Approved by")
			}
		}
		return false
	})
	if n := e.Posted.Load(); n != 1 {
		t.Fatalf("the note was posted %d times, want once", n)
	}
	gates, err := e.Store.ListGates(e.Ctx, "web-1", "", 10)
	if err != nil || len(gates) != 1 || gates[0].State != gh.GateApproved || gates[0].Surface != "telegram" {
		t.Fatalf("the gate %+v %v: want approved once, from Telegram", gates, err)
	}
	// Give a stray send the time to arrive: the approval chat holds the
	// card alone, and no answer of the session was sent anywhere.
	time.Sleep(300 * time.Millisecond)
	msgs := e.Fake.Messages("group-approvers")
	if len(msgs) != 1 {
		t.Fatalf("the approval chat got %d messages, want the one card: %+v", len(msgs), msgs)
	}
	rows, err := e.Store.ListOutbox(context.Background(), store.OutboxFilter{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.Kind != "card" && r.Kind != "card_update" {
			t.Fatalf("outbox row %+v: the web session's other messages must not be sent", r)
		}
	}
	if len(rows) != 2 {
		t.Fatalf("outbox rows %+v: want the card and its update", rows)
	}
	if errs := e.Fake.Errors(); len(errs) > 0 {
		t.Fatalf("the fake refused requests: %q", errs)
	}
}
