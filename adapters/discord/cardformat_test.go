package discord_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gatehouse/gatehouse/adapters/discord"
	"github.com/gatehouse/gatehouse/cards"
)

const hostile = "To: <b>x</b> **bold** *it* `code` ```pre``` __u__ ~~s~~ ||spoiler|| [link](https://evil.example/a_b*c*|<@1>) <https://x.example> <@123> <@&456> <#789> </cmd:1> @everyone @here \\u202E\n# heading\n> quote\n- item\n+ item\n-# subtext\n  ## indented\n│ <t:1:R> <:e:1> a_b _c_ snake_case_name (https://x.example/q?a=1)"

// shown is what Discord displays for content as far as escapes go: a
// backslash before ASCII punctuation shows the character alone.
func shown(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\\*_~`|[]<>#-+", s[i+1]) >= 0 {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// live is where tok occurs in s with its first character not escaped by
// a backslash (after any line break it starts with), or -1.
func live(s, tok string) int {
	for i := 0; ; {
		j := strings.Index(s[i:], tok)
		if j < 0 {
			return -1
		}
		at := i + j
		first := at + len(tok) - len(strings.TrimLeft(tok, "\n "))
		n := 0
		for k := first - 1; k >= 0 && s[k] == '\\'; k-- {
			n++
		}
		if n%2 == 0 {
			return at
		}
		i = at + 1
	}
}

// A card is shown literally on Discord: every character that could be
// markup outside a link is escaped, links stay links (with the few
// characters that could end one early percent-encoded), and no mention,
// spoiler, masked link or heading can form.
func TestFormatCardIsLiteral(t *testing.T) {
	out := discord.FormatLiteral(hostile)
	for _, markup := range []string{"**", "||", "``", "~~", "__", "*it", "[link", "](", "<@", "<#", "</", "<t:", "<:", "<https", "\n#", "\n>", "\n-", "\n+", "\n  #", " _c", "@everyone", "@here"} {
		if i := live(out, markup); i >= 0 {
			t.Errorf("%q can still be read as markup at %d:\n%s", markup, i, out)
		}
	}
	// Words Discord reads no markup in are left alone.
	for _, plain := range []string{"snake_case_name", "a_b", "(https://x.example/q?a=1)", "\\\\u202E"} {
		if !strings.Contains(out, plain) {
			t.Errorf("%q was changed:\n%s", plain, out)
		}
	}
	// Outside links, what Discord shows is the text as written (apart
	// from the zero-width space that keeps @everyone from being one).
	plainText := "a **b** <@1> x_y _z_ \\ | ~ [c]\n# h\n- l @everyone"
	if got := strings.ReplaceAll(shown(discord.FormatLiteral(plainText)), "@\u200beveryone", "@everyone"); got != plainText {
		t.Fatalf("Discord shows\n%q\nfor\n%q", got, plainText)
	}
	// Inside a link, a '<' cannot end it and start a mention.
	if link := discord.FormatLiteral("https://evil.example/x<@123>|*"); link != "https://evil.example/x%3C@123%3E%7C%2A" {
		t.Fatalf("link %q", link)
	}
	if n, w := utf8.RuneCountInString(out), cards.Width(hostile); n > w {
		t.Fatalf("FormatCard made %d characters of text cards.Width counts as %d", n, w)
	}
}
