package web_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/gatehouse/gatehouse/internal/testing/stacktest"
	"github.com/gatehouse/gatehouse/tools"
)

// cardJS reads the fields of the card in the element matching sel: each
// label with its text and whether anything in it is an element (it must
// not be: values are text, never HTML).
const cardJS = `(sel) => Array.from(document.querySelectorAll(sel + ' [data-testid="gate-field"]')).map(dd => ({
  label: dd.dataset.label, text: dd.textContent, block: dd.classList.contains('block'), elements: dd.querySelectorAll('*').length}))`

type shownField struct {
	Label    string `json:"label"`
	Text     string `json:"text"`
	Block    bool   `json:"block"`
	Elements int    `json:"elements"`
}

// The web chat and the admin page show a card's fields as the chat
// platforms do: every field whole, as text (never HTML), with bidi
// overrides and zero-width characters written as escapes; and the admin
// page opens the card a clipped chat card links to, /admin#card=<id>.
func TestBrowserCardShowsFieldsEscaped(t *testing.T) {
	email := tools.NewEmailSend(tools.EmailConfig{SMTPURL: "smtp://127.0.0.1:1?tls=none", From: "agent@example.com"})
	args, _ := json.Marshal(map[string]string{
		"to":      "\"Sara\u202Egnp.exe\" <sara@example.com>",
		"subject": "<img src=x onerror=\"document.title='pwned'\"> pay\u200Bpal",
		"body":    "Hello,\n<script>document.title='pwned'</script>\n**not bold**",
	})
	script := fmt.Sprintf(`[{"match": "send the mail", "toolCalls": [{"id": "call_1", "name": "email_send", "arguments": %s}]}, {"text": "Sent."}]`, args)
	_, url := startStack(t, nil, stacktest.EnvOptions{Script: script, Tools: []tools.Tool{email}})
	ctx := browser(t)
	newChat(t, ctx, url)
	sendMessage(t, ctx, "please send the mail")
	until(t, ctx, "the approval card", `!!document.querySelector('[data-testid="gate-card"] [data-testid="gate-field"]')`)

	want := []shownField{
		{Label: "To", Text: `sara@example.com (display name "Sara\u202Egnp.exe")`},
		{Label: "Subject", Text: `<img src=x onerror="document.title='pwned'"> pay\u200Bpal`},
		{Label: "Body", Text: "Hello,\n<script>document.title='pwned'</script>\n**not bold**", Block: true},
	}
	check := func(where, sel string) {
		t.Helper()
		got, err := chromedp.Run(ctx, chromedp.Evaluate[[]shownField](fmt.Sprintf("(%s)(%q)", cardJS, sel)))
		if err != nil {
			t.Fatalf("%s: read the card: %v", where, err)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: fields %+v, want %+v", where, got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("%s: field %d is %+v, want %+v", where, i, got[i], want[i])
			}
		}
		raw, err := chromedp.Run(ctx, chromedp.Evaluate[bool](fmt.Sprintf(
			`document.querySelector(%q).textContent.includes('\u202E') || document.querySelector(%q).textContent.includes('\u200B') || !!document.querySelector('img, %s script') || document.title === 'pwned'`, sel, sel, sel)))
		if err != nil || raw {
			t.Fatalf("%s: a raw bidi override, zero-width space or element from an argument on the page (%v)", where, err)
		}
	}
	check("web chat", `[data-testid="gate-card"]`)
	screenshot(t, ctx, "card.png")

	id, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('[data-testid="gate-card"]').dataset.gateId`))
	if err != nil || id == "" {
		t.Fatalf("gate id: %q %v", id, err)
	}
	do(t, ctx, "open the card's link", chromedp.Navigate(url+"/admin#card="+id))
	until(t, ctx, "the card page", `!document.getElementById('card').hidden && !!document.querySelector('#card [data-testid="gate-field"]')`)
	check("admin card page", `#card`)
	until(t, ctx, "the card's buttons while it waits", `!!document.querySelector('[data-testid="card-approve"]') && document.getElementById('card-id').textContent === `+fmt.Sprintf("%q", id))
	check("admin pending list", `#gates`)
	screenshot(t, ctx, "admin-card.png")
}
