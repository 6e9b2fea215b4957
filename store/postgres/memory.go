package postgres

import (
	"context"
	"time"

	"github.com/gatehouse/gatehouse/store"
	"github.com/gatehouse/gatehouse/store/postgres/internal/pgmemory"
)

// The memory rows' SQL lives in internal/pgmemory; these methods hand it
// the executor's or the transaction's connection, so the store interfaces
// stay implemented here.

func (t *executor) GetMemoryFact(ctx context.Context, id int64) (store.MemoryFact, error) {
	return pgmemory.GetFact(ctx, t.q, id)
}

func (t *executor) MemoryFacts(ctx context.Context, userKey, subjectPrefix string, limit int) ([]store.MemoryFact, error) {
	return pgmemory.Facts(ctx, t.q, userKey, subjectPrefix, limit)
}

func (t *executor) MemoryFactsByID(ctx context.Context, userKey string, ids []int64) ([]store.MemoryFact, error) {
	return pgmemory.FactsByID(ctx, t.q, userKey, ids)
}

func (t *executor) MemoryTermStats(ctx context.Context, userKey string, terms []string) (store.MemoryStats, error) {
	return pgmemory.TermStats(ctx, t.q, userKey, terms)
}

func (t *executor) MemoryPostings(ctx context.Context, userKey string, terms, also []string) ([]store.MemoryPosting, error) {
	return pgmemory.Postings(ctx, t.q, userKey, terms, also)
}

func (t *executor) MemoryVectors(ctx context.Context, userKey, model string) ([]store.MemoryVector, error) {
	return pgmemory.Vectors(ctx, t.q, userKey, model)
}

func (t *tx) PutMemoryFact(ctx context.Context, f store.MemoryFact, terms []store.MemoryTerm) (store.MemoryFact, bool, error) {
	return pgmemory.PutFact(ctx, t.q, f, terms)
}

func (t *tx) ForgetMemoryFacts(ctx context.Context, userKey string, ids []int64, now time.Time) ([]store.MemoryFact, error) {
	return pgmemory.ForgetFacts(ctx, t.q, userKey, ids, now)
}

func (t *executor) SetMemoryVectors(ctx context.Context, vs []store.MemoryVector) error {
	return pgmemory.SetVectors(ctx, t.q, vs)
}

func (t *executor) GetMemoryJob(ctx context.Context, id int64) (store.MemoryJob, error) {
	return pgmemory.GetJob(ctx, t.q, id, false)
}

func (t *tx) LockMemoryJob(ctx context.Context, id int64) (store.MemoryJob, error) {
	return pgmemory.GetJob(ctx, t.q, id, true)
}

func (t *executor) ListMemoryJobs(ctx context.Context, userKey, state string, limit int) ([]store.MemoryJob, error) {
	return pgmemory.ListJobs(ctx, t.q, userKey, state, limit)
}

func (t *executor) InsertMemoryJob(ctx context.Context, j store.MemoryJob) (store.MemoryJob, bool, error) {
	return pgmemory.InsertJob(ctx, t.q, j)
}

func (t *tx) ClaimMemoryBatch(ctx context.Context, c store.MemoryBatchClaim) ([]store.MemoryJob, error) {
	return pgmemory.ClaimBatch(ctx, t.q, c)
}

func (t *tx) LockMemoryJobs(ctx context.Context, ids []int64) ([]store.MemoryJob, error) {
	return pgmemory.LockJobs(ctx, t.q, ids)
}

func (t *tx) UpdateMemoryJob(ctx context.Context, j store.MemoryJob) error {
	return pgmemory.UpdateJob(ctx, t.q, j)
}

// The memory writes that take several statements which must commit
// together run on the Store in their own transaction; the rest come from
// the executor.

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
