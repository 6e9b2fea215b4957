package textterms_test

import (
	"slices"
	"testing"

	"github.com/gatehouse/gatehouse/internal/textterms"
)

func TestTermsOfAQuestion(t *testing.T) {
	stop := textterms.StopWords("many")
	var got []string
	for _, w := range textterms.Words("How many Policies cover the 3 addresses, x?") {
		if s, ok := textterms.Term(w, stop); ok {
			got = append(got, s)
		}
	}
	if want := []string{"policy", "cover", "3", "address"}; !slices.Equal(got, want) {
		t.Fatalf("terms %q, want %q", got, want)
	}
	for _, r := range "aZ9é" {
		if !textterms.IsWordRune(r) {
			t.Fatalf("%q is a word rune", r)
		}
	}
	if textterms.IsWordRune('-') || textterms.IsWordRune(' ') {
		t.Fatal("punctuation is not")
	}
}
