package memory

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gatehouse/gatehouse/store"
)

// The model pass: a job per turn, queued by Remember in the same
// transaction as the rule pass's facts, so it survives a restart; the jobs
// are run in batches. A batch is the due jobs of one person in one
// session, oldest first, claimed together once Config.Batch of them wait
// (a batch holds at most Batch) or the session has been quiet for
// Config.BatchIdle, and read by one model call. A batch
// is claimed with a lease (FOR UPDATE SKIP LOCKED on Postgres): each
// attempt belongs to one claimer, and a claimer that died leaves jobs that
// are claimable again when its lease lapses.

// MaxBatch bounds Config.Batch, the turns one model call reads.
const MaxBatch = 20

// maxBatchText bounds the words a batch gives the model: a batch holds
// at least one turn, and the turns after the bound wait for the next.
const maxBatchText = maxTurnText

// Found is a fact the model pass found in one of the turns it was given.
type Found struct {
	// Turn is the index, in the turns given, of the turn whose words
	// state the fact: the fact is observed at that turn's time, sourced at
	// its seq, and checked against its words.
	Turn int
	Fact Fact
}

// Extract is the model pass over a batch: what one person said in one
// session, turn by turn, oldest first. It returns the facts the person's
// words state, each with the turn it came from. The facts' user, source
// and ObservedAt are set by RunJobs; a fact without a subject gets one
// from its kind and text. A name or contact whose value the person did not
// write in that turn is dropped, and so is a fact naming no turn of the
// batch: the pass reads the person's own words only.
//
// An error wrapping ErrBadAnswer (the model answered, but not with the
// facts in the expected form) ends the batch without a retry; any other
// error is retried.
type Extract func(ctx context.Context, turns []Turn) ([]Found, error)

// ErrBadAnswer is what an Extract wraps when the model's answer is not the
// expected JSON: asking again costs another model call for the same
// answer, so the batch is done, with the error logged once and kept as
// its jobs' LastError; the turns' rule-pass facts stand.
var ErrBadAnswer = errors.New("the model pass's answer is not the expected JSON")

// RunJobs claims ready batches one after another until none is ready,
// runs extract on each and writes what it finds, each fact observed at
// its own turn's time, so a late pass cannot overwrite what the user said
// afterwards. An attempt that fails (an error, a panic, the lease running
// out) is retried after JobBackoff × attempts, up to JobAttempts attempts
// of each job; then the job fails for good, keeping its last error. An
// answer that is not the expected JSON (ErrBadAnswer) is not retried. It
// returns how many batch attempts it ran (model calls); its error is a
// store failure or ctx ending, not an extract failure.
//
// Many callers (goroutines, replicas) may run it at once: each attempt of
// a job is claimed by exactly one of them.
func (m *Memory) RunJobs(ctx context.Context, extract Extract) (int, error) {
	return m.runJobs(ctx, extract, false)
}

// Flush is RunJobs without waiting: every due job is run now, still in
// batches of one person in one session, however few turns they hold and
// however recent. For tests, benchmarks and tools; Work uses RunJobs.
func (m *Memory) Flush(ctx context.Context, extract Extract) (int, error) {
	return m.runJobs(ctx, extract, true)
}

func (m *Memory) runJobs(ctx context.Context, extract Extract, flush bool) (int, error) {
	n := 0
	for {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		b, ok, err := m.claimBatch(ctx, flush)
		if err != nil || !ok {
			return n, err
		}
		n++
		if err := m.runBatch(ctx, b, extract); err != nil {
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

// batch is one claimed attempt: jobs of one user and session, oldest
// first, running under one owner.
type batch struct {
	owner string
	jobs  []store.MemoryJob
}

// claimBatch takes the ready batch holding the oldest due job, in one
// transaction: its jobs become running, owned by a fresh token, with a
// lease of JobLease. A job found running with its lease lapsed on its
// last attempt fails instead. With flush, every group with a due job is
// ready.
func (m *Memory) claimBatch(ctx context.Context, flush bool) (batch, bool, error) {
	var b batch
	err := m.st.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
		b = batch{}
		now := m.now()
		claim := store.MemoryBatchClaim{Now: now, MinJobs: m.cfg.Batch, IdleBefore: now.Add(-m.cfg.BatchIdle), Limit: m.cfg.Batch}
		if flush {
			claim.MinJobs, claim.IdleBefore = 1, now
		}
		for {
			js, err := tx.ClaimMemoryBatch(ctx, claim)
			if err != nil || len(js) == 0 {
				return err
			}
			owner, size := newOwner(), 0
			for _, j := range js {
				j.Updated = now
				if j.State == store.MemoryJobRunning && j.Attempts >= j.MaxAttempts {
					j.State, j.Owner = store.MemoryJobFailed, ""
					j.LastError = clip(fmt.Sprintf("attempt %d ran out of time (lease lapsed); %s", j.Attempts, j.LastError), 1000)
					if err := tx.UpdateMemoryJob(ctx, j); err != nil {
						return err
					}
					continue
				}
				if size += len(j.UserText); len(b.jobs) > 0 && size > maxBatchText {
					break // the rest wait for the next batch, untouched
				}
				j.State, j.Attempts, j.Owner, j.AvailableAt = store.MemoryJobRunning, j.Attempts+1, owner, now.Add(m.cfg.JobLease)
				if err := tx.UpdateMemoryJob(ctx, j); err != nil {
					return err
				}
				b.jobs = append(b.jobs, j)
			}
			if len(b.jobs) > 0 {
				b.owner = owner
				return nil
			}
		}
	})
	return b, err == nil && len(b.jobs) > 0, err
}

// runBatch runs one claimed attempt, one extract call over the batch's
// turns, and records its outcome in one transaction, for the jobs the
// attempt still owns.
func (m *Memory) runBatch(ctx context.Context, b batch, extract Extract) error {
	// A job queued before the answer was left out still holds it; the
	// pass is not given it.
	turns := make([]Turn, len(b.jobs))
	ids := make([]int64, len(b.jobs))
	for i, j := range b.jobs {
		turns[i] = Turn{SessionID: j.SessionID, Seq: j.Seq, At: j.At, UserText: j.UserText}
		ids[i] = j.ID
	}
	ectx, cancel := context.WithTimeout(ctx, m.cfg.JobLease)
	found, xerr := safeExtract(ectx, extract, turns)
	cancel()
	if ctx.Err() != nil {
		// Shutting down: the attempt's lease lapses and the jobs are
		// claimed again.
		return ctx.Err()
	}
	bad := errors.Is(xerr, ErrBadAnswer)
	var retried, failed int
	err := m.st.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
		retried, failed = 0, 0
		cur, err := tx.LockMemoryJobs(ctx, ids)
		if err != nil {
			return err
		}
		now := m.now()
		owned := map[int64]store.MemoryJob{}
		for _, j := range cur {
			// A job whose lease lapsed and another claimer took over is
			// theirs now.
			if j.State == store.MemoryJobRunning && j.Owner == b.owner {
				owned[j.ID] = j
			}
		}
		if xerr == nil {
			for _, fd := range found {
				if fd.Turn < 0 || fd.Turn >= len(b.jobs) {
					continue // no turn of the batch said it
				}
				job := b.jobs[fd.Turn]
				if _, ok := owned[job.ID]; !ok {
					continue
				}
				f := fd.Fact
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
		}
		for _, j := range b.jobs {
			cur, ok := owned[j.ID]
			if !ok {
				continue
			}
			cur.Owner, cur.Updated = "", now
			switch {
			case xerr == nil || bad:
				// Done: the turn's text is not kept longer than the pass
				// needs it. An answer that is not the facts is not asked
				// again; its error stays with the job.
				cur.State, cur.LastError, cur.UserText, cur.AnswerText = store.MemoryJobDone, "", "", ""
				if bad {
					cur.LastError = clip(xerr.Error(), 1000)
				}
			case cur.Attempts >= cur.MaxAttempts:
				cur.State, cur.LastError = store.MemoryJobFailed, clip(xerr.Error(), 1000)
				failed++
			default:
				cur.State, cur.LastError = store.MemoryJobQueued, clip(xerr.Error(), 1000)
				cur.AvailableAt = now.Add(time.Duration(cur.Attempts) * m.cfg.JobBackoff)
				retried++
			}
			if err := tx.UpdateMemoryJob(ctx, cur); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil && xerr != nil {
		if bad {
			m.cfg.Logger.Warn("memory: model pass answered no facts; batch dropped", "session", b.jobs[0].SessionID, "user", b.jobs[0].UserKey,
				"turns", len(b.jobs), "err", xerr)
		} else {
			m.cfg.Logger.Warn("memory: model pass failed", "session", b.jobs[0].SessionID, "user", b.jobs[0].UserKey,
				"turns", len(b.jobs), "retried", retried, "failed", failed, "err", xerr)
		}
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

func safeExtract(ctx context.Context, extract Extract, turns []Turn) (found []Found, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("model pass panicked: %v", r)
		}
	}()
	return extract(ctx, turns)
}
