package cards

import (
	"strings"
	"unicode/utf8"

	"github.com/gatehouse/gatehouse/answers"
)

// SplitText cuts text into parts that each fit max characters once
// formatted by format: at a paragraph break, else a line break, else a
// space, else anywhere. Tables become lines first: chat apps do not
// render them.
func SplitText(text string, max int, format func(string) string) []string {
	text = strings.TrimSpace(answers.TablesToLines(text))
	if text == "" {
		return nil
	}
	if max <= 0 {
		return []string{format(text)}
	}
	var parts []string
	for text != "" {
		n := utf8.RuneCountInString(text)
		if n <= max && utf8.RuneCountInString(format(text)) <= max {
			parts = append(parts, format(text))
			break
		}
		cut := fitCut(text, max, format)
		parts = append(parts, format(strings.TrimRight(text[:cut], " \n")))
		text = strings.TrimLeft(text[cut:], " \n")
	}
	return parts
}

// fitCut is the byte offset of the best cut of text whose formatted head
// fits max runes.
func fitCut(text string, max int, format func(string) string) int {
	limit := max
	for {
		end := byteOffset(text, limit)
		head := text[:end]
		cut := end
		for _, sep := range []string{"\n\n", "\n", " "} {
			if i := strings.LastIndex(head, sep); i > len(head)/2 {
				cut = i + len(sep)
				break
			}
		}
		if utf8.RuneCountInString(format(strings.TrimRight(text[:cut], " \n"))) <= max || limit <= 16 {
			if cut == 0 {
				cut = end
			}
			return cut
		}
		// Escaping grew it past the limit: try a shorter head.
		limit = limit * 9 / 10
	}
}

func byteOffset(s string, runes int) int {
	i := 0
	for j := range s {
		if i == runes {
			return j
		}
		i++
	}
	return len(s)
}
