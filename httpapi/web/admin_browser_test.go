package web_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/adapters/telegram/telegramtest"
	"github.com/gatehouse/gatehouse/httpapi"
	"github.com/gatehouse/gatehouse/internal/backoff"
	"github.com/gatehouse/gatehouse/internal/testing/stacktest"
	"github.com/gatehouse/gatehouse/tools"
	"github.com/gatehouse/gatehouse/tools/mcp"
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
	// The Test: the fake accepts the token; the gateway is not started,
	// so nobody holds the lease — the failing step, with what to do.
	do(t, ctx, "press Test on Telegram", chromedp.Click(css(`[data-testid="adapter-check"][data-platform="telegram"]`)))
	until(t, ctx, "the Test's steps", `document.querySelector('[data-testid="check-result"]').dataset.state === "failed" &&
		["token", "lease", "receiving", "last_message", "reply"].every(n => !!document.querySelector('[data-testid="check-step-' + n + '"]'))`)
	until(t, ctx, "the token accepted", `document.querySelector('[data-testid="check-step-token"]').dataset.result === "pass"`)
	until(t, ctx, "the lease step failing, with what to do", `document.querySelector('[data-testid="check-step-lease"]').dataset.result === "fail" &&
		document.querySelector('[data-testid="check-fix-lease"]').textContent.includes("gatehouse serve") &&
		document.querySelector('[data-testid="check-summary"]').textContent.includes("failed at lease")`)
	until(t, ctx, "the dropped message named", `document.querySelector('[data-testid="check-step-last_message"]').textContent.includes("not_allowed") &&
		document.querySelector('[data-testid="check-fix-last_message"]').textContent.includes("TELEGRAM_ALLOWED_USERS")`)
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

// The admin page as an operator's screen with no chat platform: no error
// at the top, the platforms say none is configured, incidents say none,
// and after a few turns in the web chat (one with an approval) the
// charts show them.
func TestBrowserAdminNoPlatform(t *testing.T) {
	var sends atomic.Int32
	send := toolworker.FuncTool{ToolName: "send", ToolTier: tools.Danger, Desc: "send a thing",
		Fn: func(context.Context, tools.Call) (string, error) { sends.Add(1); return "sent", nil }}
	script := `[{"match": "hello", "text": "Hi there."}, {"match": "please send", "toolCalls": [{"id": "call_1", "name": "send", "arguments": {"to": "x"}}]}, {"text": "Sent it."}]`
	_, url := startStack(t, nil, stacktest.EnvOptions{Script: script, Tools: []tools.Tool{send}})
	ctx := browser(t)

	do(t, ctx, "open the admin page", chromedp.Navigate(url+"/admin"))
	until(t, ctx, "a finished refresh", `Number(document.body.dataset.refreshed || 0) >= 1`)
	until(t, ctx, "the charts drawn", `!!document.getElementById("chart-turns").getAttribute("viewBox")`)
	noBanner(t, ctx)
	until(t, ctx, "no platform, said plainly", `document.getElementById("adapters-hint").textContent.includes("No chat platform")`)
	until(t, ctx, "empty tables", `["adapters", "receive", "dead"].every(id => document.querySelector("#" + id + " tbody").textContent === "nothing here")`)
	until(t, ctx, "no incidents", `!document.querySelector('[data-testid="incidents-none"]').hidden && document.querySelector('[data-testid="incidents-none"]').textContent === "none"`)
	until(t, ctx, "empty charts", `document.querySelectorAll('[data-testid="chart-turns"] [data-testid="bar"]').length === 0 && document.getElementById("chart-turns").dataset.total === "0"`)

	// Two turns: an answer, and a call approved in the chat.
	newChat(t, ctx, url)
	sendMessage(t, ctx, "hello")
	until(t, ctx, "the first answer", `Array.from(document.querySelectorAll('[data-testid="message"][data-role="assistant"] .bubble')).some(b => b.textContent === "Hi there.")`)
	until(t, ctx, "the turn to end", `!document.querySelector('[data-testid="typing"],[data-testid="pending"]')`)
	sendMessage(t, ctx, "please send it")
	until(t, ctx, "the approval card", `!!document.querySelector('[data-testid="gate-card"] [data-testid="gate-approve"]')`)
	do(t, ctx, "approve", chromedp.Click(css(`[data-testid="gate-approve"]`)))
	until(t, ctx, "the answer", `Array.from(document.querySelectorAll('[data-testid="message"][data-role="assistant"] .bubble')).some(b => b.textContent === "Sent it.")`)
	if n := sends.Load(); n != 1 {
		t.Fatalf("the effect ran %d times", n)
	}

	do(t, ctx, "open the admin page again", chromedp.Navigate(url+"/admin"))
	// Both turns settled within the last hour: the bars of the turns
	// chart hold two done turns, and each bucket with turns has its p95.
	until(t, ctx, "two turns in the chart", `(() => {
		const bars = Array.from(document.querySelectorAll('[data-testid="chart-turns"] [data-testid="bar"]'));
		const done = bars.flatMap(b => Array.from(b.querySelectorAll('rect[data-series="done"]'))).reduce((s, r) => s + Number(r.dataset.count), 0);
		const points = document.querySelectorAll('[data-testid="chart-turns"] [data-testid="point"]').length;
		return done === 2 && bars.length >= 1 && points === bars.length &&
			document.getElementById("chart-turns").getAttribute("aria-label").includes(": 2 (2 done, 0 failed, 0 cancelled)");
	})()`)
	// One approval opened and one decided.
	until(t, ctx, "the approval in the chart", `(() => {
		const sum = (s) => Array.from(document.querySelectorAll('[data-testid="chart-gates"] rect[data-series="' + s + '"]')).reduce((n, r) => n + Number(r.dataset.count), 0);
		return sum("opened") === 1 && sum("decided") === 1 &&
			document.getElementById("chart-gates").getAttribute("aria-label").endsWith(": 1 opened, 1 decided") &&
			document.getElementById("legend-gates").textContent.includes("1 approved");
	})()`)
	// The model calls are in the ledger (the scripted model costs nothing).
	until(t, ctx, "the model calls", `/over [3-9] model calls$/.test(document.getElementById("chart-spend").getAttribute("aria-label"))`)
	// Bars carry what they count in their title, for a pointer and a
	// screen reader.
	until(t, ctx, "titles on the bars", `Array.from(document.querySelectorAll('[data-testid="chart-turns"] [data-testid="bar"] > title')).some(t => / done$/.test(t.textContent))`)
	// The day's charts hold the same turns.
	do(t, ctx, "show the last day", chromedp.SetValue(css(`[data-testid="stats-window"]`), "24h"))
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[chromedp.Void](`document.querySelector('[data-testid="stats-window"]').dispatchEvent(new Event("change", {bubbles: true}))`)); err != nil {
		t.Fatal(err)
	}
	until(t, ctx, "the day's turns", `document.getElementById("chart-turns").getAttribute("aria-label").startsWith("Turns settled in the last day: 2 ")`)
	noBanner(t, ctx)
	screenshot(t, ctx, "admin-activity.png")
}

// noBanner checks that the page shows no error at the top once a refresh
// has finished.
func noBanner(t *testing.T, ctx context.Context) {
	t.Helper()
	until(t, ctx, "a finished refresh", `Number(document.body.dataset.refreshed || 0) >= 1`)
	msg, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("status").textContent`))
	if err != nil {
		t.Fatal(err)
	}
	if msg != "" {
		t.Fatalf("the admin page shows an error: %q", msg)
	}
}

// The Tools section lists every tool offered — a built-in and a real MCP
// server's on loopback — with server, tier, isolation and whether it can
// run now; when the MCP server drops the session its row says so, with
// the error, on the next refresh.
func TestBrowserAdminTools(t *testing.T) {
	srv := sdk.NewServer(&sdk.Implementation{Name: "crm", Version: "1"}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "lookup", Description: "Find a customer."},
		func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "found"}}}, nil, nil
		})
	var gone atomic.Bool
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if gone.Load() { // a restarted server: it knows no session
			http.Error(w, "session not found", http.StatusNotFound)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	ctx0, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	remote, err := mcp.Connect(ctx0, mcp.Config{Reconnect: backoff.Policy{Floor: time.Hour}, ReconnectWait: time.Millisecond,
		Servers: []mcp.MCPServer{{Name: "crm", URL: hs.URL, Tier: map[string]tools.Tier{"lookup": tools.Safe}}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { remote.Close() })
	send := toolworker.FuncTool{ToolName: "send", ToolTier: tools.Danger, Desc: "send a thing",
		Fn: func(context.Context, tools.Call) (string, error) { return "sent", nil }}
	offered := append([]tools.Tool{send}, remote...)
	_, url := startStack(t, nil, stacktest.EnvOptions{Tools: offered, HTTP: &httpapi.Config{Tools: tools.NewRegistry(offered...)}})
	ctx := browser(t)

	do(t, ctx, "open the admin page", chromedp.Navigate(url+"/admin"))
	row := func(name string) string { return `document.querySelector('#tools tr[data-tool="` + name + `"]')` }
	until(t, ctx, "the MCP tool, available", `(() => { const r = `+row("crm__lookup")+`; return !!r && r.dataset.available === "true" &&
		Array.from(r.cells).map(c => c.textContent).join("|") === "crm__lookup|crm|safe|never|remote|yes"; })()`)
	until(t, ctx, "the built-in, needing approval", `(() => { const r = `+row("send")+`; return !!r &&
		Array.from(r.cells).map(c => c.textContent).join("|") === "send|builtin|needs approval|always|none|yes"; })()`)
	noBanner(t, ctx)
	screenshot(t, ctx, "admin-tools.png")

	gone.Store(true)
	hs.CloseClientConnections() // the event stream drops; its reconnect finds no session
	until(t, ctx, "the MCP tool, unavailable with the error", `(() => { const r = `+row("crm__lookup")+`; return !!r && r.dataset.available === "false" &&
		r.cells[5].textContent.startsWith("no: ") && r.cells[5].textContent.includes("session not found"); })()`)
}
