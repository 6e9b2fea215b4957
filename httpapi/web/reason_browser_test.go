package web_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/chromedp/chromedp"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/internal/testing/stacktest"
	"github.com/gatehouse/gatehouse/models/modeltest"
	"github.com/gatehouse/gatehouse/tools"
	"github.com/gatehouse/gatehouse/toolworker"
)

// toolResultSaid reports whether a request to the model carried a tool
// result containing s.
func toolResultSaid(reqs []modeltest.Request, s string) bool {
	for _, r := range reqs {
		var body struct {
			Messages []struct {
				Role    string          `json:"role"`
				Content json.RawMessage `json:"content"`
			} `json:"messages"`
		}
		_ = json.Unmarshal(r.Body, &body)
		for _, m := range body.Messages {
			if m.Role == "tool" && strings.Contains(string(m.Content), s) {
				return true
			}
		}
	}
	return false
}

// Denying with a reason from the web chat and from /admin: the reason
// typed in the card's field reaches the model in the tool result, is
// shown on the decided card, and the decision is the operator's.
func TestBrowserDenyWithReason(t *testing.T) {
	var sends atomic.Int32
	send := toolworker.FuncTool{ToolName: "send", ToolTier: tools.Danger, Desc: "send a thing",
		Fn: func(context.Context, tools.Call) (string, error) { sends.Add(1); return "sent", nil }}
	e, url := startStack(t, nil, stacktest.EnvOptions{Tools: []tools.Tool{send}})
	e.Model.Push(modeltest.Reply{ToolCalls: []modeltest.ToolCall{{ID: "call_1", Name: "send", Arguments: `{"to":"x"}`}}},
		modeltest.Reply{Text: "Not sent, as you said."},
		modeltest.Reply{ToolCalls: []modeltest.ToolCall{{ID: "call_2", Name: "send", Arguments: `{"to":"y"}`}}},
		modeltest.Reply{Text: "Not sent either."})
	ctx := browser(t)
	newChat(t, ctx, url)
	sendMessage(t, ctx, "please send it to x")
	until(t, ctx, "the card with a reason field", `!!document.querySelector('[data-testid="gate-card"] [data-testid="gate-reason"]')`)
	const reason = "x is the old address <b>use y</b>"
	do(t, ctx, "type a reason", chromedp.SendKeys(css(`[data-testid="gate-reason"]`), reason))
	screenshot(t, ctx, "deny-with-reason.png")
	do(t, ctx, "deny", chromedp.Click(css(`[data-testid="gate-deny"]`)))
	until(t, ctx, "the denial and its reason on the card",
		`(document.querySelector('[data-testid="gate-outcome"]')||{}).textContent === "Denied by the operator via web — `+reason+`"`)
	until(t, ctx, "the answer", `Array.from(document.querySelectorAll('[data-testid="message"][data-role="assistant"] .bubble')).some(b => b.textContent === "Not sent, as you said.")`)
	if !toolResultSaid(e.Model.Requests(), reason) {
		t.Fatalf("the model never read the reason %q", reason)
	}
	gs, err := e.Store.ListGates(context.Background(), "", gh.GateDenied, 10)
	if err != nil || len(gs) != 1 || gs[0].Reason != reason || gs[0].DecidedBy != gh.LocalUser || gs[0].Surface != "web" {
		t.Fatalf("the decision: %+v %v", gs, err)
	}

	// The same from /admin: the reason field beside Deny, kept across the
	// page's refreshes.
	sendMessage(t, ctx, "please send it to y")
	do(t, ctx, "open the admin page", chromedp.Navigate(url+"/admin"))
	until(t, ctx, "the pending approval with a reason field", `!!document.querySelector('[data-testid="gates-row"] [data-testid="admin-reason"]')`)
	const adminReason = "y is not ready"
	do(t, ctx, "type a reason", chromedp.SendKeys(css(`[data-testid="admin-reason"]`), adminReason))
	do(t, ctx, "deny", chromedp.Click(css(`[data-testid="admin-deny"]`)))
	until(t, ctx, "no pending approval left", `!document.querySelector('[data-testid="admin-deny"]')`)
	e.Eventually("the answer after the admin's denial", func() bool { return toolResultSaid(e.Model.Requests(), adminReason) })
	gs, err = e.Store.ListGates(context.Background(), "", gh.GateDenied, 10)
	if err != nil || len(gs) != 2 {
		t.Fatalf("denied gates: %+v %v", gs, err)
	}
	for _, g := range gs {
		if g.ToolCallID == "call_2" && (g.Reason != adminReason || g.DecidedBy != gh.LocalUser) {
			t.Fatalf("the admin's decision: %+v", g)
		}
	}
	if sends.Load() != 0 {
		t.Fatal("a denied call ran")
	}
}
