package chat

import (
	"encoding/json"
	"html"
	"strings"
	"testing"
	"unicode/utf8"

	gh "github.com/gatehouse/gatehouse"
)

func TestButtonDataRoundTrip(t *testing.T) {
	for _, choice := range []string{ChoiceApprove, ChoiceDeny, ChoiceOption + "0", ChoiceOption + "12"} {
		data := ButtonData("g_0123456789abcdef0123", choice)
		if len(data) > 64 {
			t.Fatalf("%q is over Telegram's 64 bytes of callback data", data)
		}
		id, got, ok := ParseButtonData(data)
		if !ok || id != "g_0123456789abcdef0123" || got != choice {
			t.Fatalf("%q → %q %q %v", data, id, got, ok)
		}
	}
	for _, foreign := range []string{"", "approve", "gh:", "gh:a:", "gh:x:g1", "gh:o:g1", "gh:o-1:g1", "gh:o100:g1", "other:a:g1"} {
		if _, _, ok := ParseButtonData(foreign); ok {
			t.Fatalf("%q parsed as ours", foreign)
		}
	}
}

// limited is the formatting half of an adapter: a length limit and an
// escaping that grows the text, as HTML escaping does.
type limited struct {
	Adapter
	max int
}

func (l limited) Limits() Limits            { return Limits{MaxText: l.max} }
func (l limited) Format(text string) string { return html.EscapeString(text) }

func TestCardFitsThePlatformLimit(t *testing.T) {
	args := map[string]string{}
	for i := range 9 {
		args[string(rune('a'+i))] = strings.Repeat("<&>", 130)
	}
	raw, _ := json.Marshal(args)
	for _, o := range []gh.GateOpened{
		{GateID: "g_1", Tool: "post", Kind: gh.GateKindApproval, Arguments: raw},
		{GateID: "g_2", Tool: "email_send", Kind: gh.GateKindClarify, Question: strings.Repeat("Which Sara? ", 500), Options: []string{"a", "b"}},
	} {
		a := limited{max: 2000}
		pending := CardFor(a, o, nil, "")
		if n := utf8.RuneCountInString(pending.Text); n > 2000 {
			t.Fatalf("%s: a %d-character card; the platform takes 2000", o.Tool, n)
		}
		if len(pending.Buttons) != 2 {
			t.Fatalf("%s: the buttons must survive the clipping: %+v", o.Tool, pending.Buttons)
		}
		decided := CardFor(a, o, &gh.Gate{State: gh.GateApproved, DecidedBy: "alice", Surface: "web"}, "")
		if n := utf8.RuneCountInString(decided.Text); n > 2000 || !strings.HasSuffix(decided.Text, "Approved by alice (web)") {
			t.Fatalf("%s: the decided card (%d characters) must fit and keep its outcome: …%q", o.Tool, n, decided.Text[len(decided.Text)-60:])
		}
	}
}
