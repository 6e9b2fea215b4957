package web_test

import (
	"log/slog"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/gatehouse/gatehouse/httpapi"
	"github.com/gatehouse/gatehouse/httpapi/knowledgeapi"
	"github.com/gatehouse/gatehouse/internal/testing/stacktest"
	"github.com/gatehouse/gatehouse/knowledge"
)

const handbook = `# Handbook

## Leave

### Sick leave

Employees get twelve paid sick days per year. Report sickness <b>before</b> nine o'clock.

## Expenses

Travel expenses are reimbursed within thirty days of submitting receipts.
`

// An answer that names the handbook shows the passage it cites as a
// numbered footnote (document — heading); clicking it opens the passage's
// text, fetched from /v1/documents/{id}, as text (the passage's markup is
// not drawn). An answer naming no document has no footnotes.
func TestBrowserCitations(t *testing.T) {
	script := `[{"match": "sick days", "text": "Twelve paid sick days a year (source: handbook.md)."}, {"match": "hello", "text": "Hello there."}]`
	// The knowledge endpoints are served by the stack's library, which
	// exists once the stack does (as in TestBrowserAdminKnowledge).
	var h atomic.Pointer[knowledgeapi.Handler]
	lazy := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.Load().ServeHTTP(w, r) })
	e, url := startStack(t, nil, stacktest.EnvOptions{Script: script, Knowledge: true, HTTP: &httpapi.Config{Knowledge: lazy}})
	h.Store(knowledgeapi.New(knowledgeapi.Config{Library: e.Knowledge, WriteError: httpapi.ErrorWriter(slog.New(slog.DiscardHandler))}))
	if _, _, err := e.Knowledge.Add(e.Ctx, knowledge.AddRequest{Collection: knowledge.Shared, Name: "handbook.md", Source: "api", Data: []byte(handbook)}); err != nil {
		t.Fatal(err)
	}

	ctx := browser(t)
	newChat(t, ctx, url)
	sendMessage(t, ctx, "hello")
	until(t, ctx, "the first answer", `Array.from(document.querySelectorAll('[data-testid="message"][data-role="assistant"] .bubble')).some(b => b.textContent === "Hello there.")`)
	until(t, ctx, "the turn to end", `!document.querySelector('[data-testid="typing"],[data-testid="pending"]')`)
	sendMessage(t, ctx, "How many paid sick days do employees get per year?")
	until(t, ctx, "the footnote under the cited answer", `(() => {
		const as = Array.from(document.querySelectorAll('[data-testid="message"][data-role="assistant"]'));
		if (as.length !== 2 || as[0].querySelector('[data-testid="sources"]')) return false;
		const s = Array.from(as[1].querySelectorAll('[data-testid="sources"] > li'));
		return s.length === 1 && s[0].textContent === "handbook.md — Handbook > Leave > Sick leave";
	})()`)
	do(t, ctx, "open the footnote", chromedp.Click(css(`[data-testid="source"]`)))
	until(t, ctx, "the passage in the dialog, as text", `(() => {
		const d = document.querySelector('[data-testid="source-dialog"]'), x = document.querySelector('[data-testid="source-text"]');
		return d.open && x.textContent.includes("twelve paid sick days per year") && x.textContent.includes("<b>before</b>") && x.children.length === 0 &&
			document.querySelector('[data-testid="source-title"]').textContent === "Handbook (handbook.md)" &&
			document.querySelector('[data-testid="source-heading"]').textContent === "Handbook > Leave > Sick leave";
	})()`)
	screenshot(t, ctx, "citations.png")
	do(t, ctx, "close it", chromedp.Click(css(`[data-testid="source-close"]`)))
	until(t, ctx, "the dialog closed", `!document.querySelector('[data-testid="source-dialog"]').open`)
}
