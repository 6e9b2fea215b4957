package textterms

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// commonStopWords carry no content in a question, a fact or a passage:
// function words, question words and the verbs of asking.
const commonStopWords = `a about above after again against all also am an and any are aren as at be because been before being below
between both but by can cannot could couldn d did didn do does doesn doing don down during each either else ever every few for from
further had hadn has hasn have haven having he her here hers herself him himself his how i if in into is isn it its itself just ll
m me might mine more most must mustn my myself no nor not now of off on once only or other ought our ours ourselves out over own
please re s same shall shan she should shouldn so some such t than that the their theirs them themselves then there these they this
those through to too under until up us ve very was wasn we were weren what when where which while who whom whose why will with won
would wouldn y you your yours yourself yourselves
hey hi hello ok okay oh thanks thank yes yeah sure
tell know remember recall say said think let get got give gave make made want wonder`

// StopWords is the common stop words and extra (space-separated words),
// as a set.
func StopWords(extra string) map[string]bool { return Set(commonStopWords + " " + extra) }

// Set is the space-separated words of words, as a set.
func Set(words string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(words) {
		m[w] = true
	}
	return m
}

// IsWordRune reports whether r belongs to a word: a letter or a digit,
// with ASCII decided without the unicode tables.
func IsWordRune(r rune) bool {
	if r < utf8.RuneSelf {
		return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9'
	}
	return unicode.IsLetter(r) || unicode.IsDigit(r)
}

// Words splits text into its lower-cased runs of letters and digits.
func Words(text string) []string {
	return strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

// Term is the term word w (lower-cased, from Words) stands for, stemmed,
// and false when it carries no content: a single letter, or a stop word
// before or after stemming.
func Term(w string, stop map[string]bool) (string, bool) {
	if len(w) < 2 && !unicode.IsDigit(rune(w[0])) || stop[w] {
		return "", false
	}
	s := Stem(w)
	if stop[s] {
		return "", false
	}
	return s, true
}

// Stem folds plurals and third-person verbs ("days" → "day", "policies"
// → "policy", "addresses" → "address", "likes" → "like"). It is
// deliberately light: a wrong merge would let unrelated facts or passages
// through the floor.
func Stem(w string) string {
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
