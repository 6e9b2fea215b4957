package web_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/chromedp/chromedp"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/adapters/telegram/telegramtest"
	"github.com/gatehouse/gatehouse/internal/stacktest"
	"github.com/gatehouse/gatehouse/tools"
	"github.com/gatehouse/gatehouse/toolworker"
)

// The admin page: what became of each message a platform delivered, what
// to do when nobody is allowed, and the pending approvals with buttons.
func TestBrowserAdmin(t *testing.T) {
	var sends atomic.Int32
	send := toolworker.FuncTool{ToolName: "send", ToolTier: tools.Danger, Desc: "send a thing",
		Fn: func(context.Context, tools.Call) (string, error) { sends.Add(1); return "sent", nil }}
	script := `[{"match": "please send", "toolCalls": [{"id": "call_1", "name": "send", "arguments": {"to": "x"}}]}, {"text": "Sent it."}]`
	// A Telegram gateway over the same stack serves the admin endpoints;
	// nobody is allowed on it yet.
	s, url := startStack(t, telegramtest.TelegramFactory, stacktest.EnvOptions{Script: script, Tools: []tools.Tool{send}, Allowed: []string{}, NoStart: true})
	// A stranger writes on Telegram: nobody is allowed yet.
	if _, err := s.Gateway.Receive(context.Background(), gh.Inbound{Platform: gh.PlatformTelegram, UpdateID: "41", ChatID: "5005", UserID: "5005",
		UserName: "stranger", Text: "hello bot"}); err != nil {
		t.Fatal(err)
	}
	ctx := browser(t)
	newChat(t, ctx, url)
	sendMessage(t, ctx, "please send it")
	until(t, ctx, "the approval card in the chat", `!!document.querySelector('[data-testid="gate-approve"]')`)

	do(t, ctx, "open the admin page", chromedp.Navigate(url+"/admin"))
	until(t, ctx, "the dropped message in the receive log", `Array.from(document.querySelectorAll('[data-testid="receive-row"]')).some(r => r.textContent.includes("hello bot") && r.textContent.includes("not_allowed"))`)
	until(t, ctx, "the hint to allow someone", `document.getElementById("adapters-hint").textContent.includes("TELEGRAM_ALLOWED_USERS")`)
	until(t, ctx, "the served platform in the receive-log filter", `Array.from(document.querySelectorAll('#receive-filter select[name="platform"] option')).map(o => o.value).join() === ",telegram"`)
	until(t, ctx, "the pending approval", `Array.from(document.querySelectorAll('[data-testid="gates-row"]')).some(r => r.textContent.includes("send"))`)
	screenshot(t, ctx, "admin.png")
	do(t, ctx, "approve from the admin page", chromedp.Click(css(`[data-testid="admin-approve"]`)))
	until(t, ctx, "no pending approval left", `!document.querySelector('[data-testid="admin-approve"]')`)
	deadline := 200
	for sends.Load() == 0 && deadline > 0 {
		chromedp.Run(ctx, chromedp.Sleep(50_000_000))
		deadline--
	}
	if n := sends.Load(); n != 1 {
		t.Fatalf("approving on the admin page ran the effect %d times", n)
	}
	gs, err := s.Store.ListGates(context.Background(), "", gh.GateApproved, 10)
	if err != nil || len(gs) != 1 || gs[0].DecidedBy != gh.LocalUser || !strings.Contains(gs[0].Surface, "web") {
		t.Fatalf("the decision is the operator's, from the web: %+v %v", gs, err)
	}
}
