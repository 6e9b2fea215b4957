package web_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/gatehouse/gatehouse/internal/testing/stacktest"
	"github.com/gatehouse/gatehouse/tools"
	"github.com/gatehouse/gatehouse/toolworker"
)

// orderJS lists, in page order, what the chat shows of the card, the
// messages and the notes: "card", "user:<text>", "assistant:<text>",
// "note:<text>".
const orderJS = `Array.from(document.querySelectorAll('[data-testid="gate-card"], [data-testid="message"], [data-testid="note"]')).map(n => {
  if (n.dataset.testid === 'gate-card') return 'card';
  if (n.dataset.testid === 'note') return 'note:' + n.textContent;
  const b = n.querySelector('.bubble');
  return n.dataset.role + ':' + (b ? b.textContent : '');
})`

// A message typed in the web chat while a card waits is answered at once,
// the card still waiting (#30); the page draws the aside between the card
// and its turn's outcome, which follows the decision below it.
func TestBrowserAsideWhileACardWaits(t *testing.T) {
	var sends atomic.Int32
	send := toolworker.FuncTool{ToolName: "send", ToolTier: tools.Danger, Desc: "send a thing",
		Fn: func(context.Context, tools.Call) (string, error) { sends.Add(1); return "sent", nil }}
	script := `[{"match": "please send", "toolCalls": [{"id": "call_1", "name": "send", "arguments": {"to": "x"}}]},
		{"match": "weather", "text": "Sunny tomorrow."}, {"text": "Sent it."}]`
	_, url := startStack(t, nil, stacktest.EnvOptions{Script: script, Tools: []tools.Tool{send}})
	ctx := browser(t)
	newChat(t, ctx, url)
	sendMessage(t, ctx, "please send it")
	until(t, ctx, "the approval card", `!!document.querySelector('[data-testid="gate-card"] [data-testid="gate-approve"]')`)
	sendMessage(t, ctx, "what about the weather?")
	until(t, ctx, "the aside's answer while the card waits", `Array.from(document.querySelectorAll('[data-testid="message"][data-role="assistant"] .bubble')).some(b => b.textContent === "Sunny tomorrow.") && !!document.querySelector('[data-testid="gate-approve"]')`)
	if sends.Load() != 0 {
		t.Fatal("the effect ran before approval")
	}
	screenshot(t, ctx, "aside-waiting.png")
	do(t, ctx, "approve", chromedp.Click(css(`[data-testid="gate-approve"]`)))
	until(t, ctx, "the outcome", `Array.from(document.querySelectorAll('[data-testid="message"][data-role="assistant"] .bubble')).some(b => b.textContent === "Sent it.")`)
	check := func(when string) {
		t.Helper()
		got, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](orderJS))
		if err != nil {
			t.Fatal(err)
		}
		pos := map[string]int{}
		for i, s := range got {
			if _, seen := pos[s]; !seen {
				pos[s] = i
			}
		}
		card, aside, asideAnswer, outcome := pos["card"], pos["user:what about the weather?"], pos["assistant:Sunny tomorrow."], pos["assistant:Sent it."]
		note, hasNote := pos["note:Answered while a card waits; its turn goes on after the decision."]
		cont, hasCont := pos["note:Continuing the turn whose card was decided above."]
		if !(pos["user:please send it"] < card && card < aside && aside < asideAnswer && asideAnswer < outcome) || !hasNote || !hasCont ||
			note < aside || note > asideAnswer || cont < asideAnswer || cont > outcome {
			t.Fatalf("%s: the page shows %q; want the request, its card, the aside (noted) and its answer, then the continuation (noted) and the outcome", when, got)
		}
	}
	check("live")
	if n := sends.Load(); n != 1 {
		t.Fatalf("the effect ran %d times", n)
	}
	do(t, ctx, "reload", chromedp.Reload())
	until(t, ctx, "the outcome after the reload", `Array.from(document.querySelectorAll('[data-testid="message"][data-role="assistant"] .bubble')).some(b => b.textContent === "Sent it.")`)
	check("after a reload")
	screenshot(t, ctx, "aside-decided.png")
}
