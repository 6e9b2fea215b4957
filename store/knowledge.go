package store

import (
	"context"
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
// Terms, most promising first (by the summed Weights of the terms each
// holds, or the index's own rank), at most Limit.
type KnowledgeMatch struct {
	Collections []string
	Terms       []string
	Weights     []float64
	Limit       int
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
