package cards

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Visible returns s with every character a reader could not see, or that
// would change how the text around it is shown, written as an escape
// (\u202E, \U000E0041) instead: control characters (C0, DEL, C1; a line
// break and a tab are kept), format characters (bidi embeddings,
// overrides, isolates and marks; zero-width space, joiners, the word
// joiner, the byte order mark, the soft hyphen), the other default
// ignorables (variation selectors, Hangul fillers, tags), and the line
// and paragraph separators. Invalid UTF-8 is written \xNN. Everything
// else, markup included, is left as it is: each surface escapes its own
// markup at the end.
//
// What is shown is then what the effect gets, character for character:
// "pay\u202Eevil" cannot be drawn as a reversed word, and "sara\u200B@"
// is not "sara@". The output of Visible is unchanged by Visible.
func Visible(s string) string {
	i := 0
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || hidden(r) {
			break
		}
		i += size
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	b.WriteString(s[:i])
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02X`, s[i])
		case hidden(r) && r > 0xFFFF:
			fmt.Fprintf(&b, `\U%08X`, r)
		case hidden(r):
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// hidden reports whether r is written as an escape by [Visible].
func hidden(r rune) bool {
	switch {
	case r == '\n' || r == '\t':
		return false
	case r < 0x20 || r == 0x7F:
		return true
	case r < 0x80:
		return false
	}
	return unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp,
		unicode.Other_Default_Ignorable_Code_Point, unicode.Variation_Selector)
}

// weight is how many characters r can take on a platform once escaped
// for its markup: "&amp;" on Telegram and Slack, "\*" on Discord, or "%2A"
// inside a link there.
func weight(r rune) int {
	switch r {
	case '&':
		return 5
	case '<', '>':
		return 4
	case '\\', '*', '`', '|', '[', ']', '"':
		return 3
	case '_', '~', '#', '-', '+', '@':
		return 2
	}
	return 1
}

// Width is the most characters s can take on any chat platform once its
// adapter escaped it for its markup (FormatCard): each character counted
// at its longest escape. An adapter's FormatCard never makes a text
// longer than its Width; [Need] and [Frame] count with it.
func Width(s string) int {
	n := 0
	for _, r := range s {
		n += weight(r)
	}
	return n
}
