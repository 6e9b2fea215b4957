package memory

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/gatehouse/gatehouse/store"
)

// Words: the tokeniser, stop words and stemmer that recall, the index and
// subject keys share.

// stopWords are the words that carry no content in a question or a fact:
// function words, question words and the verbs of asking.
var stopWords = setOf(`a about above after again against all also am an and any are aren as at be because been before being below
between both but by can cannot could couldn d did didn do does doesn doing don down during each either else ever every few for from
further had hadn has hasn have haven having he her here hers herself him himself his how i if in into is isn it its itself just ll
m me might mine more most must mustn my myself no nor not now of off on once only or other ought our ours ourselves out over own
please re s same shall shan she should shouldn so some such t than that the their theirs them themselves then there these they this
those through to too under until up us ve very was wasn we were weren what when where which while who whom whose why will with won
would wouldn y you your yours yourself yourselves
hey hi hello ok okay oh thanks thank yes yeah sure
tell know remember recall forget say said think thought let get got give gave make made want wanted wonder like
com org net www http https`)

func setOf(words string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(words) {
		m[w] = true
	}
	return m
}

// words splits text into lower-case runs of letters and digits; "e-mail"
// counts as "email".
func words(text string) []string {
	text = strings.ToLower(text)
	text = strings.ReplaceAll(text, "e-mail", "email")
	return strings.FieldsFunc(text, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

// stem folds plurals and third-person verbs: "emails" → "email", "likes" →
// "like", "addresses" → "address", "stories" → "story". It is deliberately
// light: a wrong merge would let unrelated facts through the floor.
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

// contentTerms returns the stemmed content words of text with their counts,
// in order of first appearance.
func contentTerms(text string) (terms []string, tf map[string]int) {
	tf = map[string]int{}
	for _, w := range words(text) {
		if len(w) < 2 && !unicode.IsDigit(rune(w[0])) || stopWords[w] {
			continue
		}
		s := stem(w)
		if stopWords[s] {
			continue
		}
		if tf[s] == 0 {
			terms = append(terms, s)
		}
		tf[s]++
	}
	return terms, tf
}

// indexTerms is what a fact is indexed under: the content words of its
// text, and of its value when the text does not hold it.
func indexTerms(f Fact) []store.MemoryTerm {
	text := f.Text
	if !strings.Contains(strings.ToLower(text), strings.ToLower(f.Value)) {
		text += " " + f.Value
	}
	_, tf := contentTerms(text)
	out := make([]store.MemoryTerm, 0, len(tf))
	for t, n := range tf {
		out = append(out, store.MemoryTerm{Term: t, TF: n})
	}
	slices.SortFunc(out, func(a, b store.MemoryTerm) int { return strings.Compare(a.Term, b.Term) })
	return out
}

// maxSubjectLen bounds a subject key.
const maxSubjectLen = 200

// normalizeSubject lower-cases a subject and collapses its spaces.
func normalizeSubject(s string) string {
	s = strings.Join(strings.Fields(strings.ToLower(s)), " ")
	if len(s) > maxSubjectLen {
		s = s[:maxSubjectLen]
		for s != "" && !utf8.ValidString(s) {
			s = s[:len(s)-1] // a multi-byte rune was cut
		}
	}
	return s
}

// topicKey is an order-free key of the content words of text: the sorted,
// distinct stems, at most max of them.
func topicKey(text string, drop map[string]bool, max int) string {
	terms, _ := contentTerms(text)
	var keep []string
	for _, t := range terms {
		if !drop[t] {
			keep = append(keep, t)
		}
	}
	slices.Sort(keep)
	keep = slices.Compact(keep)
	if len(keep) > max {
		keep = keep[:max]
	}
	return strings.Join(keep, " ")
}
