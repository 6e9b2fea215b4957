package mailaddr

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	gh "github.com/gatehouse/gatehouse"
	"golang.org/x/net/idna"
	"golang.org/x/text/unicode/runenames"
)

// Address is one mail address as a mail server reads it.
type Address struct {
	// Written is the address as the call wrote it (an addr-spec, without
	// a display name).
	Written string
	// Local is the local part, as written: nothing maps it, and the
	// receiving server alone says what it means.
	Local string
	// Domain is the domain after the UTS #46 mapping, in Unicode: what a
	// card shows (lower-cased, "。" read as ".", full-width letters as
	// plain ones).
	Domain string
	// ASCIIDomain is Domain with every label that is not plain ASCII as
	// its A-label (xn--…): the domain the mail is sent to, and the one a
	// resolver looks up.
	ASCIIDomain string
}

// Shown is the address as a card's "To:" line shows it: the local part as
// written at the mapped domain in Unicode.
func (a Address) Shown() string { return a.Local + "@" + a.Domain }

// Sent is the address the SMTP envelope and the To header carry: the
// local part as written at the mapped domain's A-label form. It differs
// from [Address.Shown] only for a domain that is not plain ASCII, and
// the card then says so ([Address.Notes]).
func (a Address) Sent() string { return a.Local + "@" + a.ASCIIDomain }

// Parse maps addr (an addr-spec, "local@domain", as net/mail parsed it)
// as a mail server will: the domain through UTS #46 (the lookup profile,
// as a resolver reads it), the local part untouched. A domain the mapping
// refuses, or with an empty label once mapped ("example.com。" ends in
// one), is an invalid argument: nothing could be sent there.
//
// A domain literal ("[192.0.2.1]") is kept as written.
func Parse(addr string) (Address, error) {
	i := strings.LastIndexByte(addr, '@')
	if i <= 0 || i == len(addr)-1 {
		return Address{}, gh.Errorf(gh.CodeInvalid, "%q is not an address like sara@example.com", addr)
	}
	a := Address{Written: addr, Local: addr[:i]}
	domain := addr[i+1:]
	if strings.HasPrefix(domain, "[") {
		a.Domain, a.ASCIIDomain = domain, domain
		return a, nil
	}
	ascii, err := idna.Lookup.ToASCII(domain)
	if err != nil {
		return Address{}, gh.Wrap(gh.CodeInvalid, err, "%q has a domain that is not a valid internationalised domain name", addr)
	}
	// Lookup's ToUnicode of the A-label form is the mapped domain in
	// Unicode: the same labels, each shown as a person reads it.
	unicodeForm, err := idna.Lookup.ToUnicode(ascii)
	if err != nil {
		return Address{}, gh.Wrap(gh.CodeInvalid, err, "%q has a domain that is not a valid internationalised domain name", addr)
	}
	for label := range strings.SplitSeq(ascii, ".") {
		if label == "" {
			return Address{}, gh.Errorf(gh.CodeInvalid, "%q has a domain with an empty label once read as a mail server reads it (%s)", addr, unicodeForm)
		}
	}
	a.Domain, a.ASCIIDomain = unicodeForm, ascii
	return a, nil
}

// MaxCharsNamed is how many distinct non-ASCII characters a note names
// per label; the rest are counted. A note is shown whole on every card,
// so it must stay short.
const MaxCharsNamed = 4

// Note is one warning line about an address: the card shows it as
// "Label: Text" on a line of its own.
type Note struct {
	Label string
	Text  string
}

// Labels of the notes, as a card shows them: ⚠ without the emoji
// variation selector, which cards.Visible writes as an escape.
const (
	LabelNotASCII  = "⚠ Not plain ASCII"
	LabelRewritten = "⚠ Rewritten"
)

// Notes are what a card says about a besides the address itself, none
// for a plain ASCII address written as it is sent:
//
//   - the mapping rewrote the domain (a "。", a full-width letter): what
//     was written, the characters it read differently, and where the
//     mail goes;
//   - a label (the local part, or a label of the domain) is not plain
//     ASCII: each of its non-ASCII characters as U+XXXX with its name,
//     "mixes scripts (Latin, Cyrillic)" when it does, and the address as
//     sent when the domain's A-label form differs from what is shown.
func (a Address) Notes() []Note {
	var notes []Note
	if domain := a.Written[len(a.Local)+1:]; !isASCII(domain) && domain != a.Domain {
		var changed []rune
		for _, r := range domain {
			if r >= utf8.RuneSelf && !strings.ContainsRune(a.Domain, r) && !slices.Contains(changed, r) {
				changed = append(changed, r)
			}
		}
		text := fmt.Sprintf("written %s", a.Written)
		if len(changed) > 0 {
			text += ", with " + describe(changed)
		}
		text += "; a mail server reads it as " + a.Shown() + ", and that is where it is sent"
		notes = append(notes, Note{Label: LabelRewritten, Text: text})
	}
	var parts []string
	if !isASCII(a.Local) {
		parts = append(parts, labelNote("local part", a.Local))
	}
	for label := range strings.SplitSeq(a.Domain, ".") {
		if !isASCII(label) {
			parts = append(parts, labelNote("domain label", label))
		}
	}
	if len(parts) == 0 {
		return notes
	}
	text := a.Shown()
	if a.Sent() != a.Shown() {
		text += " is sent as " + a.Sent()
	}
	notes = append(notes, Note{Label: LabelNotASCII, Text: text + ": " + strings.Join(parts, "; ")})
	return notes
}

// labelNote says what in label is not plain ASCII: its characters, and
// its scripts when it mixes them.
func labelNote(what, label string) string {
	var chars []rune
	for _, r := range label {
		if r >= utf8.RuneSelf && !slices.Contains(chars, r) {
			chars = append(chars, r)
		}
	}
	s := fmt.Sprintf("%s %q has %s", what, label, describe(chars))
	if scripts := Scripts(label); Mixed(scripts) {
		s += ", mixed scripts (" + strings.Join(scripts, ", ") + ")"
	}
	return s
}

// describe names chars as "U+0430 (CYRILLIC SMALL LETTER A)", at most
// MaxCharsNamed of them, the rest counted.
func describe(chars []rune) string {
	named := make([]string, 0, min(len(chars), MaxCharsNamed))
	for i, r := range chars {
		if i == MaxCharsNamed {
			break
		}
		n := fmt.Sprintf("U+%04X", r)
		if name := runenames.Name(r); name != "" && !strings.HasPrefix(name, "<") {
			n += " (" + name + ")"
		}
		named = append(named, n)
	}
	s := strings.Join(named, ", ")
	if rest := len(chars) - len(named); rest > 0 {
		s += fmt.Sprintf(" and %d more", rest)
	}
	return s
}

// Scripts are the scripts of the characters of label, in the order they
// first appear, Common and Inherited (digits, hyphens, combining marks)
// aside: they belong to every script.
func Scripts(label string) []string {
	var out []string
	for _, r := range label {
		name := scriptOf(r)
		if name == "" || name == "Common" || name == "Inherited" || slices.Contains(out, name) {
			continue
		}
		out = append(out, name)
	}
	return out
}

// Mixed reports whether scripts (of one label) mix in a way a lookalike
// would: more than one script, unless they are a combination one writing
// system uses together (UTS #39's "highly restrictive" level: Latin with
// Han, Hiragana and Katakana for Japanese, with Han and Bopomofo for
// Chinese, with Han and Hangul for Korean), so "日本語ドメイン" is not
// flagged and "pаypal" is.
func Mixed(scripts []string) bool {
	if len(scripts) <= 1 {
		return false
	}
	for _, allowed := range [][]string{
		{"Latin", "Han", "Hiragana", "Katakana"},
		{"Latin", "Han", "Bopomofo"},
		{"Latin", "Han", "Hangul"},
	} {
		all := true
		for _, s := range scripts {
			all = all && slices.Contains(allowed, s)
		}
		if all {
			return false
		}
	}
	return true
}

// scriptOf is the name of r's script, or "" when the tables have none.
func scriptOf(r rune) string {
	// The common cases first: this runs for every character of every
	// address on a card.
	switch {
	case unicode.Is(unicode.Latin, r):
		return "Latin"
	case unicode.Is(unicode.Common, r):
		return "Common"
	case unicode.Is(unicode.Inherited, r):
		return "Inherited"
	}
	for name, table := range unicode.Scripts {
		if unicode.Is(table, r) {
			return name
		}
	}
	return ""
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
