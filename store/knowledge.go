package store

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"

	gh "github.com/gatehouse/gatehouse"
)

// Knowledge rows. Package knowledge gives them their meaning: documents
// in named collections ("shared", "chat:<session>", "user:<user key>"),
// each split into passages that a lexical index (SQLite FTS5, Postgres
// tsvector/GIN) and optional embeddings find again. A document is keyed by
// (collection, name); its bytes' hash makes a re-add of the same bytes a
// no-op, and a changed file replaces every passage in one transaction.
//
// The rows are not part of Reader/Writer/Tx: a backend that keeps them
// implements Knowledge, which KnowledgeOf finds.

// KnowledgeDocument is one document of a collection.
type KnowledgeDocument struct {
	ID         int64  `json:"id"`
	Collection string `json:"collection"`
	// Name is the document's key within its collection: a path under
	// the watched folder, an uploaded file's name.
	Name      string `json:"name"`
	Title     string `json:"title"`
	MediaType string `json:"mediaType"`
	// Source says where it came from ("folder", "api", "chat", …).
	Source string `json:"source"`
	// Hash is the SHA-256 of the bytes, hex.
	Hash string `json:"hash"`
	// Version counts the contents stored under the name: 1, then +1 for
	// each change.
	Version   int       `json:"version"`
	Size      int64     `json:"size"`
	Passages  int       `json:"passages"`
	AddedBy   string    `json:"addedBy,omitempty"`
	IndexedAt time.Time `json:"indexedAt"`
	Created   time.Time `json:"createdAt"`
}

// KnowledgePassage is a bounded piece of a document's text.
type KnowledgePassage struct {
	ID         int64  `json:"id"`
	DocumentID int64  `json:"documentId"`
	Collection string `json:"collection"`
	// Ord is its place in the document, from 0.
	Ord int `json:"ord"`
	// Heading is the path of headings it sits under, outermost first.
	Heading []string `json:"heading,omitempty"`
	Text    string   `json:"text"`
	// Start and End are byte offsets of Text in the document's text (the
	// file itself for text and Markdown, the extracted text otherwise).
	Start int `json:"start"`
	End   int `json:"end"`
	// Terms are the indexed terms of the passage, in order, with repeats
	// (written, not read back); Length is how many.
	Terms  []string `json:"-"`
	Length int      `json:"length"`
	// Vector is an embedding by Model (opaque to the store); nil when none.
	Model  string `json:"-"`
	Vector []byte `json:"-"`
}

// KnowledgeDocumentPut is a document with its passages, to store.
type KnowledgeDocumentPut struct {
	Doc      KnowledgeDocument
	Passages []KnowledgePassage
	Now      time.Time
}

// KnowledgeCollection is a collection's row: Version rises with every
// change to its documents, so a cache of its vectors knows when to reload.
type KnowledgeCollection struct {
	Name      string    `json:"name"`
	Version   int64     `json:"version"`
	Documents int       `json:"documents"`
	Passages  int       `json:"passages"`
	Updated   time.Time `json:"updatedAt"`
}

// KnowledgeStats are what BM25 needs of the whole library: the passage
// count, the sum of their lengths, and how many passages hold each asked
// term (absent: none).
type KnowledgeStats struct {
	Passages int64
	Terms    int64
	DF       map[string]int64
}

// KnowledgeMatch asks for the passages of Collections that hold any of
// Terms, most promising first — by the summed Weights of the terms each
// holds (1 each when Weights is not given), ties by id — at most Limit.
// DF, when given, is each term's document frequency: it lets the store
// read the postings of the rarest terms only (see RankKnowledgeMatch).
// Worth, when set, says whether a passage holding held of the terms, of
// summed weight weight, could matter at all; the store may leave out
// those it says no to.
type KnowledgeMatch struct {
	Collections []string
	Terms       []string
	Weights     []float64
	DF          []int64
	Limit       int
	Worth       func(held int, weight float64) bool
}

// KnowledgeHit is a passage found by a match, with its document.
type KnowledgeHit struct {
	Passage  KnowledgePassage
	Document KnowledgeDocument
}

// Knowledge is the knowledge library's rows (both stores implement it).
type Knowledge interface {
	// PutKnowledgeDocument stores a document under (collection, name) in
	// one transaction. When the stored one has the same hash nothing is
	// written and changed is false. Otherwise the stored one's passages
	// are replaced by p's, its version raised: a reader sees the old
	// document or the new one whole.
	PutKnowledgeDocument(ctx context.Context, p KnowledgeDocumentPut) (doc KnowledgeDocument, changed bool, err error)
	// DeleteKnowledgeDocument removes a document and its passages; false
	// when there was none.
	DeleteKnowledgeDocument(ctx context.Context, collection, name string, now time.Time) (bool, error)
	// GetKnowledgeDocument returns the document called name, if any.
	GetKnowledgeDocument(ctx context.Context, collection, name string) (KnowledgeDocument, bool, error)
	// KnowledgeDocuments lists a collection's documents by name ("" lists
	// every collection's).
	KnowledgeDocuments(ctx context.Context, collection string) ([]KnowledgeDocument, error)
	// KnowledgePassages returns a document's passages in order.
	KnowledgePassages(ctx context.Context, documentID int64) ([]KnowledgePassage, error)
	// KnowledgeCollections lists the collections that have had documents.
	KnowledgeCollections(ctx context.Context) ([]KnowledgeCollection, error)
	// KnowledgeTermStats returns the library's counts for terms.
	KnowledgeTermStats(ctx context.Context, terms []string) (KnowledgeStats, error)
	// KnowledgeMatch returns the passages m asks for, in one statement.
	KnowledgeMatch(ctx context.Context, m KnowledgeMatch) ([]KnowledgeHit, error)
	// KnowledgeVectors returns every passage of a collection with its
	// document, its vector when one by model is stored (nil otherwise),
	// and the collection's version (read before the rows, so the rows are
	// at least as new: a cache keyed on it reloads, never misses).
	KnowledgeVectors(ctx context.Context, collection, model string) ([]KnowledgeHit, int64, error)
	// SetKnowledgeVectors stores vectors of passages by model; a passage
	// gone meanwhile is skipped.
	SetKnowledgeVectors(ctx context.Context, model string, ids []int64, vectors [][]byte) error
	// KnowledgeCollectionVersions returns the versions of the named
	// collections (absent: never written).
	KnowledgeCollectionVersions(ctx context.Context, names []string) (map[string]int64, error)
}

// KnowledgeOf returns st's knowledge rows, or a CodeInvalid error when the
// backend keeps none.
func KnowledgeOf(st Store) (Knowledge, error) {
	k, ok := st.(Knowledge)
	if !ok {
		return nil, gh.Errorf(gh.CodeInvalid, "store %s keeps no knowledge library", st.Dialect())
	}
	return k, nil
}

// KnowledgeIndex is what RankKnowledgeMatch asks of a store's lexical
// index, all within one read transaction and within the match's
// collections.
type KnowledgeIndex interface {
	// Holders returns the passages holding any of terms[:n], each with
	// a mask of which of terms (bit i: terms[i]) it holds.
	Holders(ctx context.Context, terms []string, n int) (map[int64]uint64, error)
	// Class returns the passages holding every one of all and none of
	// none, lowest id first, at most limit.
	Class(ctx context.Context, all, none []string, limit int) ([]int64, error)
}

// Bounds of RankKnowledgeMatch: the postings it reads whole (summed
// document frequencies of the rarest terms), and how many of the other
// terms it enumerates the combinations of.
const (
	knowledgeRarePostings = 2048
	knowledgeClassTerms   = 6
)

// RankKnowledgeMatch returns the ids of the passages m asks for, best
// first, without scoring every passage that holds one of its terms (the
// commonest terms are held by a large share of the library). Terms are
// taken rarest (weightiest) first:
//
//  1. The rarest terms whose postings sum to at most 2,048 are read
//     whole (Holders), each passage with the mask of every term it holds,
//     so its weight is exact.
//  2. A passage holding none of those holds only the commoner terms, so
//     its weight is that of one combination of them. The combinations are
//     taken heaviest first (Class, each a query that stops at the limit),
//     and only while one could still place: once Limit passages weigh
//     more than the next combination, nothing below can enter. Of more
//     than six common terms the commonest are not enumerated (they still
//     count in Worth), and combinations Worth refuses are skipped.
//
// The result is the same as ranking every holder by summed weight, ties
// by id, but for the passages of combinations Worth refuses and, past six
// common terms, the weight of the commonest (not enumerated, so a passage
// holding them may rank as though it did not).
func RankKnowledgeMatch(ctx context.Context, m KnowledgeMatch, ix KnowledgeIndex) ([]int64, error) {
	n := len(m.Terms)
	if n == 0 || len(m.Collections) == 0 {
		return nil, nil
	}
	if n > 64 {
		return nil, gh.Errorf(gh.CodeInvalid, "knowledge match of %d terms: at most 64", n)
	}
	limit := max(m.Limit, 1)
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	weight := func(i int) float64 {
		if len(m.Weights) == n {
			return m.Weights[i]
		}
		return 1
	}
	df := func(i int) int64 {
		if len(m.DF) == n {
			return m.DF[i]
		}
		return 0
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		return cmp.Or(cmp.Compare(weight(b), weight(a)), cmp.Compare(df(a), df(b)), strings.Compare(m.Terms[a], m.Terms[b]))
	})
	terms, w := make([]string, n), make([]float64, n)
	for k, i := range idx {
		terms[k], w[k] = m.Terms[i], weight(i)
	}
	rare := 0
	for sum := int64(0); rare < n && sum+df(idx[rare]) <= knowledgeRarePostings; rare++ {
		sum += df(idx[rare])
	}
	type scored struct {
		id    int64
		score float64
	}
	var found []scored
	if rare > 0 {
		masks, err := ix.Holders(ctx, terms, rare)
		if err != nil {
			return nil, err
		}
		for id, mask := range masks {
			var s float64
			for k := range n {
				if mask&(1<<k) != 0 {
					s += w[k]
				}
			}
			found = append(found, scored{id, s})
		}
	}
	common := terms[rare:]
	var extraN int
	var extraW float64
	if len(common) > knowledgeClassTerms {
		for k := rare + knowledgeClassTerms; k < n; k++ {
			extraN, extraW = extraN+1, extraW+w[k]
		}
		common = common[:knowledgeClassTerms]
	}
	// The non-empty combinations of the common terms, heaviest first.
	type class struct {
		mask uint64
		sum  float64
		held int
	}
	var classes []class
	for mask := uint64(1); mask < 1<<len(common); mask++ {
		c := class{mask: mask}
		for k := range common {
			if mask&(1<<k) != 0 {
				c.sum, c.held = c.sum+w[rare+k], c.held+1
			}
		}
		classes = append(classes, c)
	}
	slices.SortStableFunc(classes, func(a, b class) int { return cmp.Compare(b.sum, a.sum) })
	for _, c := range classes {
		above := 0 // passages known to weigh more than this class
		for _, f := range found {
			if f.score > c.sum {
				above++
			}
		}
		if above >= limit {
			break
		}
		if m.Worth != nil && !m.Worth(c.held+extraN, c.sum+extraW) {
			continue
		}
		var all, none []string
		for k, t := range common {
			if c.mask&(1<<k) != 0 {
				all = append(all, t)
			} else {
				none = append(none, t)
			}
		}
		none = append(none, terms[:rare]...)
		ids, err := ix.Class(ctx, all, none, limit-above)
		if err != nil {
			return nil, err
		}
		for _, id := range ids {
			found = append(found, scored{id, c.sum})
		}
	}
	slices.SortFunc(found, func(a, b scored) int { return cmp.Or(cmp.Compare(b.score, a.score), cmp.Compare(a.id, b.id)) })
	out := make([]int64, 0, min(limit, len(found)))
	for _, f := range found[:min(limit, len(found))] {
		out = append(out, f.id)
	}
	return out, nil
}
