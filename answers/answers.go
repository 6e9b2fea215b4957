package answers

import (
	"encoding/json"
	"reflect"
	"regexp"
	"strings"
)

var (
	oneParagraph = regexp.MustCompile(`(?i)\b(in|as|into) (one|a single|1) paragraph\b|\bone[- ]paragraph\b|\bsingle paragraph\b`)
	copyExactly  = regexp.MustCompile(`(?i)\b(exact(ly)?|verbatim|byte[- ]for[- ]byte|unchanged|as[- ]is|copy|repeat|echo)\b`)
	listMarker   = regexp.MustCompile(`^\s*(?:[-*•]|\d+[.)])\s+`)
)

// Apply runs the safeguards that depend on what the user asked.
func Apply(question, answer string) string {
	if oneParagraph.MatchString(question) {
		answer = OneParagraph(answer)
	}
	if copyExactly.MatchString(question) {
		answer = KeepJSON(question, answer)
	}
	return answer
}

// OneParagraph joins an answer's lines and paragraphs into one, dropping
// list markers and headings' hashes, so "in one paragraph" is honoured even
// when a model could not help itself.
func OneParagraph(answer string) string {
	var parts []string
	for _, line := range strings.Split(answer, "\n") {
		line = strings.TrimSpace(line)
		line = strings.TrimLeft(line, "#")
		line = listMarker.ReplaceAllString(strings.TrimSpace(line), "")
		if line != "" {
			parts = append(parts, line)
		}
	}
	return strings.Join(parts, " ")
}

// KeepJSON puts back, byte for byte, a JSON object of the question that
// the answer reproduced with the same meaning but other bytes (reordered
// keys, changed spacing, escaped characters).
func KeepJSON(question, answer string) string {
	for _, orig := range objects(question) {
		var want any
		if json.Unmarshal([]byte(orig), &want) != nil {
			continue
		}
		for _, got := range objects(answer) {
			if got == orig {
				continue
			}
			var have any
			if json.Unmarshal([]byte(got), &have) == nil && reflect.DeepEqual(have, want) {
				answer = strings.Replace(answer, got, orig, 1)
			}
		}
	}
	return answer
}

// objects finds the balanced {...} spans of s that parse as JSON.
func objects(s string) []string {
	var out []string
	for i := 0; i < len(s); i++ {
		if s[i] != '{' {
			continue
		}
		depth, inString, escaped := 0, false, false
		for j := i; j < len(s); j++ {
			c := s[j]
			switch {
			case escaped:
				escaped = false
			case inString && c == '\\':
				escaped = true
			case c == '"':
				inString = !inString
			case !inString && c == '{':
				depth++
			case !inString && c == '}':
				depth--
				if depth == 0 {
					if cand := s[i : j+1]; json.Valid([]byte(cand)) {
						out = append(out, cand)
						i = j
					}
					j = len(s)
				}
			}
		}
	}
	return out
}

// TablesToLines rewrites Markdown tables as lines a phone shows well:
// each row becomes "Header: value · Header: value". Text outside tables is
// left as it is.
func TablesToLines(text string) string {
	lines := strings.Split(text, "\n")
	var out []string
	for i := 0; i < len(lines); i++ {
		if i+1 < len(lines) && isRow(lines[i]) && isRule(lines[i+1]) {
			header := cells(lines[i])
			i += 2
			for ; i < len(lines) && isRow(lines[i]); i++ {
				var parts []string
				for k, v := range cells(lines[i]) {
					if v == "" {
						continue
					}
					if k < len(header) && header[k] != "" {
						parts = append(parts, header[k]+": "+v)
					} else {
						parts = append(parts, v)
					}
				}
				out = append(out, "• "+strings.Join(parts, " · "))
			}
			i--
			continue
		}
		out = append(out, lines[i])
	}
	return strings.Join(out, "\n")
}

func isRow(l string) bool {
	l = strings.TrimSpace(l)
	return strings.HasPrefix(l, "|") && strings.Count(l, "|") >= 2
}

func isRule(l string) bool {
	l = strings.TrimSpace(l)
	if !isRow(l) {
		return false
	}
	stripped := strings.Map(func(r rune) rune {
		if r == '|' || r == '-' || r == ':' || r == ' ' {
			return -1
		}
		return r
	}, l)
	return stripped == "" && strings.Contains(l, "-")
}

func cells(l string) []string {
	l = strings.TrimSpace(l)
	l = strings.TrimPrefix(strings.TrimSuffix(l, "|"), "|")
	var out []string
	for _, c := range strings.Split(l, "|") {
		out = append(out, strings.TrimSpace(c))
	}
	return out
}
