package telegram

import (
	"strings"
	"unicode/utf8"
)

// Format renders Markdown-ish answer text as Telegram HTML. Everything is
// escaped first (&, <, >), so no text can be read as a tag; then three
// constructs become markup, each only when both of its markers are found,
// so every tag written is closed:
//
//   - a fenced block (``` … ```) becomes <pre>…</pre>;
//   - `code` on one line becomes <code>…</code>;
//   - **bold** on one line, outside code, becomes <b>…</b>.
//
// Format never adds visible characters (markers are removed, entities
// count as one character on Telegram's side), so text split to
// Limits().MaxText before formatting still fits after it. Invalid UTF-8 is
// replaced, as Telegram refuses it.
func Format(text string) string {
	text = strings.ToValidUTF8(text, "\uFFFD")
	var b strings.Builder
	b.Grow(len(text) + len(text)/8)
	for text != "" {
		start := strings.Index(text, "```")
		if start < 0 {
			formatInline(&b, text)
			break
		}
		end := strings.Index(text[start+3:], "```")
		if end < 0 {
			formatInline(&b, text)
			break
		}
		formatInline(&b, text[:start])
		body := text[start+3 : start+3+end]
		// The first line of a fence may name its language: not shown.
		if nl := strings.IndexByte(body, '\n'); nl >= 0 && isLangTag(body[:nl]) {
			body = body[nl+1:]
		}
		b.WriteString("<pre>")
		escape(&b, body)
		b.WriteString("</pre>")
		text = text[start+3+end+3:]
	}
	return b.String()
}

// FormatCard renders an approval card's text as Telegram HTML literally:
// &, < and > are escaped and nothing else becomes markup (no bold, no
// code), so every character of an argument shows as written. It
// implements chat.CardFormatter.
func (a *Adapter) FormatCard(text string) string { return FormatLiteral(text) }

// FormatLiteral is [Adapter.FormatCard] without an adapter.
func FormatLiteral(text string) string {
	text = strings.ToValidUTF8(text, "\uFFFD")
	var b strings.Builder
	b.Grow(len(text) + len(text)/8)
	escape(&b, text)
	return b.String()
}

// isLangTag reports whether s looks like a fence's language name
// ("go", "c++", "shell-session"), not like code.
func isLangTag(s string) bool {
	if len(s) > 20 {
		return false
	}
	for _, r := range s {
		if r != '+' && r != '-' && r != '_' && r != '#' && r != '.' &&
			(r < 'a' || r > 'z') && (r < 'A' || r > 'Z') && (r < '0' || r > '9') {
			return false
		}
	}
	return true
}

// formatInline handles text outside fences, line by line so a stray
// marker cannot swallow the rest of an answer.
func formatInline(b *strings.Builder, text string) {
	for {
		line, rest, more := strings.Cut(text, "\n")
		formatLine(b, line)
		if !more {
			return
		}
		b.WriteByte('\n')
		text = rest
	}
}

func formatLine(b *strings.Builder, line string) {
	for line != "" {
		start := strings.IndexByte(line, '`')
		if start < 0 {
			formatBold(b, line)
			return
		}
		end := strings.IndexByte(line[start+1:], '`')
		if end < 0 || end == 0 {
			// No closing backtick, or an empty pair: literal.
			formatBold(b, line[:start+1])
			line = line[start+1:]
			continue
		}
		formatBold(b, line[:start])
		b.WriteString("<code>")
		escape(b, line[start+1:start+1+end])
		b.WriteString("</code>")
		line = line[start+1+end+1:]
	}
}

func formatBold(b *strings.Builder, s string) {
	for s != "" {
		start := strings.Index(s, "**")
		if start < 0 {
			break
		}
		end := strings.Index(s[start+2:], "**")
		if end < 0 {
			break
		}
		if end == 0 {
			// "****" is not bold of nothing.
			escape(b, s[:start+4])
			s = s[start+4:]
			continue
		}
		escape(b, s[:start])
		b.WriteString("<b>")
		escape(b, s[start+2:start+2+end])
		b.WriteString("</b>")
		s = s[start+2+end+2:]
	}
	escape(b, s)
}

// escape writes s with the three characters Telegram's HTML reads.
func escape(b *strings.Builder, s string) {
	for len(s) > 0 {
		i := strings.IndexAny(s, "&<>")
		if i < 0 {
			b.WriteString(s)
			return
		}
		b.WriteString(s[:i])
		switch s[i] {
		case '&':
			b.WriteString("&amp;")
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		}
		s = s[i+1:]
	}
}

// truncate cuts s to at most n runes.
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i := 0
	for pos := range s {
		if i == n {
			return s[:pos]
		}
		i++
	}
	return s
}
