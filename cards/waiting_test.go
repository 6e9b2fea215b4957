package cards

import (
	"strings"
	"testing"

	gh "github.com/gatehouse/gatehouse"
)

func TestWaitingNamesTheCardAndWhereItIs(t *testing.T) {
	o := gh.GateOpened{Tool: "email_send", Kind: gh.GateKindApproval, Fields: []gh.CardField{
		{Label: "To", Value: "sara@example.com\u202E\nbob@example.com"}, {Label: "Body", Value: "the body", FreeText: true}}}
	chat := Waiting(o, "telegram", 0)
	for _, want := range []string{"email_send", `To: sara@example.com\u202E; bob@example.com`, "above in this chat", "is answered now, in a turn of its own", `reply "cancel"`} {
		if !strings.Contains(chat, want) {
			t.Fatalf("%q lacks %q", chat, want)
		}
	}
	if strings.Contains(chat, "the body") || strings.ContainsRune(chat, '\u202E') || strings.Contains(chat, "\n") {
		t.Fatalf("free text, a bidi override or a line break in %q", chat)
	}
	web := Waiting(o, "web", 2)
	if !strings.Contains(web, "above in this conversation") || !strings.Contains(web, "(and 2 more)") || strings.Contains(web, "cancel") {
		t.Fatalf("web: %q", web)
	}
	if api := Waiting(o, "api", 0); !strings.Contains(api, "GET /v1/gates") || strings.Contains(api, "cancel") {
		t.Fatalf("api: %q", api)
	}
	long := Waiting(gh.GateOpened{Tool: "shell_exec", Kind: gh.GateKindApproval, Fields: []gh.CardField{{Label: "Command", Value: strings.Repeat("x", 500)}}}, "slack", 0)
	if strings.Count(long, "x") >= 500 || !strings.Contains(long, "…") {
		t.Fatalf("a long field is not clipped: %q", long)
	}
	// A gate.opened from before card fields: the arguments, by name.
	old := Waiting(gh.GateOpened{Tool: "post_note", Kind: gh.GateKindApproval, Arguments: []byte(`{"text":"hello"}`)}, "discord", 0)
	if !strings.Contains(old, "post_note, text: hello") {
		t.Fatalf("old event: %q", old)
	}
	q := Waiting(gh.GateOpened{Tool: "email_send", Kind: gh.GateKindClarify, Question: "Which Sara?"}, "telegram", 0)
	if !strings.Contains(q, "Which Sara?") || strings.Contains(q, "cancel") {
		t.Fatalf("question: %q", q)
	}
}

func TestIsCancelIsTheWholeWordInAnyCase(t *testing.T) {
	for text, want := range map[string]bool{"cancel": true, " Cancel\n": true, "CANCEL": true, "cancel it": false, "/cancel": false, "cancelled": false, "": false} {
		if got := IsCancel(text); got != want {
			t.Errorf("IsCancel(%q) = %v, want %v", text, got, want)
		}
	}
}
