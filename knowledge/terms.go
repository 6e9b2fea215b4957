package knowledge

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Terms: what the lexical index holds and a question is looked up by. The
// library makes them itself — lower-cased words of letters and digits,
// stop words dropped, plurals folded — and both stores index exactly
// these (SQLite FTS5 over the space-joined terms, Postgres tsvector built
// from them without parsing), so recall behaves the same on either.

// stopWords carry no content in a question or a passage: function words,
// question words and the verbs of asking.
var stopWords = setOf(`a about above after again against all also am an and any are aren as at be because been before being below
between both but by can cannot could couldn d did didn do does doesn doing don down during each either else ever every few for from
further had hadn has hasn have haven having he her here hers herself him himself his how i if in into is isn it its itself just ll
m me might mine more most must mustn my myself no nor not now of off on once only or other ought our ours ourselves out over own
please re s same shall shan she should shouldn so some such t than that the their theirs them themselves then there these they this
those through to too under until up us ve very was wasn we were weren what when where which while who whom whose why will with won
would wouldn y you your yours yourself yourselves many much
hey hi hello ok okay oh thanks thank yes yeah sure
tell know remember recall say said think let get got give gave make made want wonder find show explain`)

func setOf(words string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(words) {
		m[w] = true
	}
	return m
}

// maxTermLen bounds a term: longer runs (hashes, base64) are not words
// anyone asks about, and index entries stay small.
const maxTermLen = 40

// stem folds plurals and third-person verbs ("days" → "day", "policies"
// → "policy", "addresses" → "address"). It is deliberately light: a
// wrong merge would let unrelated passages through the floor.
func stem(w string) string {
	n := len(w)
	switch {
	case n > 4 && strings.HasSuffix(w, "ies"):
		return w[:n-3] + "y"
	case n > 4 && (strings.HasSuffix(w, "sses") || strings.HasSuffix(w, "shes") || strings.HasSuffix(w, "ches") || strings.HasSuffix(w, "xes")):
		return w[:n-2]
	case n > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") && !strings.HasSuffix(w, "us") && !strings.HasSuffix(w, "is"):
		return w[:n-1]
	}
	return w
}

// terms returns the content terms of text in order, with repeats.
func terms(text string) []string {
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	out := words[:0]
	for _, w := range words {
		if len(w) > maxTermLen || len(w) < 2 && !unicode.IsDigit(rune(w[0])) || stopWords[w] {
			continue
		}
		if s := stem(w); !stopWords[s] {
			out = append(out, s)
		}
	}
	return out
}

// distinct returns terms without repeats, in order of first appearance.
func distinct(ts []string) []string {
	seen := make(map[string]bool, len(ts))
	var out []string
	for _, t := range ts {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}

// passageTerms is what a passage is indexed under: the words of its
// heading path and of its text.
func passageTerms(heading []string, text string) []string {
	if len(heading) == 0 {
		return terms(text)
	}
	return terms(strings.Join(heading, " ") + "\n" + text)
}

// countTerms adds to counts[i] how often want's term i is among the terms
// of a passage (as passageTerms makes them), without making them: BM25
// needs the frequencies of the question's terms only.
func countTerms(heading []string, text string, want map[string]int, counts []int) {
	for _, h := range heading {
		countIn(h, want, counts)
	}
	countIn(text, want, counts)
}

func countIn(text string, want map[string]int, counts []int) {
	lower := strings.ToLower(text)
	start := -1
	for i, r := range lower {
		if r < utf8.RuneSelf && ('a' <= r && r <= 'z' || '0' <= r && r <= '9') || r >= utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			countWord(lower[start:i], want, counts)
			start = -1
		}
	}
	if start >= 0 {
		countWord(lower[start:], want, counts)
	}
}

func countWord(w string, want map[string]int, counts []int) {
	if len(w) > maxTermLen || len(w) < 2 && !unicode.IsDigit(rune(w[0])) || stopWords[w] {
		return
	}
	if s := stem(w); !stopWords[s] {
		if i, ok := want[s]; ok {
			counts[i]++
		}
	}
}
