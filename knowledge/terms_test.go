package knowledge

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestTermCounterCountsWhatIsIndexed checks that the recall's term counts
// (termCounter, which skips words whose first byte no wanted term has)
// are what counting the passage's indexed terms (passageTerms) gives, on
// generated passages with plurals, stop words, capitals, digits,
// non-ASCII letters, one-letter words and over-long runs: BM25 scores a
// passage by them, so a miscount would change what is recalled.
func TestTermCounterCountsWhatIsIndexed(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	pieces := []string{"policy", "policies", "Policies", "day", "days", "address", "addresses", "box", "boxes", "bus", "this", "is",
		"the", "and", "a", "x", "7", "42", "y", "ay", "ays", "yes", "café", "cafés", "Éclair", "éclairs", "straße", "größe",
		"日本語", "ключи", "ключ", "likes", "like", "class", "classes", "wishes", "wish", "much", "many", "find", "shows",
		strings.Repeat("z", 41), strings.Repeat("q", 40), "ies", "iess", "spies", "spy"}
	seps := []string{" ", ", ", ". ", "\n", " — ", "-", "'", "(", ") ", "\t"}
	word := func() string { return pieces[r.IntN(len(pieces))] }
	for n := range 20000 {
		var sb strings.Builder
		for range 1 + r.IntN(30) {
			sb.WriteString(word())
			sb.WriteString(seps[r.IntN(len(seps))])
		}
		text := sb.String()
		var heading []string
		for range r.IntN(3) {
			heading = append(heading, word()+" "+word())
		}
		// The question: some of the passage's own terms and some others.
		var asked []string
		for range 1 + r.IntN(8) {
			if ts, ok := term1(word()); ok {
				asked = append(asked, ts)
			}
		}
		asked = distinct(append(asked, distinct(passageTerms(heading, text))[:min(3, len(distinct(passageTerms(heading, text))))]...))
		want := make([]int, len(asked))
		for _, term := range passageTerms(heading, text) {
			if i := slices.Index(asked, term); i >= 0 {
				want[i]++
			}
		}
		got := make([]int, len(asked))
		newTermCounter(asked).count(heading, text, got)
		if !slices.Equal(got, want) {
			t.Fatalf("passage %d %q under %q, terms %q: counted %v, indexed %v", n, text, heading, asked, got, want)
		}
	}
}

// term1 is the term a single word stands for, if any.
func term1(w string) (string, bool) {
	ts := terms(w)
	if len(ts) != 1 {
		return "", false
	}
	return ts[0], true
}
