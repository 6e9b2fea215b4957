package mailaddr_test

import (
	"errors"
	"strings"
	"testing"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/tools/mailaddr"
)

// What a card shows of an address and what the send uses, for the
// lookalikes of issue #26 and for addresses that are what they look like.
func TestLookalikesAreShownAsAMailServerReadsThem(t *testing.T) {
	for _, c := range []struct {
		name, in    string
		shown, sent string
		notes       []string // "Label: Text", in order
	}{
		{
			name: "plain", in: "sara@example.com",
			shown: "sara@example.com", sent: "sara@example.com",
		},
		{
			name: "plain, domain case", in: "Sara@Example.COM",
			shown: "Sara@example.com", sent: "Sara@example.com",
		},
		{
			name: "Cyrillic а in the local part", in: "s\u0430ra@example.com",
			shown: "s\u0430ra@example.com", sent: "s\u0430ra@example.com",
			notes: []string{`⚠ Not plain ASCII: s` + "\u0430" + `ra@example.com: local part "s` + "\u0430" + `ra" has U+0430 (CYRILLIC SMALL LETTER A), mixed scripts (Latin, Cyrillic)`},
		},
		{
			name: "Cyrillic а in the domain", in: "sara@ex\u0430mple.com",
			shown: "sara@ex\u0430mple.com", sent: "sara@xn--exmple-4nf.com",
			notes: []string{`⚠ Not plain ASCII: sara@ex` + "\u0430" + `mple.com is sent as sara@xn--exmple-4nf.com: domain label "ex` + "\u0430" + `mple" has U+0430 (CYRILLIC SMALL LETTER A), mixed scripts (Latin, Cyrillic)`},
		},
		{
			name: "ideographic full stop", in: "sara@example.com\u3002evil.test",
			shown: "sara@example.com.evil.test", sent: "sara@example.com.evil.test",
			notes: []string{"⚠ Rewritten: written sara@example.com\u3002evil.test, with U+3002 (IDEOGRAPHIC FULL STOP); a mail server reads it as sara@example.com.evil.test, and that is where it is sent"},
		},
		{
			name: "full-width letter", in: "sara@\uff45xample.com",
			shown: "sara@example.com", sent: "sara@example.com",
			notes: []string{"⚠ Rewritten: written sara@\uff45xample.com, with U+FF45 (FULLWIDTH LATIN SMALL LETTER E); a mail server reads it as sara@example.com, and that is where it is sent"},
		},
		{
			name: "a real IDN", in: "user@bücher.example",
			shown: "user@bücher.example", sent: "user@xn--bcher-kva.example",
			notes: []string{`⚠ Not plain ASCII: user@bücher.example is sent as user@xn--bcher-kva.example: domain label "bücher" has U+00FC (LATIN SMALL LETTER U WITH DIAERESIS)`},
		},
		{
			name: "an IDN written as its A-label", in: "user@xn--bcher-kva.example",
			shown: "user@bücher.example", sent: "user@xn--bcher-kva.example",
			notes: []string{`⚠ Not plain ASCII: user@bücher.example is sent as user@xn--bcher-kva.example: domain label "bücher" has U+00FC (LATIN SMALL LETTER U WITH DIAERESIS)`},
		},
		{
			name: "Japanese is one writing system", in: "info@日本語ドメイン.example",
			shown: "info@日本語ドメイン.example", sent: "info@xn--eckwd4c7c5976acvb2w6i.example",
			notes: []string{`⚠ Not plain ASCII: info@日本語ドメイン.example is sent as info@xn--eckwd4c7c5976acvb2w6i.example: domain label "日本語ドメイン" has U+65E5, U+672C, U+8A9E, U+30C9 (KATAKANA LETTER DO) and 3 more`},
		},
		{
			name: "Greek omicron among Latin", in: "pay@g\u03bfogle.com",
			shown: "pay@g\u03bfogle.com", sent: "pay@xn--gogle-rce.com",
			notes: []string{`⚠ Not plain ASCII: pay@g` + "\u03bf" + `ogle.com is sent as pay@xn--gogle-rce.com: domain label "g` + "\u03bf" + `ogle" has U+03BF (GREEK SMALL LETTER OMICRON), mixed scripts (Latin, Greek)`},
		},
		{
			name: "one script, not Latin", in: "ivan@пример.рф",
			shown: "ivan@пример.рф", sent: "ivan@xn--e1afmkfd.xn--p1ai",
			notes: []string{`⚠ Not plain ASCII: ivan@пример.рф is sent as ivan@xn--e1afmkfd.xn--p1ai: domain label "пример" has U+043F (CYRILLIC SMALL LETTER PE), U+0440 (CYRILLIC SMALL LETTER ER), U+0438 (CYRILLIC SMALL LETTER I), U+043C (CYRILLIC SMALL LETTER EM) and 1 more; domain label "рф" has U+0440 (CYRILLIC SMALL LETTER ER), U+0444 (CYRILLIC SMALL LETTER EF)`},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, err := mailaddr.Parse(c.in)
			if err != nil {
				t.Fatal(err)
			}
			if a.Shown() != c.shown || a.Sent() != c.sent {
				t.Fatalf("shown %q sent %q, want %q and %q", a.Shown(), a.Sent(), c.shown, c.sent)
			}
			var got []string
			for _, n := range a.Notes() {
				got = append(got, n.Label+": "+n.Text)
			}
			if strings.Join(got, "\n") != strings.Join(c.notes, "\n") {
				t.Fatalf("notes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(c.notes, "\n"))
			}
		})
	}
}

// An address no mail server could be sent to is an invalid argument,
// before any card.
func TestInvalidDomainsAreRefused(t *testing.T) {
	for _, in := range []string{
		"sara@example.com\u3002", // ends in an empty label once mapped
		"sara@a..b",
		"sara@xn--zz.com", // an A-label that is not punycode
		"sara@-example.com",
		"sara@exa mple.com",
		"sara@",
		"@example.com",
	} {
		a, err := mailaddr.Parse(in)
		var e *gh.Error
		if !errors.As(err, &e) || e.Code != gh.CodeInvalid {
			t.Errorf("%q: %+v, %v; want an invalid-argument error", in, a, err)
		}
	}
	if a, err := mailaddr.Parse("ops@[192.0.2.1]"); err != nil || a.Sent() != "ops@[192.0.2.1]" || len(a.Notes()) != 0 {
		t.Errorf("a domain literal: %+v %v", a, err)
	}
}

func TestMixedScripts(t *testing.T) {
	for label, want := range map[string]bool{
		"example":  false,
		"exаmple":  true,  // Cyrillic а
		"bücher":   false, // Latin with a diaeresis
		"пример":   false,
		"日本語ドメイン":  false,
		"mail-123": false, // Common aside
		"é\u0301x": false, // Inherited aside
		"ԁomain":   true,  // Cyrillic ԁ
		"한국abc":    false,
		"abcαβγ":   true,
	} {
		if got := mailaddr.Mixed(mailaddr.Scripts(label)); got != want {
			t.Errorf("%q (%v): mixed %v, want %v", label, mailaddr.Scripts(label), got, want)
		}
	}
}
