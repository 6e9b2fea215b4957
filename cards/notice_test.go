package cards_test

import (
	"encoding/json"
	"strings"
	"testing"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/cards"
)

// A card-pending notice is committed as facts and worded on the surface;
// a notice its writer worded keeps its words; Worded fills an event's
// notice for API clients and leaves every other event alone.
func TestNoticeTextWordsTheKernelsFacts(t *testing.T) {
	n := gh.Notice{Code: gh.NoticeCardPending, Pending: &gh.PendingCard{GateID: "g1", Kind: gh.GateKindApproval, Tool: "email_send",
		Fields: []gh.CardField{{Label: "To", Value: "sara@example.com"}}, Source: "web", More: 1}}
	text := cards.NoticeText(n)
	for _, want := range []string{"email_send", "To: sara@example.com", "above in this conversation", "(and 1 more)"} {
		if !strings.Contains(text, want) {
			t.Fatalf("%q lacks %q", text, want)
		}
	}
	if got := cards.NoticeText(gh.Notice{Code: "fallback", Text: "switched model"}); got != "switched model" {
		t.Fatalf("worded notice: %q", got)
	}
	if got := cards.NoticeText(gh.Notice{Code: gh.NoticeCardPending}); got != "" {
		t.Fatalf("a notice without facts: %q", got)
	}
	p, _ := json.Marshal(n)
	e := cards.Worded(gh.Event{Kind: gh.KindNotice, Payload: p})
	var back gh.Notice
	if json.Unmarshal(e.Payload, &back) != nil || back.Text != text || back.Pending == nil {
		t.Fatalf("worded event: %s", e.Payload)
	}
	other := gh.Event{Kind: gh.KindUserMessage, Payload: json.RawMessage(`{"text":"hi"}`)}
	if got := cards.Worded(other); string(got.Payload) != `{"text":"hi"}` {
		t.Fatalf("another kind changed: %s", got.Payload)
	}
}
