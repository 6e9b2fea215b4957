package tools_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	gh "github.com/gatehouse/gatehouse"
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
