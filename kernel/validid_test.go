package kernel

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	gh "github.com/gatehouse/gatehouse"
)

// idRule is the rule of docs/api.md for session ids, written out from the
// text of the rule rather than from validID: 1–200 characters (code
// points) of valid UTF-8; no slash; no control character (C0 U+0000–001F,
// DEL U+007F, C1 U+0080–009F); no line or paragraph separator (U+2028,
// U+2029); no space of any kind (category Zs); no format character
// (category Cf: bidi controls, zero-width characters, BOM); no other
// invisible character (Other_Default_Ignorable_Code_Point and
// Variation_Selector, which with Cf cover Unicode's
// Default_Ignorable_Code_Point).
func idRule(id string) bool {
	if !utf8.ValidString(id) {
		return false
	}
	runes := []rune(id)
	if len(runes) < 1 || len(runes) > 200 {
		return false
	}
	for _, r := range runes {
		switch {
		case r == '/':
			return false
		case r <= 0x1F, r == 0x7F, r >= 0x80 && r <= 0x9F:
			return false
		case r == 0x2028, r == 0x2029:
			return false
		case unicode.Is(unicode.Zs, r), unicode.Is(unicode.Cf, r):
			return false
		case unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r), unicode.Is(unicode.Variation_Selector, r):
			return false
		}
	}
	return true
}

var idSeeds = []string{
	// Ids the gateway and the API make, and ordinary client ids.
	"s1", "support-42", "tg_6f0c08d0b2e7796f2194", "dc_0123456789abcdef0123", "sl_ffffffffffffffffffff",
	"9d1c6c1e2f3a4b5c6d7e8f9011223344", "3f2b8c1e-6a4d-4e1f-9b2a-7c5d3e1f0a9b", "Invoice:2026.Q3_final",
	"日本語のセッション", "über", "ok😀", strings.Repeat("x", 200), strings.Repeat("é", 200),
	// Broken rules.
	"", strings.Repeat("x", 201), strings.Repeat("é", 201), "a b", "a/b", "/", "a\tb", "a\nb", "a\rb", "a\x00b",
	"a\x01b", "a\x1fb", "a\x7fb", "a\u0080b", "a\u0085b", "a\u009fb", "a\u00a0b", "a\u2003b", "a\u3000b",
	"a\u2028b", "a\u2029b", "a\u202eb", "a\u202ab", "a\u2066b", "a\u2069b", "a\u200bb", "a\u200db", "a\u200eb",
	"\ufeffs1", "a\u00adb", "a\u2060b", "a\u180eb", "a\U000e0041b", "👨\u200d👩\u200d👧", "\xff", "a\xc3",
	// Invisible characters outside Cf (Default_Ignorable_Code_Point).
	"a\u034fb", "a\u3164b", "\u3164", "a\u115fb", "a\u1160b", "a\uffa0b", "a\u17b4b", "a\u2065b", "a\ufff0b",
	"a\U000e0000b", "a\u180bb", "a\u180fb", "a\ufe00b", "a\ufe0fb", "❤\ufe0f", "a\U000e0100b", "a\U000e01efb",
	// Visible neighbours of those: allowed.
	"a\u034eb", "a\u3163b", "a\u3165b", "a\u1161b", "a\uffa1b", "a\ufe10b", "❤", "ᄀ",
}

// FuzzValidID: validID accepts exactly the ids the documented rule allows,
// and a refusal is an invalid error that states the rule without echoing
// the character it refused.
func FuzzValidID(f *testing.F) {
	for _, s := range idSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		err := validID("session id", id)
		if want := idRule(id); (err == nil) != want {
			t.Fatalf("validID(%+q) = %v; the rule says valid=%v", id, err, want)
		}
		if err == nil {
			return
		}
		if !gh.IsCode(err, gh.CodeInvalid) {
			t.Fatalf("validID(%+q): code %s, want invalid", id, gh.ErrorCode(err))
		}
		msg := gh.ErrorMessage(err)
		if !strings.Contains(msg, "session id must be 1–200 characters") {
			t.Fatalf("validID(%+q): message %q does not state the rule", id, msg)
		}
		if !utf8.ValidString(msg) {
			t.Fatalf("validID(%+q): message is not valid UTF-8", id)
		}
		for _, r := range msg {
			if r != ' ' && !idRule(string(r)) && r != '/' {
				t.Fatalf("validID(%+q): message %+q carries the character U+%04X", id, msg, r)
			}
		}
	})
}

// The refusal says which character broke the rule and where, by code
// point, so a user can find an invisible one.
func TestValidIDNamesTheCharacter(t *testing.T) {
	for id, want := range map[string]string{
		"ab\u202ecd":             "character 3 is an invisible format character (U+202E)",
		"ab\u034fcd":             "character 3 is an invisible character (U+034F)",
		"\u3164":                 "character 1 is an invisible character (U+3164)",
		"x\u115f":                "character 2 is an invisible character (U+115F)",
		"x\u1160":                "character 2 is an invisible character (U+1160)",
		"x\uffa0":                "character 2 is an invisible character (U+FFA0)",
		"x\ufe00":                "character 2 is an invisible character (U+FE00)",
		"x\ufe0f":                "character 2 is an invisible character (U+FE0F)",
		"x\U000e0100":            "character 2 is an invisible character (U+E0100)",
		"x\U000e01ef":            "character 2 is an invisible character (U+E01EF)",
		"a\x01":                  "character 2 is a control character (U+0001)",
		"x\x7f":                  "character 2 is a control character (U+007F)",
		"line\u2028two":          "character 5 is a line or paragraph separator (U+2028)",
		"no\u00a0break":          "character 3 is a space (U+00A0)",
		"a/b":                    "character 2 is a slash (U+002F)",
		"":                       "it is empty",
		strings.Repeat("y", 201): "it is longer than 200 characters",
		"\xff":                   "it is not valid UTF-8",
	} {
		err := validID("session id", id)
		if err == nil || !strings.Contains(gh.ErrorMessage(err), want) {
			t.Errorf("validID(%+q) = %v; want a message with %q", id, err, want)
		}
	}
	if err := validID("tenant", "acme corp"); err == nil || !strings.HasPrefix(gh.ErrorMessage(err), "tenant must be") {
		t.Errorf("a tenant is held to the same rule, named as tenant: %v", err)
	}
}
