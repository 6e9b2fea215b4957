package cards

import (
	"html"
	"strings"
	"testing"
	"unicode/utf8"
)

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
