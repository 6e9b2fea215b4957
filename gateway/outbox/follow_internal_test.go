package outbox

import (
	"encoding/json"
	"testing"

	gh "github.com/gatehouse/gatehouse"
)

// An answer that cites passages reaches a chat with one short Sources
// line: each document and heading once, at most three, the rest counted;
// an answer without sources is sent as it is.
func TestDeliverableAddsTheSourcesLine(t *testing.T) {
	text := func(a gh.AssistantMessage) string {
		t.Helper()
		raw, _ := json.Marshal(a)
		kind, payload, ok := deliverable(gh.Event{Kind: gh.KindAssistantMessage, Payload: raw})
		if !ok || kind != "message" {
			t.Fatalf("%+v: kind %q ok %v", a, kind, ok)
		}
		var m Text
		if err := json.Unmarshal(payload, &m); err != nil {
			t.Fatal(err)
		}
		return m.Text
	}
	sick := gh.Source{DocumentID: 1, Document: "handbook.md", Heading: "Handbook > Leave > Sick leave", PassageID: 7, Collection: "shared"}
	a := gh.AssistantMessage{Text: "Twelve days (handbook.md).", StopReason: gh.StopEndTurn,
		Sources: []gh.Source{sick, sick, {DocumentID: 2, Document: "notes.txt", PassageID: 9}}}
	if got, want := text(a), "Twelve days (handbook.md).\n\nSources: handbook.md (Handbook > Leave > Sick leave), notes.txt"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}

	a.Sources = []gh.Source{{Document: "a.md", Heading: "A"}, {Document: "b.md"}, {Document: "c.md"}, {Document: "d.md"}, {Document: "e.md"}}
	if got, want := text(a), "Twelve days (handbook.md).\n\nSources: a.md (A), b.md, c.md, +2 more"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}

	// A name with a hidden character is spelled out, not drawn as another.
	a.Sources = []gh.Source{{Document: "pay\u202Eevil.md"}}
	if got := text(a); got == "Twelve days (handbook.md).\n\nSources: pay\u202Eevil.md" {
		t.Fatalf("a hidden character reached the chat: %q", got)
	}

	a.Sources = nil
	if got := text(a); got != "Twelve days (handbook.md)." {
		t.Fatalf("without sources: %q", got)
	}
}
