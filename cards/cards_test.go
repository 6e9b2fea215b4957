package cards

import (
	"html"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	gh "github.com/gatehouse/gatehouse"
)

func TestCardShowsWhatRunsAndItsOutcome(t *testing.T) {
	// An event from before fields: every argument whole, by name.
	o := gh.GateOpened{GateID: "g_1", Tool: "email_send", Kind: gh.GateKindApproval,
		Arguments: []byte(`{"to":"sara@example.com","subject":"Report","body":"` + strings.Repeat("long ", 200) + `"}`), ExpiresAt: time.Date(2026, 11, 30, 12, 5, 0, 0, time.UTC)}
	body := Body(o)
	for _, want := range []string{"email_send", "to: sara@example.com", "subject: Report", "Expires 2026-11-30 12:05 UTC", strings.TrimSpace(strings.Repeat("long ", 200))} {
		if !strings.Contains(body, want) {
			t.Fatalf("card lacks %q:\n%s", want, body)
		}
	}
	for state, want := range map[gh.GateState]string{
		gh.GateApproved: "✅ Approved by alice (telegram)", gh.GateDenied: "❌ Denied by alice (telegram)",
		gh.GateExpired: "Expired: nobody decided in time, so it did not run",
	} {
		if got := DecisionLine(state, "alice", "telegram", "", ""); !strings.Contains(got, want) {
			t.Fatalf("%s: %q lacks %q", state, got, want)
		}
	}
	if strings.Contains(DecisionLine(gh.GateExpired, "timeout", "clock", "", ""), "Denied") {
		t.Fatal("an expired approval is never a denial")
	}
	if got := DecisionLine(gh.GateApproved, "ali\u202Ece", "telegram", "", ""); !strings.Contains(got, `ali\u202Ece`) {
		t.Fatalf("a name's bidi override must show escaped: %q", got)
	}
	// A denial's reason is shown on a line of its own, escaped and cut;
	// the operator (the web UI's and API's decider) is named as such.
	got := DecisionLine(gh.GateDenied, gh.LocalUser, "web", "", "wrong\u202E person\n"+strings.Repeat("x", 400))
	if !strings.HasPrefix(got, "❌ Denied by the operator (web)\nReason: wrong\\u202E person ") || strings.Count(got, "\n") != 1 ||
		utf8.RuneCountInString(got) > 60+MaxReasonShown {
		t.Fatalf("the reason line: %q", got)
	}
}

func TestFitClipsTheBodyAndKeepsTheTail(t *testing.T) {
	escape := html.EscapeString
	body, tail := strings.Repeat("<&> ", 1000), "\n\n✅ Approved by alice"
	text := Fit(body, tail, 500, escape)
	if n := utf8.RuneCountInString(text); n > 500 || !strings.HasSuffix(text, tail) {
		t.Fatalf("a %d-character card, limit 500, must end with its outcome: …%q", n, text[len(text)-40:])
	}
	if got := Fit("short", "", 500, escape); got != "short" {
		t.Fatalf("a card that fits is left whole: %q", got)
	}
	if got := Fit(body, "", 0, escape); got != escape(body) {
		t.Fatal("no limit means no clipping")
	}
}
