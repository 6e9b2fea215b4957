package tghtml

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Entity is a message entity as Telegram reports it (UTF-16 offsets).
type Entity struct {
	Type     string `json:"type"`
	Offset   int    `json:"offset"`
	Length   int    `json:"length"`
	URL      string `json:"url,omitempty"`
	Language string `json:"language,omitempty"`
}

var tags = map[string]string{
	"b": "bold", "strong": "bold", "i": "italic", "em": "italic", "u": "underline", "ins": "underline",
	"s": "strikethrough", "strike": "strikethrough", "del": "strikethrough", "tg-spoiler": "spoiler",
	"span": "spoiler", "a": "text_link", "code": "code", "pre": "pre", "blockquote": "blockquote",
	"tg-emoji": "custom_emoji",
}

// Parse follows Telegram's HTML parse mode: the tags above,
// properly nested and closed; &lt; &gt; &amp; &quot; and numeric
// entities; any other & is literal; a < that does not open a supported
// tag is an error (that is what a missing escape runs into). It returns
// the text the user sees (not yet trimmed) with its entities by offset, or
// the description Telegram gives after "can't parse entities: ".
func Parse(s string) (string, []Entity, error) {
	type open struct {
		tag, typ, url, lang string
		start               int
	}
	var out strings.Builder
	var stack []open
	var entities []Entity
	pos := 0 // UTF-16 offset in out
	for i := 0; i < len(s); {
		switch s[i] {
		case '&':
			if r, n, ok := decodeHTMLEntity(s[i:]); ok {
				out.WriteRune(r)
				pos += utf16Len(r)
				i += n
				continue
			}
			out.WriteByte('&')
			pos++
			i++
		case '<':
			begin := i
			if i+1 < len(s) && s[i+1] == '/' {
				end := strings.IndexByte(s[i:], '>')
				if end < 0 {
					return "", nil, fmt.Errorf("Unclosed end tag at byte offset %d", begin)
				}
				name := strings.ToLower(strings.TrimSpace(s[i+2 : i+end]))
				if len(stack) == 0 {
					return "", nil, fmt.Errorf("Unexpected end tag at byte offset %d", begin)
				}
				top := stack[len(stack)-1]
				if name != "" && name != top.tag {
					return "", nil, fmt.Errorf("Unmatched end tag at byte offset %d, expected \"</%s>\", found \"</%s>\"", begin, top.tag, name)
				}
				stack = stack[:len(stack)-1]
				if pos > top.start {
					entities = append(entities, Entity{Type: top.typ, Offset: top.start, Length: pos - top.start, URL: top.url, Language: top.lang})
				}
				i += end + 1
				continue
			}
			j := i + 1
			for j < len(s) && !isHTMLSpace(s[j]) && s[j] != '>' {
				j++
			}
			if j >= len(s) {
				return "", nil, fmt.Errorf("Unclosed start tag at byte offset %d", begin)
			}
			name := strings.ToLower(s[i+1 : j])
			typ, ok := tags[name]
			if !ok {
				return "", nil, fmt.Errorf("Unsupported start tag \"%s\" at byte offset %d", name, begin)
			}
			attrs := map[string]string{}
			for {
				for j < len(s) && isHTMLSpace(s[j]) {
					j++
				}
				if j >= len(s) {
					return "", nil, fmt.Errorf("Unclosed start tag at byte offset %d", begin)
				}
				if s[j] == '>' {
					j++
					break
				}
				k := j
				for j < len(s) && (isASCIIAlnum(s[j]) || s[j] == '-' || s[j] == '_') {
					j++
				}
				if k == j {
					return "", nil, fmt.Errorf("Empty attribute name in the tag \"%s\" at byte offset %d", name, begin)
				}
				attr := strings.ToLower(s[k:j])
				for j < len(s) && isHTMLSpace(s[j]) {
					j++
				}
				if j >= len(s) || s[j] != '=' {
					attrs[attr] = ""
					continue
				}
				j++
				for j < len(s) && isHTMLSpace(s[j]) {
					j++
				}
				if j >= len(s) {
					return "", nil, fmt.Errorf("Unclosed start tag at byte offset %d", begin)
				}
				var val string
				if q := s[j]; q == '"' || q == '\'' {
					end := strings.IndexByte(s[j+1:], q)
					if end < 0 {
						return "", nil, fmt.Errorf("Unclosed end of attribute value in the tag \"%s\" at byte offset %d", name, begin)
					}
					val = s[j+1 : j+1+end]
					j += end + 2
				} else {
					k := j
					for j < len(s) && !isHTMLSpace(s[j]) && s[j] != '>' {
						j++
					}
					val = s[k:j]
				}
				attrs[attr] = decodeHTMLEntities(val)
			}
			o := open{tag: name, typ: typ, start: pos}
			switch name {
			case "span":
				if attrs["class"] != "tg-spoiler" {
					return "", nil, fmt.Errorf("Tag \"span\" must have class \"tg-spoiler\" at byte offset %d", begin)
				}
			case "a":
				o.url = attrs["href"]
			case "code":
				if lang, ok := strings.CutPrefix(attrs["class"], "language-"); ok {
					o.lang = lang
				}
			case "blockquote":
				if _, ok := attrs["expandable"]; ok {
					o.typ = "expandable_blockquote"
				}
			case "tg-emoji":
				if attrs["emoji-id"] == "" {
					return "", nil, fmt.Errorf("Custom emoji entity must have a valid emoji-id")
				}
			}
			stack = append(stack, o)
			i = j
		default:
			r, n := utf8.DecodeRuneInString(s[i:])
			out.WriteString(s[i : i+n])
			pos += utf16Len(r)
			i += n
		}
	}
	if len(stack) > 0 {
		return "", nil, fmt.Errorf("Can't find end tag corresponding to start tag \"%s\"", stack[len(stack)-1].tag)
	}
	slices.SortStableFunc(entities, func(a, b Entity) int { return a.Offset - b.Offset })
	return out.String(), entities, nil
}

func isHTMLSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func isASCIIAlnum(c byte) bool {
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
}

func utf16Len(r rune) int {
	if r >= 0x10000 {
		return 2
	}
	return 1
}

// decodeHTMLEntity reads one entity at the start of s.
func decodeHTMLEntity(s string) (rune, int, bool) {
	end := strings.IndexByte(s, ';')
	if end < 2 || end > 10 {
		return 0, 0, false
	}
	name := s[1:end]
	switch name {
	case "lt":
		return '<', end + 1, true
	case "gt":
		return '>', end + 1, true
	case "amp":
		return '&', end + 1, true
	case "quot":
		return '"', end + 1, true
	}
	if num, ok := strings.CutPrefix(name, "#"); ok && num != "" {
		base := 10
		if h, ok := strings.CutPrefix(num, "x"); ok {
			num, base = h, 16
		}
		n, err := strconv.ParseUint(num, base, 32)
		if err != nil || n == 0 || n > utf8.MaxRune || (n >= 0xD800 && n <= 0xDFFF) {
			return 0, 0, false
		}
		return rune(n), end + 1, true
	}
	return 0, 0, false
}

func decodeHTMLEntities(s string) string {
	if !strings.Contains(s, "&") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		if s[i] == '&' {
			if r, n, ok := decodeHTMLEntity(s[i:]); ok {
				b.WriteRune(r)
				i += n
				continue
			}
		}
		b.WriteByte(s[i])
		i++
	}
	return b.String()
}
