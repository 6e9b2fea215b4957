package sqlite

import (
	"context"
	"database/sql"
	"sync"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/store"
	"github.com/gatehouse/gatehouse/store/sqlite/internal/sqlknowledge"
)

// The knowledge rows' SQL lives in internal/sqlknowledge: reads on the read
// pool, writes in a transaction of the writer.

var _ store.Knowledge = (*Store)(nil)

// PutKnowledgeDocument implements store.Knowledge.
func (s *Store) PutKnowledgeDocument(ctx context.Context, p store.KnowledgeDocumentPut) (doc store.KnowledgeDocument, changed bool, err error) {
	err = s.InTx(ctx, func(ctx context.Context, t store.Tx) error {
		doc, changed, err = sqlknowledge.Put(ctx, t.(*tx).q, p)
		return err
	})
	return doc, changed, err
}

// DeleteKnowledgeDocument implements store.Knowledge.
func (s *Store) DeleteKnowledgeDocument(ctx context.Context, collection, name string, now time.Time) (deleted bool, err error) {
	err = s.InTx(ctx, func(ctx context.Context, t store.Tx) error {
		deleted, err = sqlknowledge.Delete(ctx, t.(*tx).q, collection, name, now)
		return err
	})
	return deleted, err
}

// SetKnowledgeVectors implements store.Knowledge.
func (s *Store) SetKnowledgeVectors(ctx context.Context, model string, ids []int64, vectors [][]byte) error {
	return s.InTx(ctx, func(ctx context.Context, t store.Tx) error {
		return sqlknowledge.SetVectors(ctx, t.(*tx).q, model, ids, vectors)
	})
}

// GetKnowledgeDocument implements store.Knowledge.
func (s *Store) GetKnowledgeDocument(ctx context.Context, collection, name string) (store.KnowledgeDocument, bool, error) {
	return sqlknowledge.GetDocument(ctx, s.reader.q, collection, name)
}

// KnowledgeDocuments implements store.Knowledge.
func (s *Store) KnowledgeDocuments(ctx context.Context, collection string) ([]store.KnowledgeDocument, error) {
	return sqlknowledge.Documents(ctx, s.reader.q, collection)
}

// KnowledgePassages implements store.Knowledge.
func (s *Store) KnowledgePassages(ctx context.Context, documentID int64) ([]store.KnowledgePassage, error) {
	return sqlknowledge.Passages(ctx, s.reader.q, documentID)
}

// KnowledgeCollections implements store.Knowledge.
func (s *Store) KnowledgeCollections(ctx context.Context) ([]store.KnowledgeCollection, error) {
	return sqlknowledge.Collections(ctx, s.reader.q)
}

// KnowledgeCollectionVersions implements store.Knowledge.
func (s *Store) KnowledgeCollectionVersions(ctx context.Context, names []string) (map[string]int64, error) {
	return sqlknowledge.CollectionVersions(ctx, s.reader.q, names)
}

// KnowledgeTermStats implements store.Knowledge.
func (s *Store) KnowledgeTermStats(ctx context.Context, terms []string) (store.KnowledgeStats, error) {
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return store.KnowledgeStats{}, gh.Wrap(gh.CodeUnavailable, err, "sqlite: begin knowledge term stats")
	}
	defer s.endRead(ctx, tx)
	cache, _ := dfCaches.LoadOrStore(s.path, &sqlknowledge.DFCache{})
	return sqlknowledge.TermStats(ctx, inTx{tx, s.rc}, terms, cache.(*sqlknowledge.DFCache))
}

// dfCaches holds each database's cache of document frequencies, by its
// path: the cache is valid for a generation of the index stored in the
// database itself, so stores opened on the same file may share it.
var dfCaches sync.Map

// KnowledgeMatch implements store.Knowledge.
func (s *Store) KnowledgeMatch(ctx context.Context, m store.KnowledgeMatch) ([]store.KnowledgeHit, error) {
	// One read transaction: the ranking's statements and the rows they
	// find all read the same snapshot.
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, gh.Wrap(gh.CodeUnavailable, err, "sqlite: begin knowledge match")
	}
	defer s.endRead(ctx, tx)
	return sqlknowledge.Match(ctx, inTx{tx, s.rc}, m)
}

// endRead ends a read transaction, then prepares on the read pool the
// statements it met unprepared (inTx defers them): a recall's statements
// are parsed once per pool connection rather than at every recall.
// Preparing inside the transaction could wait for a pool connection
// while holding one.
func (s *Store) endRead(ctx context.Context, tx *sql.Tx) {
	_ = tx.Rollback()
	s.rc.prepareLater(context.WithoutCancel(ctx))
}

// KnowledgeVectors implements store.Knowledge.
func (s *Store) KnowledgeVectors(ctx context.Context, collection, model string) ([]store.KnowledgeHit, int64, error) {
	return sqlknowledge.Vectors(ctx, s.reader.q, collection, model)
}
