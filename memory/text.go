package memory

import (
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/gatehouse/gatehouse/internal/textterms"
	"github.com/gatehouse/gatehouse/store"
)

// Words: the tokeniser, stop words and stemmer that recall, the index and
// subject keys share (internal/textterms, shared with the knowledge
// library; memory adds its stop words and folds "e-mail").

// stopWords are the shared stop words (textterms) and memory's own.
var stopWords = textterms.StopWords("forget thought wanted like com org net www http https")

// words splits text into lower-case runs of letters and digits; "e-mail"
// counts as "email".
func words(text string) []string {
	return textterms.Words(strings.ReplaceAll(strings.ToLower(text), "e-mail", "email"))
}

// contentTerms returns the stemmed content words of text with their counts,
// in order of first appearance.
func contentTerms(text string) (terms []string, tf map[string]int) {
	tf = map[string]int{}
	for _, w := range words(text) {
		s, ok := textterms.Term(w, stopWords)
		if !ok {
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
