package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/store"
	"github.com/gatehouse/gatehouse/store/postgres/internal/pgknowledge"
)

// The knowledge rows' SQL lives in internal/pgknowledge: reads on the
// pool, writes in a transaction.

var _ store.Knowledge = (*Store)(nil)

// PutKnowledgeDocument implements store.Knowledge.
func (s *Store) PutKnowledgeDocument(ctx context.Context, p store.KnowledgeDocumentPut) (doc store.KnowledgeDocument, changed bool, err error) {
	err = s.InTx(ctx, func(ctx context.Context, t store.Tx) error {
		doc, changed, err = pgknowledge.Put(ctx, t.(*tx).q, p)
		return err
	})
	return doc, changed, err
}

// DeleteKnowledgeDocument implements store.Knowledge.
func (s *Store) DeleteKnowledgeDocument(ctx context.Context, collection, name string, now time.Time) (deleted bool, err error) {
	err = s.InTx(ctx, func(ctx context.Context, t store.Tx) error {
		deleted, err = pgknowledge.Delete(ctx, t.(*tx).q, collection, name, now)
		return err
	})
	return deleted, err
}

// SetKnowledgeVectors implements store.Knowledge.
func (s *Store) SetKnowledgeVectors(ctx context.Context, model string, ids []int64, vectors [][]byte) error {
	return pgknowledge.SetVectors(ctx, s.q, model, ids, vectors)
}

// GetKnowledgeDocument implements store.Knowledge.
func (s *Store) GetKnowledgeDocument(ctx context.Context, collection, name string) (store.KnowledgeDocument, bool, error) {
	return pgknowledge.GetDocument(ctx, s.q, collection, name)
}

// KnowledgeDocuments implements store.Knowledge.
func (s *Store) KnowledgeDocuments(ctx context.Context, collection string) ([]store.KnowledgeDocument, error) {
	return pgknowledge.Documents(ctx, s.q, collection)
}

// KnowledgePassages implements store.Knowledge.
func (s *Store) KnowledgePassages(ctx context.Context, documentID int64) ([]store.KnowledgePassage, error) {
	return pgknowledge.Passages(ctx, s.q, documentID)
}

// KnowledgeCollections implements store.Knowledge.
func (s *Store) KnowledgeCollections(ctx context.Context) ([]store.KnowledgeCollection, error) {
	return pgknowledge.Collections(ctx, s.q)
}

// KnowledgeCollectionVersions implements store.Knowledge.
func (s *Store) KnowledgeCollectionVersions(ctx context.Context, names []string) (map[string]int64, error) {
	return pgknowledge.CollectionVersions(ctx, s.q, names)
}

// KnowledgeTermStats implements store.Knowledge.
func (s *Store) KnowledgeTermStats(ctx context.Context, terms []string) (store.KnowledgeStats, error) {
	return pgknowledge.TermStats(ctx, s.q, terms)
}

// KnowledgeMatch implements store.Knowledge.
func (s *Store) KnowledgeMatch(ctx context.Context, m store.KnowledgeMatch) ([]store.KnowledgeHit, error) {
	// One repeatable-read transaction: the ranking's statements and the
	// rows they find all read the same snapshot.
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, gh.Wrap(gh.CodeUnavailable, err, "postgres: begin knowledge match")
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	hits, err := pgknowledge.Match(ctx, tx, m)
	if err != nil {
		return nil, err
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, gh.Wrap(gh.CodeUnavailable, err, "postgres: end knowledge match")
	}
	return hits, nil
}

// KnowledgeVectors implements store.Knowledge.
func (s *Store) KnowledgeVectors(ctx context.Context, collection, model string) ([]store.KnowledgeHit, int64, error) {
	return pgknowledge.Vectors(ctx, s.q, collection, model)
}
