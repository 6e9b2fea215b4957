package telegram_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gatehouse/gatehouse/adapters/telegram"
	"github.com/gatehouse/gatehouse/adapters/telegram/telegramtest"
	"github.com/gatehouse/gatehouse/cards"
)

// hostile is card text as an attacker would write arguments: markup of
// every platform, mentions, escapes already made visible.
const hostile = "To: <b>x</b> **bold** `code` ```pre``` __u__ ~~s~~ ||spoiler|| [link](https://evil.example/a_b*c*) <https://x.example> <@U123> <!channel> <#C1> @everyone @here &amp; &lt; 1 < 2 > 0 & \\u202E\n# heading\n> quote\n- item\n+ item\n-# subtext\n│ :smile: <t:1:R> <:e:1> a_b _c_ snake_case_name"

// A card is shown literally: what Telegram displays is the text as
// written, every character, with no entity at all.
func TestFormatCardIsLiteral(t *testing.T) {
	text := cards.Visible(hostile + "\u202E\u200B")
	formatted := telegram.FormatLiteral(text)
	shown, err := telegramtest.TelegramHTMLText(formatted)
	if err != nil {
		t.Fatalf("Telegram refuses the card: %v\n%s", err, formatted)
	}
	if shown != text {
		t.Fatalf("Telegram shows\n%q\nfor\n%q", shown, text)
	}
	if strings.Contains(formatted, "<b>") || strings.Contains(formatted, "<code>") || strings.Contains(formatted, "<pre>") {
		t.Fatalf("markup in a card: %s", formatted)
	}
	if n, w := utf8.RuneCountInString(formatted), cards.Width(text); n > w {
		t.Fatalf("FormatCard made %d characters of text cards.Width counts as %d", n, w)
	}
}
