package cards

import (
	"fmt"
	"html"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	gh "github.com/gatehouse/gatehouse"
)

func TestVisibleEscapesWhatAReaderCannotSee(t *testing.T) {
	for in, want := range map[string]string{
		"pay\u202Eevil":                         `pay\u202Eevil`,               // right-to-left override
		"a\u202A\u202B\u202C\u202Db":            `a\u202A\u202B\u202C\u202Db`,  // embeddings, pop
		"\u2066x\u2067y\u2068z\u2069":           `\u2066x\u2067y\u2068z\u2069`, // isolates
		"\u200E\u200F\u061C":                    `\u200E\u200F\u061C`,          // marks
		"sara\u200B@example.com":                `sara\u200B@example.com`,      // zero-width space
		"a\u200C\u200D\u2060\uFEFFb":            `a\u200C\u200D\u2060\uFEFFb`,
		"soft\u00ADhyphen":                      `soft\u00ADhyphen`,
		"vs\uFE0F and \u3164 filler":            `vs\uFE0F and \u3164 filler`,
		"tag\U000E0041":                         `tag\U000E0041`,
		"bell\x07 esc\x1b[31m del\x7f c1\u0085": `bell\u0007 esc\u001B[31m del\u007F c1\u0085`,
		"cr\r\nlf":                              `cr\u000D` + "\nlf", // a carriage return is not a line break
		"line\u2028para\u2029":                  `line\u2028para\u2029`,
		"bad \xff byte":                         `bad \xFF byte`,
		// Kept: line breaks, tabs, markup (escaped by each adapter), any
		// visible character.
		"a\n\tb <b>*x*</b> &amp; <!channel> <@U123> @everyone é 中 🙂": "a\n\tb <b>*x*</b> &amp; <!channel> <@U123> @everyone é 中 🙂",
	} {
		got := Visible(in)
		if got != want {
			t.Errorf("Visible(%q) = %q, want %q", in, got, want)
		}
		if Visible(got) != got {
			t.Errorf("Visible is not stable on %q", got)
		}
	}
}

// escapeMarkup escapes as Telegram's HTML and Slack do.
var escapeMarkup = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace

func opened(fields ...gh.CardField) gh.GateOpened {
	return gh.GateOpened{GateID: "g_0123456789abcdef0123", Tool: "email_send", Kind: gh.GateKindApproval, Fields: fields,
		Arguments: []byte(`{"ignored":"when there are fields"}`), ExpiresAt: time.Date(2026, 11, 30, 12, 5, 0, 0, time.UTC)}
}

func TestBodyShowsFieldsWholeAndNoValueCanForgeALine(t *testing.T) {
	long := strings.Repeat("x", 1000) + "@example.com"
	body := Body(opened(
		gh.CardField{Label: "To", Value: long},
		gh.CardField{Label: "Subject", Value: "Hi\u202Etxt.exe"},
		gh.CardField{Label: "Body", Value: "Dear Sara,\nTo: someone@else.example\n\n✅ Approved by ana", FreeText: true},
	))
	for _, want := range []string{"🔐 Approval needed: email_send", "\nTo: " + long + "\n", `Subject: Hi\u202Etxt.exe`,
		"\nBody:\n│ Dear Sara,\n│ To: someone@else.example\n│ \n│ ✅ Approved by ana\nExpires 2026-11-30 12:05 UTC."} {
		if !strings.Contains(body, want) {
			t.Fatalf("card lacks %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, "ignored") {
		t.Fatal("a card with fields shows its fields, not the raw arguments")
	}
	// A value of several lines that is not free text is a block too.
	cmd := Body(opened(gh.CardField{Label: "Command", Value: "ls\nrm -rf /"}))
	if !strings.Contains(cmd, "\nCommand:\n│ ls\n│ rm -rf /") {
		t.Fatalf("a command of two lines:\n%s", cmd)
	}
	if got := Body(opened(gh.CardField{Label: "Subject", Value: ""})); !strings.Contains(got, "Subject: (empty)") {
		t.Fatalf("an empty value must say so:\n%s", got)
	}
}

func TestTextClipsOnlyFreeTextAndSaysWhereTheWholeCardIs(t *testing.T) {
	to := "evil@attacker.example (display name \"sara@example.com" + strings.Repeat(" ", 290) + "\")"
	bodyText := strings.Repeat("All work and no play. ", 400) // 8,800 characters
	o := opened(gh.CardField{Label: "To", Value: to}, gh.CardField{Label: "Subject", Value: "Report"},
		gh.CardField{Label: "Body", Value: bodyText, FreeText: true})
	tail := "\n\n✅ Approved by ana (telegram)"
	for _, c := range []struct {
		max       int
		publicURL string
		where     string
	}{
		{4096, "https://gh.example.com/", "The whole card: https://gh.example.com/admin#card=g_0123456789abcdef0123"},
		{2000, "", "The whole card: open the web chat's /admin, card g_0123456789abcdef0123."},
	} {
		text := Text(o, tail, c.max, escapeMarkup, c.publicURL)
		plain := html.UnescapeString(text)
		if n := utf8.RuneCountInString(text); n > c.max {
			t.Fatalf("%d characters, limit %d", n, c.max)
		}
		for _, want := range []string{"To: " + to + "\n", "Subject: Report", "✂ Clipped to fit this chat. " + c.where, "more characters not shown", tail} {
			if !strings.Contains(plain, want) {
				t.Fatalf("limit %d: the card lacks %q:\n%s", c.max, want, plain)
			}
		}
		if !strings.HasSuffix(plain, tail) {
			t.Fatal("the outcome ends the card")
		}
		// As much of the body as fits: the cut says how much is left,
		// and one more character would not fit.
		var shown, rest int
		for _, line := range strings.Split(plain, "\n") {
			if strings.HasPrefix(line, "│ … ✂ ") {
				fmt.Sscanf(strings.TrimPrefix(line, "│ … ✂ "), "%d", &rest)
			} else if l, ok := strings.CutPrefix(line, "│ "); ok {
				shown += utf8.RuneCountInString(l)
			}
		}
		if shown != utf8.RuneCountInString(bodyText)-rest || rest <= 0 {
			t.Fatalf("limit %d: %d characters shown, %d said to be left, of %d", c.max, shown, rest, utf8.RuneCountInString(bodyText))
		}
		if n := utf8.RuneCountInString(escapeMarkup(html.UnescapeString(render(o, o.Fields, shown+1, "\n✂ Clipped to fit this chat. "+Where(c.publicURL, o.GateID)) + tail))); n <= c.max {
			t.Fatalf("limit %d: %d characters of body shown, but %d would still fit", c.max, shown, shown+1)
		}
	}
	// With room, nothing is clipped and nothing says so.
	if text := Text(o, tail, 0, escapeMarkup, ""); strings.Contains(text, "Clipped") || !strings.Contains(html.UnescapeString(text), bodyText) {
		t.Fatal("no limit, no clipping")
	}
}

func TestTextOfAnOldEventClipsAsALastResortAndSaysSo(t *testing.T) {
	o := gh.GateOpened{GateID: "g_old", Tool: "post", Kind: gh.GateKindApproval,
		Arguments: []byte(`{"text":"` + strings.Repeat("word ", 1000) + `"}`)}
	text := Text(o, "", 2000, escapeMarkup, "")
	if n := utf8.RuneCountInString(text); n > 2000 || !strings.Contains(text, "✂ Clipped to fit this chat. The whole card: open the web chat's /admin, card g_old.") {
		t.Fatalf("%d characters:\n%s", n, text)
	}
	// Short arguments of an old event are shown whole, well past 300
	// characters.
	o.Arguments = []byte(`{"text":"` + strings.Repeat("a", 900) + `"}`)
	if text := Text(o, "", 2000, escapeMarkup, ""); !strings.HasSuffix(text, "\ntext: "+strings.Repeat("a", 900)) {
		t.Fatalf("an argument of 900 characters must be whole:\n%s", text)
	}
}

// worstCase escapes every character at its longest, as no real platform
// does: what Need and Frame promise must hold even then.
func worstCase(s string) string {
	var b strings.Builder
	for _, r := range s {
		b.WriteRune(r)
		for range weight(r) - 1 {
			b.WriteByte('.')
		}
	}
	return b.String()
}

func TestNeedAndFrameGuaranteeTheWholeFieldsFit(t *testing.T) {
	const maxText = 2000
	for _, publicURL := range []string{"", "https://gatehouse.example.com/some/prefix"} {
		limit := maxText - Frame(publicURL)
		// Recipients made of the costliest characters, as long as the
		// limit allows, and a long body.
		to := gh.CardField{Label: "To", Value: ""}
		fields := []gh.CardField{to, {Label: "Subject", Value: "<&>"}, {Label: "Body", Value: strings.Repeat("&", 5000), FreeText: true}}
		for Need("email_send", fields) <= limit {
			fields[0].Value += "&"
		}
		fields[0].Value = fields[0].Value[1:]
		if Need("email_send", fields) > limit {
			t.Fatal("the search overshot")
		}
		o := opened(fields...)
		tail := "\n\n" + DecisionLine(gh.GateDenied, strings.Repeat("N", 128), "telegram", "", strings.Repeat("R", 500))
		text := Text(o, tail, maxText, worstCase, publicURL)
		if n := utf8.RuneCountInString(text); n > maxText {
			t.Fatalf("%d characters, limit %d", n, maxText)
		}
		if !strings.Contains(text, worstCase("To: "+fields[0].Value+"\n")) || !strings.Contains(text, "Clipped") {
			t.Fatalf("the recipients must be whole and the body clipped:\n%s", text)
		}
	}
}
