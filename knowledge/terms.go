package knowledge

import (
	"strings"

	"github.com/gatehouse/gatehouse/internal/textterms"
)

// Terms: what the lexical index holds and a question is looked up by. The
// library makes them itself — lower-cased words of letters and digits,
// stop words dropped, plurals folded (internal/textterms, the tokeniser
// memory shares), no term over maxTermLen — and both stores index exactly
// these (SQLite FTS5 over the space-joined terms, Postgres tsvector built
// from them without parsing), so recall behaves the same on either.

// stopWords are the shared stop words (textterms) and the library's own.
var stopWords = textterms.StopWords("many much find show explain")

// maxTermLen bounds a term: longer runs (hashes, base64) are not words
// anyone asks about, and index entries stay small.
const maxTermLen = 40

// terms returns the content terms of text in order, with repeats.
func terms(text string) []string {
	words := textterms.Words(text)
	out := words[:0]
	for _, w := range words {
		if len(w) > maxTermLen {
			continue
		}
		if s, ok := textterms.Term(w, stopWords); ok {
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

// termCounter counts how often each of a question's terms is among the
// terms of a passage (as passageTerms makes them), without making them:
// BM25 needs the frequencies of the question's terms only.
type termCounter struct {
	want map[string]int // term → its index in counts
	// first holds the first bytes of the wanted terms. A word's term is
	// the word or a prefix of it, or a prefix with "y" added
	// (textterms.Stem), at least two bytes long unless it is the word
	// itself, so it starts with the word's first byte: a word starting
	// with none of these cannot be wanted, and is not stemmed.
	first [256]bool
}

func newTermCounter(terms []string) *termCounter {
	c := &termCounter{want: make(map[string]int, len(terms))}
	for i, t := range terms {
		c.want[t] = i
		if t != "" {
			c.first[t[0]] = true
		}
	}
	return c
}

// count adds to counts[i] how often the i-th wanted term is among the
// passage's terms.
func (c *termCounter) count(heading []string, text string, counts []int) {
	for _, h := range heading {
		c.countIn(h, counts)
	}
	c.countIn(text, counts)
}

func (c *termCounter) countIn(text string, counts []int) {
	lower := strings.ToLower(text)
	start := -1
	for i, r := range lower {
		if textterms.IsWordRune(r) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			c.countWord(lower[start:i], counts)
			start = -1
		}
	}
	if start >= 0 {
		c.countWord(lower[start:], counts)
	}
}

func (c *termCounter) countWord(w string, counts []int) {
	if len(w) > maxTermLen || !c.first[w[0]] {
		return
	}
	if s, ok := textterms.Term(w, stopWords); ok {
		if i, ok := c.want[s]; ok {
			counts[i]++
		}
	}
}
