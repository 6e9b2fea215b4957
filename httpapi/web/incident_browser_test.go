package web_test

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/internal/testing/stacktest"
	"github.com/gatehouse/gatehouse/tools"
	"github.com/gatehouse/gatehouse/toolworker"
)

// A stuck turn as the operator meets it in the browser: the incident card
// in the web chat with Close and Diagnose, the open incident on the admin
// page, Close pressed in the chat ends the turn and the card says so, and
// the admin page no longer lists it as open.
func TestBrowserStuckTurnIncident(t *testing.T) {
	release := make(chan struct{})
	lookup := toolworker.FuncTool{ToolName: "slow_lookup", ToolTier: tools.Safe, Desc: "looks something up, slowly",
		Fn: func(ctx context.Context, c tools.Call) (string, error) {
			select {
			case <-release:
				return "found", nil
			case <-ctx.Done():
				return "", ctx.Err()
			}
		}}
	script := `[{"match": "look it up", "toolCalls": [{"id": "call_1", "name": "slow_lookup", "arguments": {}}]}, {"text": "Found it."}]`
	s, url := startStack(t, nil, stacktest.EnvOptions{Script: script, Tools: []tools.Tool{lookup},
		StuckAfter: 2500 * time.Millisecond, LeaseTTL: 3 * time.Second})
	// Before the stack's cleanups (last in, first out): the tool lets go.
	t.Cleanup(func() { close(release) })
	ctx := browser(t)
	newChat(t, ctx, url)
	sendMessage(t, ctx, "look it up please")
	until(t, ctx, "the incident card in the chat", `Array.from(document.querySelectorAll('[data-testid="gate-card"]')).some(c =>
		c.textContent.includes("🚨") && c.textContent.includes("no progress") && c.textContent.includes("slow_lookup") &&
		Array.from(c.querySelectorAll('[data-testid="gate-option"]')).map(b => b.textContent).join() === "Close,Diagnose")`)
	screenshot(t, ctx, "incident-card.png")
	session := sessionOfPage(t, ctx)

	do(t, ctx, "open the admin page", chromedp.Navigate(url+"/admin"))
	until(t, ctx, "the open incident listed", `!document.getElementById("incidents").hidden &&
		document.querySelector("#incidents tbody").textContent.includes("no progress") && document.querySelector("#incidents tbody").textContent.includes("open")`)

	do(t, ctx, "back to the chat", chromedp.Navigate(url+"/#/s/"+session))
	until(t, ctx, "the card again", `!!document.querySelector('[data-testid="gate-option"]')`)
	do(t, ctx, "press Close", chromedp.Evaluate[chromedp.Void](`Array.from(document.querySelectorAll('[data-testid="gate-option"]')).find(b => b.textContent === "Close").click()`))
	until(t, ctx, "the card says it was closed", `Array.from(document.querySelectorAll('[data-testid="gate-outcome"]')).some(o => o.textContent === "Closed by the operator via web")`)
	until(t, ctx, "the closing notice", `document.body.textContent.includes("This turn was closed by the operator")`)
	r, ok, err := s.Kernel.LatestRun(context.Background(), session)
	if err != nil || !ok || r.State != gh.RunCancelled {
		t.Fatalf("the run after Close: %+v %v %v", r, ok, err)
	}
	do(t, ctx, "the admin page again", chromedp.Navigate(url+"/admin"))
	until(t, ctx, "no open incident", `Number(document.body.dataset.refreshed || 0) >= 1 && !document.querySelector('[data-testid="incidents-none"]').hidden`)
}

// sessionOfPage is the session the web chat shows (its #/s/<id>).
func sessionOfPage(t *testing.T, ctx context.Context) string {
	t.Helper()
	id, err := chromedp.Run(ctx, chromedp.Evaluate[string](`decodeURIComponent((/^#\/?s\/([^/?#]+)/.exec(location.hash) || [])[1] || "")`))
	if err != nil || id == "" {
		t.Fatal("the web chat shows no session")
	}
	return id
}
