package web_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gatehouse/gatehouse/internal/testing/smtptest"
	"github.com/gatehouse/gatehouse/internal/testing/stacktest"
	"github.com/gatehouse/gatehouse/tools"
)

// Issue #26 in the web chat: an address that looks like sara@example.com
// and is not shows as a mail server reads it, with its warning line as a
// field of its own (as text), and once approved on the page the SMTP
// server receives the mail addressed to exactly what the card says is
// sent.
func TestBrowserCardFlagsLookalikeAddresses(t *testing.T) {
	srv := smtptest.Start(t)
	email := tools.NewEmailSend(tools.EmailConfig{SMTPURL: srv.URL(), From: "agent@example.com", Timeout: 10 * time.Second})
	cases := []struct {
		ask, to string
		want    []shownField
		sent    string
	}{
		{
			ask: "lookalike one", to: "s\u0430ra@example.com",
			want: []shownField{
				{Label: "To", Text: "s\u0430ra@example.com"},
				{Label: "⚠ Not plain ASCII", Text: `s` + "\u0430" + `ra@example.com: local part "s` + "\u0430" + `ra" has U+0430 (CYRILLIC SMALL LETTER A), mixed scripts (Latin, Cyrillic)`},
			},
			sent: "s\u0430ra@example.com",
		},
		{
			ask: "lookalike two", to: "sara@ex\u0430mple.com",
			want: []shownField{
				{Label: "To", Text: "sara@ex\u0430mple.com"},
				{Label: "⚠ Not plain ASCII", Text: `sara@ex` + "\u0430" + `mple.com is sent as sara@xn--exmple-4nf.com: domain label "ex` + "\u0430" + `mple" has U+0430 (CYRILLIC SMALL LETTER A), mixed scripts (Latin, Cyrillic)`},
			},
			sent: "sara@xn--exmple-4nf.com",
		},
		{
			ask: "lookalike three", to: "sara@example.com\u3002evil.test",
			want: []shownField{
				{Label: "To", Text: "sara@example.com.evil.test"},
				{Label: "⚠ Rewritten", Text: "written sara@example.com\u3002evil.test, with U+3002 (IDEOGRAPHIC FULL STOP); a mail server reads it as sara@example.com.evil.test, and that is where it is sent"},
			},
			sent: "sara@example.com.evil.test",
		},
	}
	var steps []map[string]any
	for i, c := range cases {
		steps = append(steps,
			map[string]any{"match": c.ask, "toolCalls": []map[string]any{{"id": fmt.Sprintf("call_%d", i+1), "name": "email_send", "arguments": map[string]string{"to": c.to, "subject": "Report", "body": "Hi."}}}},
			map[string]any{"text": "Sent."})
	}
	script, _ := json.Marshal(steps)
	_, url := startStack(t, nil, stacktest.EnvOptions{Script: string(script), Tools: []tools.Tool{email}})
	ctx := browser(t)
	for i, c := range cases {
		newChat(t, ctx, url)
		sendMessage(t, ctx, "please email Sara, "+c.ask)
		until(t, ctx, "the approval card", `!!document.querySelector('[data-testid="gate-card"] [data-testid="gate-approve"]')`)
		got, err := chromedp.Run(ctx, chromedp.Evaluate[[]shownField](fmt.Sprintf("(%s)(%q)", cardJS, `[data-testid="gate-card"]`)))
		if err != nil {
			t.Fatalf("read the card: %v", err)
		}
		want := append(slices.Clone(c.want), shownField{Label: "Subject", Text: "Report"}, shownField{Label: "Body", Text: "Hi.", Block: true})
		if !slices.Equal(got, want) {
			t.Fatalf("%q: the card shows %+v, want %+v", c.to, got, want)
		}
		if n := len(srv.Mails()); n != i {
			t.Fatalf("%d mails before the approval of card %d", n, i+1)
		}
		do(t, ctx, "approve", chromedp.Click(css(`[data-testid="gate-approve"]`)))
		select {
		case m := <-srv.Arrived:
			if !slices.Equal(m.To, []string{c.sent}) {
				t.Fatalf("the mail went to %q; the card said %q", m.To, c.sent)
			}
		case <-time.After(waitFor):
			t.Fatalf("no mail after approving the card of %q", c.to)
		}
		until(t, ctx, "the answer", `Array.from(document.querySelectorAll('[data-testid="message"][data-role="assistant"] .bubble')).some(b => b.textContent === "Sent.")`)
	}
	screenshot(t, ctx, "lookalike-card.png")
}
