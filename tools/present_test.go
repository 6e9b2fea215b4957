package tools_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/internal/testing/smtptest"
	"github.com/gatehouse/gatehouse/tools"
	"github.com/gatehouse/gatehouse/tools/toolstest"
)

func field(t *testing.T, fields []gh.CardField, label string) gh.CardField {
	t.Helper()
	for _, f := range fields {
		if f.Label == label {
			return f
		}
	}
	t.Fatalf("no field %q in %+v", label, fields)
	return gh.CardField{}
}

// The padded display name of the issue: what a mail client shows is
// "sara@example.com", where the mail goes is the attacker. The card shows
// the address the send uses first, the name apart and pointed out — and
// the send goes exactly there.
func TestEmailCardShowsTheRecipientsTheSendUses(t *testing.T) {
	be := &smtpRecorder{}
	addr := startSMTP(t, be, nil)
	tool := tools.NewEmailSend(tools.EmailConfig{SMTPURL: "smtp://" + addr + "?tls=none", From: "bot@example.com", Timeout: 5 * time.Second})
	padded := `"sara@example.com` + strings.Repeat(" ", 290) + `" <evil@attacker.example>, Bo <bo@example.com>, plain@example.com`
	args := toolstest.Args(t, map[string]string{"to": padded, "subject": "Report", "body": "Hi,\nthe report."})
	fields, err := tools.Present(tool, args)
	if err != nil {
		t.Fatal(err)
	}
	to := field(t, fields, "To")
	if to.FreeText {
		t.Fatal("recipients must be shown whole, never clipped")
	}
	lines := strings.Split(to.Value, "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "evil@attacker.example (display name \"sara@example.com"+strings.Repeat(" ", 290)+"\")") ||
		!strings.Contains(lines[0], "looks like an address; the mail goes to evil@attacker.example") ||
		lines[1] != `bo@example.com (display name "Bo")` || lines[2] != "plain@example.com" {
		t.Fatalf("recipients on the card:\n%s", to.Value)
	}
	if s := field(t, fields, "Subject"); s.Value != "Report" || s.FreeText {
		t.Fatalf("subject %+v", s)
	}
	if b := field(t, fields, "Body"); b.Value != "Hi,\nthe report." || !b.FreeText {
		t.Fatalf("body %+v", b)
	}
	res, err := tool.Run(context.Background(), tools.Call{ToolCall: gh.ToolCall{ID: "c1", Arguments: args}, IdempotencyKey: "k1"})
	if err != nil || res.IsError {
		t.Fatalf("send: %v %+v", err, res)
	}
	got := be.deliveries()
	if len(got) != 1 || !slices.Equal(got[0].To, []string{"evil@attacker.example", "bo@example.com", "plain@example.com"}) {
		t.Fatalf("the envelope went to %+v; the card showed %q", got, to.Value)
	}
}

func TestEmailCardRefusesWhatTheSendRefuses(t *testing.T) {
	tool := tools.NewEmailSend(tools.EmailConfig{})
	for _, a := range []map[string]string{
		{"to": "Sara", "subject": "s", "body": "b"},
		{"to": "", "subject": "s", "body": "b"},
		{"to": "a@example.com", "subject": "one\r\nBcc: evil@attacker.example", "body": "b"},
	} {
		if fields, err := tools.Present(tool, toolstest.Args(t, a)); err == nil {
			t.Errorf("%v: a card %+v for arguments the send refuses", a, fields)
		}
	}
}

func TestWorkspaceWriteCardShowsThePathAsWritten(t *testing.T) {
	tool := tools.NewWorkspaceWrite(tools.WorkspaceConfig{})
	fields, err := tools.Present(tool, toolstest.Args(t, map[string]string{"path": "./notes//a/../plan.md", "content": "x"}))
	if err != nil {
		t.Fatal(err)
	}
	if p := field(t, fields, "Path"); p.Value != "notes/plan.md" || p.FreeText {
		t.Fatalf("path %+v", p)
	}
	if c := field(t, fields, "Content"); c.Value != "x" || !c.FreeText {
		t.Fatalf("content %+v", c)
	}
	for _, p := range []string{"../outside", "/etc/passwd", "", "."} {
		if _, err := tools.Present(tool, toolstest.Args(t, map[string]string{"path": p, "content": "x"})); err == nil {
			t.Errorf("path %q: a card for a write that is refused", p)
		}
	}
}

// A tool that declares nothing (an MCP tool) shows every argument whole:
// strings as they are, anything else as compact JSON, keys sorted, no
// HTML escaping.
func TestUndeclaredToolsShowEveryArgument(t *testing.T) {
	tool := toolWithoutPresenter{}
	raw := json.RawMessage(`{"z": {"b": 1, "a": "<x & y>"}, "a": "plain <b>", "n": 1.50, "list": [true, null]}`)
	fields, err := tools.Present(tool, raw)
	if err != nil {
		t.Fatal(err)
	}
	want := []gh.CardField{{Label: "a", Value: "plain <b>"}, {Label: "list", Value: "[true,null]"}, {Label: "n", Value: "1.50"}, {Label: "z", Value: `{"a":"<x & y>","b":1}`}}
	if !slices.Equal(fields, want) {
		t.Fatalf("fields %+v, want %+v", fields, want)
	}
	if f, err := tools.ArgumentFields(json.RawMessage(`[1,2]`)); err != nil || len(f) != 1 || f[0].Value != "[1,2]" || f[0].FreeText {
		t.Fatalf("arguments that are not an object: %+v %v", f, err)
	}
}

type toolWithoutPresenter struct{ tools.Tool }

// The lookalikes of issue #26: the card shows each address as a mail
// server reads it, with a warning line of its own, and the envelope the
// SMTP server receives is, byte for byte, the address the card says is
// sent. An address whose domain is not a valid IDN gets no card.
func TestEmailCardShowsLookalikesAsTheSendReadsThem(t *testing.T) {
	srv := smtptest.Start(t)
	tool := tools.NewEmailSend(tools.EmailConfig{SMTPURL: srv.URL(), From: "bot@example.com", Timeout: 5 * time.Second})
	for i, c := range []struct {
		to, line, warning, sent string
	}{
		{
			to:      "s\u0430ra@example.com",
			line:    "s\u0430ra@example.com",
			warning: `⚠ Not plain ASCII: s` + "\u0430" + `ra@example.com: local part "s` + "\u0430" + `ra" has U+0430 (CYRILLIC SMALL LETTER A), mixed scripts (Latin, Cyrillic)`,
			sent:    "s\u0430ra@example.com",
		},
		{
			to:      "Sara <sara@ex\u0430mple.com>",
			line:    "sara@ex\u0430mple.com (display name \"Sara\")",
			warning: `⚠ Not plain ASCII: sara@ex` + "\u0430" + `mple.com is sent as sara@xn--exmple-4nf.com: domain label "ex` + "\u0430" + `mple" has U+0430 (CYRILLIC SMALL LETTER A), mixed scripts (Latin, Cyrillic)`,
			sent:    "sara@xn--exmple-4nf.com",
		},
		{
			to:      "sara@example.com\u3002evil.test",
			line:    "sara@example.com.evil.test",
			warning: "⚠ Rewritten: written sara@example.com\u3002evil.test, with U+3002 (IDEOGRAPHIC FULL STOP); a mail server reads it as sara@example.com.evil.test, and that is where it is sent",
			sent:    "sara@example.com.evil.test",
		},
		{
			to:   "sara@example.com",
			line: "sara@example.com",
			sent: "sara@example.com",
		},
	} {
		args := toolstest.Args(t, map[string]string{"to": c.to, "subject": "Report", "body": "Hi."})
		fields, err := tools.Present(tool, args)
		if err != nil {
			t.Fatal(err)
		}
		var card []string
		for _, f := range fields {
			card = append(card, f.Label+": "+f.Value)
		}
		want := []string{"To: " + c.line}
		if c.warning != "" {
			want = append(want, c.warning)
		}
		want = append(want, "Subject: Report", "Body: Hi.")
		if !slices.Equal(card, want) {
			t.Fatalf("%q: the card says\n%s\nwant\n%s", c.to, strings.Join(card, "\n"), strings.Join(want, "\n"))
		}
		res, err := tool.Run(context.Background(), tools.Call{ToolCall: gh.ToolCall{ID: "c1", Arguments: args}})
		if err != nil || res.IsError {
			t.Fatalf("send: %v %+v", err, res)
		}
		mails := srv.Mails()
		if len(mails) != i+1 || !slices.Equal(mails[i].To, []string{c.sent}) {
			t.Fatalf("%q: the envelope went to %+v; the card said %q", c.to, mails[len(mails)-1].To, c.sent)
		}
		if !strings.Contains(strings.Join(card, "\n"), c.sent) {
			t.Fatalf("%q: the card never shows %q, where the mail went", c.to, c.sent)
		}
	}
	for _, to := range []string{"sara@example.com\u3002", "sara@xn--zz.com", "sara@-bad.example"} {
		args := toolstest.Args(t, map[string]string{"to": to, "subject": "s", "body": "b"})
		fields, err := tools.Present(tool, args)
		if gh.ErrorCode(err) != gh.CodeInvalid || !strings.Contains(err.Error(), "not sent") {
			t.Errorf("%q: a card %+v (%v); want an invalid-argument refusal", to, fields, err)
		}
		if res, _ := tool.Run(context.Background(), tools.Call{ToolCall: gh.ToolCall{ID: "c2", Arguments: args}}); !res.IsError {
			t.Errorf("%q: sent: %+v", to, res)
		}
	}
	if n := len(srv.Mails()); n != 4 {
		t.Fatalf("%d mails, want 4", n)
	}
}

// A grant "for this chat" covers the addresses as sent: approving
// sara@example.com covers neither its lookalike nor the address that
// "。" turns it into.
func TestEmailGrantBoundIsTheAddressAsSent(t *testing.T) {
	tool := tools.NewEmailSend(tools.EmailConfig{})
	bound := func(to string) string {
		b, _, ok := tool.GrantBound(toolstest.Args(t, map[string]string{"to": to, "subject": "s", "body": "b"}))
		if !ok {
			t.Fatalf("%q: no grant offered", to)
		}
		return b
	}
	plain := bound("Sara <sara@Example.com>")
	if plain != "sara@example.com" {
		t.Fatalf("bound %q", plain)
	}
	for to, want := range map[string]string{
		"s\u0430ra@example.com":           "s\u0430ra@example.com",
		"sara@ex\u0430mple.com":           "sara@xn--exmple-4nf.com",
		"sara@example.com\u3002evil.test": "sara@example.com.evil.test",
		"sara@\uff45xample.com":           "sara@example.com", // the same mailbox, as a server reads it
	} {
		if got := bound(to); got != want {
			t.Errorf("%q: bound %q, want %q", to, got, want)
		}
	}
}
