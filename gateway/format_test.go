package gateway

import (
	"encoding/json"
	"html"
	"strings"
	"testing"
	"time"
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

func TestSplitTextFitsAfterEscaping(t *testing.T) {
	escape := html.EscapeString // grows & < > by 3–4 characters each
	var b strings.Builder
	for i := range 60 {
		b.WriteString("Paragraph with <tags> & ampersands number ")
		b.WriteString(strings.Repeat("x", i%7))
		b.WriteString(".\n\n")
	}
	text := b.String()
	parts := SplitText(text, 200, escape)
	if len(parts) < 2 {
		t.Fatalf("a %d-character text in %d part(s)", len(text), len(parts))
	}
	var back []string
	for _, p := range parts {
		if n := utf8.RuneCountInString(p); n > 200 {
			t.Fatalf("part of %d characters after escaping, limit 200: %q", n, p)
		}
		back = append(back, html.UnescapeString(p))
	}
	if strings.Join(strings.Fields(strings.Join(back, " ")), " ") != strings.Join(strings.Fields(text), " ") {
		t.Fatal("splitting lost or changed words")
	}
	for _, p := range back {
		if !strings.HasSuffix(p, ".") {
			t.Fatalf("a part was cut mid-paragraph although paragraphs fit: %q", p)
		}
	}
}

func TestSplitTextTablesBecomeLinesAndHugeWordsAreCut(t *testing.T) {
	id := func(s string) string { return s }
	parts := SplitText("| name | age |\n|---|---|\n| Sara | 41 |\n", 4000, id)
	if len(parts) != 1 || strings.Contains(parts[0], "|") || !strings.Contains(parts[0], "Sara") {
		t.Fatalf("a table must become lines for a chat app: %q", parts)
	}
	word := strings.Repeat("é", 1000)
	parts = SplitText(word, 300, id)
	if len(parts) != 4 || strings.Join(parts, "") != word {
		t.Fatalf("one long word: %d parts", len(parts))
	}
	if SplitText("  \n ", 10, id) != nil {
		t.Fatal("blank text has no parts")
	}
}

func TestCardShowsWhatRunsAndItsOutcome(t *testing.T) {
	o := gh.GateOpened{GateID: "g_1", Tool: "email_send", Kind: gh.GateKindApproval,
		Arguments: []byte(`{"to":"sara@example.com","subject":"Report","body":"` + strings.Repeat("long ", 200) + `"}`), ExpiresAt: time.Date(2026, 11, 30, 12, 5, 0, 0, time.UTC)}
	body := cardBody(o)
	for _, want := range []string{"email_send", "to: sara@example.com", "subject: Report", "Expires 2026-11-30 12:05 UTC"} {
		if !strings.Contains(body, want) {
			t.Fatalf("card lacks %q:\n%s", want, body)
		}
	}
	if utf8.RuneCountInString(body) > 800 {
		t.Fatalf("a long argument must be clipped on the card: %d characters", utf8.RuneCountInString(body))
	}
	for state, want := range map[gh.GateState]string{
		gh.GateApproved: "✅ Approved by alice (telegram)", gh.GateDenied: "❌ Denied by alice (telegram)",
		gh.GateExpired: "Expired: nobody decided in time, so it did not run",
	} {
		if got := DecisionLine(state, "alice", "telegram", ""); !strings.Contains(got, want) {
			t.Fatalf("%s: %q lacks %q", state, got, want)
		}
	}
	if strings.Contains(DecisionLine(gh.GateExpired, "timeout", "clock", ""), "Denied") {
		t.Fatal("an expired approval is never a denial")
	}
}

func TestPacerKeepsEachChatUnderItsLimit(t *testing.T) {
	p := newPacer(Limits{PerChat: time.Second, PerSecond: 30, GroupPerMinute: 20})
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	a := gh.Address{ChatID: "a", ChatType: gh.ChatDM}
	b := gh.Address{ChatID: "b", ChatType: gh.ChatDM}
	if w := p.reserve(a, t0); w != 0 {
		t.Fatalf("first send waits %s", w)
	}
	if w := p.reserve(a, t0.Add(100*time.Millisecond)); w < 900*time.Millisecond {
		t.Fatalf("a second send to one chat within a second must wait ~1s, waits %s", w)
	}
	if w := p.reserve(b, t0.Add(100*time.Millisecond)); w != 0 {
		t.Fatalf("another chat is not held back by the first: waits %s", w)
	}
	if w := p.reserve(a, t0.Add(1200*time.Millisecond)); w != 0 {
		t.Fatalf("after the interval the chat may send: waits %s", w)
	}
	// A group: at most 20 a minute.
	g := gh.Address{ChatID: "g", ChatType: gh.ChatGroup}
	sent := 0
	for i := range 120 {
		if p.reserve(g, t0.Add(time.Duration(i)*500*time.Millisecond)) == 0 {
			sent++
		}
	}
	if sent > 20 {
		t.Fatalf("%d sends to one group in a minute, limit 20", sent)
	}
	// A 429's hold keeps the chat quiet until then.
	p.hold(b, t0.Add(10*time.Second))
	if w := p.reserve(b, t0.Add(5*time.Second)); w < 4*time.Second {
		t.Fatalf("a held chat must wait out the 429: waits %s", w)
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
		pending := cardFor(a, o, nil)
		if n := utf8.RuneCountInString(pending.Text); n > 2000 {
			t.Fatalf("%s: a %d-character card; the platform takes 2000", o.Tool, n)
		}
		if len(pending.Buttons) != 2 {
			t.Fatalf("%s: the buttons must survive the clipping: %+v", o.Tool, pending.Buttons)
		}
		decided := cardFor(a, o, &gh.Gate{State: gh.GateApproved, DecidedBy: "alice", Surface: "web"})
		if n := utf8.RuneCountInString(decided.Text); n > 2000 || !strings.HasSuffix(decided.Text, "Approved by alice (web)") {
			t.Fatalf("%s: the decided card (%d characters) must fit and keep its outcome: …%q", o.Tool, n, decided.Text[len(decided.Text)-60:])
		}
	}
}
