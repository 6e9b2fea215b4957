package discord

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// markdownChars are the characters Discord's Markdown reads as markup
// wherever they are (emphasis, code, spoilers, strikethrough, masked
// links, and mentions, custom emoji and timestamps in <…>). A backslash
// before any of them shows it as written.
const markdownChars = "\\*`|~[]<"

// lineStartChars are markup only at the start of a line (headings,
// quotes, lists and subtext).
const lineStartChars = "#>-+"

// linkChars are the characters escaped inside a link, where a backslash
// would become part of the link: written %XX instead, which names the
// same address. '<' would end Discord's link and start a mention; the
// others could open markup after it ends.
const linkChars = "\\*`|[]<>\""

// FormatCard renders an approval card's text for Discord literally:
// every character Discord's Markdown could read as markup is
// backslash-escaped where it could (an underscore only where it could
// start or end emphasis, so tool names like email_send stay as they are;
// #, >, - and + only at the start of a line), and inside a link the few
// that could end it early are percent-encoded, so no argument becomes
// emphasis, a spoiler, a masked link or a mention and links stay usable.
// @everyone and @here are neutralised as in Format (allowed_mentions
// keeps any of them from pinging anyway). It implements
// chat.CardFormatter.
func (a *Adapter) FormatCard(text string) string { return FormatLiteral(text) }

// FormatLiteral is [Adapter.FormatCard] without an adapter.
func FormatLiteral(text string) string {
	var b strings.Builder
	b.Grow(len(text) + len(text)/8)
	lineStart := true
	for text != "" {
		// Words are cut at spaces and line breaks; a link is one word.
		end := strings.IndexAny(text, " \n\t")
		if end < 0 {
			end = len(text)
		}
		word := text[:end]
		// Discord links from "http(s)://" to the end of the word, even
		// after a "(" or a quote.
		lower := strings.ToLower(word)
		from := len(word)
		for _, scheme := range []string{"http://", "https://"} {
			if i := strings.Index(lower, scheme); i >= 0 && i < from {
				from = i
			}
		}
		for i, r := range word {
			switch {
			case i >= from && r < utf8.RuneSelf && strings.ContainsRune(linkChars, r):
				fmt.Fprintf(&b, "%%%02X", r)
			case i >= from:
				b.WriteRune(r)
			case strings.ContainsRune(markdownChars, r),
				r == '_' && !innerUnderscore(word, i),
				lineStart && i == 0 && strings.ContainsRune(lineStartChars, r):
				b.WriteByte('\\')
				b.WriteRune(r)
			default:
				b.WriteRune(r)
			}
		}
		if word != "" {
			lineStart = false
		}
		if end < len(text) {
			if text[end] == '\n' {
				lineStart = true
			}
			b.WriteByte(text[end])
			end++
		}
		text = text[end:]
	}
	return mentionEscaper.Replace(b.String())
}

// innerUnderscore reports whether the underscore at word[i] sits alone
// between two letters or digits ("email_send"), where Discord reads no
// emphasis.
func innerUnderscore(word string, i int) bool {
	before, _ := utf8.DecodeLastRuneInString(word[:i])
	after, _ := utf8.DecodeRuneInString(word[i+1:])
	alnum := func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }
	return i > 0 && i+1 < len(word) && alnum(before) && alnum(after)
}
