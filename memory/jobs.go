package memory

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/gatehouse/gatehouse/store"
)

// The model pass: a job per turn, queued by Remember in the same
// transaction as the rule pass's facts, so it survives a restart. Jobs are
// claimed with a lease (FOR UPDATE SKIP LOCKED on Postgres): each attempt
// belongs to one claimer, and a claimer that died leaves a job that is
// claimable again when its lease lapses.

// Extract is the model pass over one turn: it returns the facts the
// person's words state. The facts' user, source and ObservedAt are set by
// RunJobs; a fact without a subject gets one from its kind and text. A
// name or contact whose value the person did not write is dropped: the
// pass reads the person's own words only.
type Extract func(ctx context.Context, turn Turn) ([]Fact, error)

// RunJobs claims due model-pass jobs one after another until none is due,
// runs extract on each and writes what it finds, observed at the turn's
// time, so a late pass cannot overwrite what the user said afterwards. An
// attempt that fails (an error, a panic, the lease running out) is retried
// after JobBackoff × attempts, up to JobAttempts attempts; then the job
// fails for good, keeping its last error. It returns how many attempts it
// ran; its error is a store failure or ctx ending, not an extract failure.
//
// Many callers (goroutines, replicas) may run it at once: each attempt of a
// job is claimed by exactly one of them.
func (m *Memory) RunJobs(ctx context.Context, extract Extract) (int, error) {
	n := 0
	for {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		job, ok, err := m.claimJob(ctx)
		if err != nil || !ok {
			return n, err
		}
		n++
		if err := m.runJob(ctx, job, extract); err != nil {
			return n, err
		}
	}
}

// Work runs RunJobs every JobPoll until ctx ends, logging failures. It
// returns nil when ctx ends.
func (m *Memory) Work(ctx context.Context, extract Extract) error {
	t := time.NewTicker(m.cfg.JobPoll)
	defer t.Stop()
	for {
		if _, err := m.RunJobs(ctx, extract); err != nil && ctx.Err() == nil {
			m.cfg.Logger.Warn("memory: model-pass jobs", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func newOwner() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "memory-" + hex.EncodeToString(b[:])
}

// claimJob takes the oldest due job: it becomes running, owned by a fresh
// token, with a lease of JobLease. A running job found with its lease lapsed
// on its last attempt fails instead.
func (m *Memory) claimJob(ctx context.Context) (store.MemoryJob, bool, error) {
	var claimed store.MemoryJob
	var ok bool
	err := m.st.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
		ok = false
		now := m.now()
		for {
			j, found, err := tx.ClaimMemoryJob(ctx, now)
			if err != nil || !found {
				return err
			}
			j.Updated = now
			if j.State == store.MemoryJobRunning && j.Attempts >= j.MaxAttempts {
				j.State, j.Owner = store.MemoryJobFailed, ""
				j.LastError = clip(fmt.Sprintf("attempt %d ran out of time (lease lapsed); %s", j.Attempts, j.LastError), 1000)
				if err := tx.UpdateMemoryJob(ctx, j); err != nil {
					return err
				}
				continue
			}
			j.State, j.Attempts, j.Owner, j.AvailableAt = store.MemoryJobRunning, j.Attempts+1, newOwner(), now.Add(m.cfg.JobLease)
			if err := tx.UpdateMemoryJob(ctx, j); err != nil {
				return err
			}
			claimed, ok = j, true
			return nil
		}
	})
	return claimed, ok, err
}

// runJob runs one claimed attempt and records its outcome, if the attempt
// still owns the job.
func (m *Memory) runJob(ctx context.Context, job store.MemoryJob, extract Extract) error {
	// A job queued before the answer was left out still holds it; the
	// pass is not given it.
	turn := Turn{SessionID: job.SessionID, Seq: job.Seq, At: job.At, UserText: job.UserText}
	ectx, cancel := context.WithTimeout(ctx, m.cfg.JobLease)
	facts, xerr := safeExtract(ectx, extract, turn)
	cancel()
	if ctx.Err() != nil {
		// Shutting down: the attempt's lease lapses and the job is claimed
		// again.
		return ctx.Err()
	}
	err := m.st.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
		cur, err := tx.LockMemoryJob(ctx, job.ID)
		if err != nil {
			return err
		}
		if cur.State != store.MemoryJobRunning || cur.Owner != job.Owner {
			return nil // the lease lapsed and another claimer took over
		}
		now := m.now()
		cur.Owner, cur.Updated = "", now
		if xerr != nil {
			cur.LastError = clip(xerr.Error(), 1000)
			if cur.Attempts >= cur.MaxAttempts {
				cur.State = store.MemoryJobFailed
			} else {
				cur.State, cur.AvailableAt = store.MemoryJobQueued, now.Add(time.Duration(cur.Attempts)*m.cfg.JobBackoff)
			}
			return tx.UpdateMemoryJob(ctx, cur)
		}
		for _, f := range facts {
			f.SourceSessionID, f.SourceSeq, f.ObservedAt = job.SessionID, job.Seq, job.At
			f, ok := normalize(job.UserKey, f)
			if !ok || !stated(f, job.UserText) {
				continue
			}
			f.Created = now
			if _, _, err := tx.PutMemoryFact(ctx, f, indexTerms(f)); err != nil {
				return err
			}
		}
		// Done: the turn's text is not kept longer than the pass needs it.
		cur.State, cur.LastError, cur.UserText, cur.AnswerText = store.MemoryJobDone, "", "", ""
		return tx.UpdateMemoryJob(ctx, cur)
	})
	if err == nil && xerr != nil {
		m.cfg.Logger.Warn("memory: model pass failed", "job", job.ID, "attempt", job.Attempts, "err", xerr)
	}
	return err
}

// stated reports whether the person's own words hold a name's or a
// contact's value (case aside): the model pass may word a fact, not
// supply its name or address from elsewhere.
func stated(f Fact, said string) bool {
	switch f.Kind {
	case KindName, KindContact:
		return f.Value == "" || strings.Contains(strings.ToLower(said), strings.ToLower(f.Value))
	}
	return true
}

func safeExtract(ctx context.Context, extract Extract, turn Turn) (facts []Fact, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("model pass panicked: %v", r)
		}
	}()
	return extract(ctx, turn)
}
