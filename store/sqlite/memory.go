package sqlite

import (
	"context"
	"time"

	"github.com/gatehouse/gatehouse/store"
	"github.com/gatehouse/gatehouse/store/sqlite/internal/sqlmemory"
)

// The memory rows' SQL lives in internal/sqlmemory; these methods hand it
// the reader's or the transaction's connection, so the store interfaces
// stay implemented here.

func (t *reader) GetMemoryFact(ctx context.Context, id int64) (store.MemoryFact, error) {
	return sqlmemory.GetFact(ctx, t.q, id)
}

func (t *reader) MemoryFacts(ctx context.Context, userKey, subjectPrefix string, limit int) ([]store.MemoryFact, error) {
	return sqlmemory.Facts(ctx, t.q, userKey, subjectPrefix, limit)
}

func (t *reader) MemoryFactsByID(ctx context.Context, userKey string, ids []int64) ([]store.MemoryFact, error) {
	return sqlmemory.FactsByID(ctx, t.q, userKey, ids)
}

func (t *reader) MemoryTermStats(ctx context.Context, userKey string, terms []string) (store.MemoryStats, error) {
	return sqlmemory.TermStats(ctx, t.q, userKey, terms)
}

func (t *reader) MemoryPostings(ctx context.Context, userKey string, terms, also []string) ([]store.MemoryPosting, error) {
	return sqlmemory.Postings(ctx, t.q, userKey, terms, also)
}

func (t *reader) MemoryVectors(ctx context.Context, userKey, model string) ([]store.MemoryVector, error) {
	return sqlmemory.Vectors(ctx, t.q, userKey, model)
}

func (t *tx) PutMemoryFact(ctx context.Context, f store.MemoryFact, terms []store.MemoryTerm) (store.MemoryFact, bool, error) {
	return sqlmemory.PutFact(ctx, t.q, f, terms)
}

func (t *tx) ForgetMemoryFacts(ctx context.Context, userKey string, ids []int64, now time.Time) ([]store.MemoryFact, error) {
	return sqlmemory.ForgetFacts(ctx, t.q, userKey, ids, now)
}

func (t *tx) SetMemoryVectors(ctx context.Context, vs []store.MemoryVector) error {
	return sqlmemory.SetVectors(ctx, t.q, vs)
}

func (t *reader) GetMemoryJob(ctx context.Context, id int64) (store.MemoryJob, error) {
	return sqlmemory.GetJob(ctx, t.q, id)
}

func (t *tx) LockMemoryJob(ctx context.Context, id int64) (store.MemoryJob, error) {
	return sqlmemory.GetJob(ctx, t.q, id)
}

func (t *reader) ListMemoryJobs(ctx context.Context, userKey, state string, limit int) ([]store.MemoryJob, error) {
	return sqlmemory.ListJobs(ctx, t.q, userKey, state, limit)
}

func (t *tx) InsertMemoryJob(ctx context.Context, j store.MemoryJob) (store.MemoryJob, bool, error) {
	return sqlmemory.InsertJob(ctx, t.q, j)
}

func (t *tx) ClaimMemoryBatch(ctx context.Context, c store.MemoryBatchClaim) ([]store.MemoryJob, error) {
	return sqlmemory.ClaimBatch(ctx, t.q, c)
}

func (t *tx) LockMemoryJobs(ctx context.Context, ids []int64) ([]store.MemoryJob, error) {
	return sqlmemory.LockJobs(ctx, t.q, ids)
}

func (t *tx) UpdateMemoryJob(ctx context.Context, j store.MemoryJob) error {
	return sqlmemory.UpdateJob(ctx, t.q, j)
}

// The memory writes run on the Store in a transaction of their own: each
// takes several statements (SetMemoryVectors one per vector,
// InsertMemoryJob an insert and a read).

// PutMemoryFact implements store.Writer.
func (s *Store) PutMemoryFact(ctx context.Context, f store.MemoryFact, terms []store.MemoryTerm) (out store.MemoryFact, put bool, err error) {
	err = s.InTx(ctx, func(ctx context.Context, t store.Tx) error {
		out, put, err = t.PutMemoryFact(ctx, f, terms)
		return err
	})
	return out, put, err
}

// ForgetMemoryFacts implements store.Writer.
func (s *Store) ForgetMemoryFacts(ctx context.Context, userKey string, ids []int64, now time.Time) (out []store.MemoryFact, err error) {
	err = s.InTx(ctx, func(ctx context.Context, t store.Tx) error {
		out, err = t.ForgetMemoryFacts(ctx, userKey, ids, now)
		return err
	})
	return out, err
}

// SetMemoryVectors implements store.Writer.
func (s *Store) SetMemoryVectors(ctx context.Context, vs []store.MemoryVector) error {
	return s.InTx(ctx, func(ctx context.Context, t store.Tx) error { return t.SetMemoryVectors(ctx, vs) })
}

// InsertMemoryJob implements store.Writer.
func (s *Store) InsertMemoryJob(ctx context.Context, j store.MemoryJob) (out store.MemoryJob, inserted bool, err error) {
	err = s.InTx(ctx, func(ctx context.Context, t store.Tx) error {
		out, inserted, err = t.InsertMemoryJob(ctx, j)
		return err
	})
	return out, inserted, err
}
