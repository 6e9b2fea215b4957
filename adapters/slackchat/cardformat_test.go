package slackchat_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gatehouse/gatehouse/adapters/slackchat"
	"github.com/gatehouse/gatehouse/cards"
)

// A card is shown literally on Slack: &, < and > are escaped, so no
// mention (<!channel>, <@U…>, <!subteam^…>), channel link or disguised
// link (<http://x|y>) can form, and nothing is turned into mrkdwn (the
// card's blocks are plain_text; see the suite's card test).
func TestFormatCardIsLiteral(t *testing.T) {
	in := "<!channel> <!here> <@U123> <#C1> <!subteam^S1> <http://evil.example|safe link> **b** *b* _i_ ~s~ `c` &amp; \\u202E"
	out := slackchat.FormatLiteral(in)
	want := "&lt;!channel&gt; &lt;!here&gt; &lt;@U123&gt; &lt;#C1&gt; &lt;!subteam^S1&gt; &lt;http://evil.example|safe link&gt; **b** *b* _i_ ~s~ `c` &amp;amp; \\u202E"
	if out != want {
		t.Fatalf("got\n%s\nwant\n%s", out, want)
	}
	if strings.ContainsAny(out, "<>") {
		t.Fatal("a < or > left in a card")
	}
	if n, w := utf8.RuneCountInString(out), cards.Width(in); n > w {
		t.Fatalf("FormatCard made %d characters of text cards.Width counts as %d", n, w)
	}
}
