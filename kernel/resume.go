package kernel

import (
	"context"
	"encoding/json"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/store"
)

// A run awaiting approval holds no lock (#30). The session lock is the one
// run that is queued or running (the runs_one_active index); a run that
// waits for a person steps out of it, so a message typed under its card
// is answered by a turn of its own at once, and any number of runs may
// wait. A decision resumes the run whose gate it decides (resumeTx): at
// once when the session is free, else flagged (gh.Run.ResumeRequested),
// and the run that holds the lock hands it on when it settles
// (SessionFreedTx). A resumed run goes on with its own turn only: the
// supervisor picks its turn out of the log by the run id on its answers.

// resumeTx resumes the waiting run runID of sessionID after a decision on
// its gate, committed in tx. It returns the run the decision resumes (0
// when it resumes none) and whether it became claimable. A run that is
// not waiting — still running (the decision came before it settled), or
// already over — is flagged or left alone.
func (k *Kernel) resumeTx(ctx context.Context, tx store.Tx, sessionID string, runID int64, now time.Time) (int64, bool, error) {
	active, busy, err := tx.LockActiveRun(ctx, sessionID)
	if err != nil {
		return 0, false, err
	}
	var run gh.Run
	if runID != 0 {
		if busy && active.ID == runID {
			if active.State == gh.RunQueued {
				return runID, false, nil // its next attempt reads the decision
			}
			// Its own attempt still runs: it settles queued again
			// (Finish) instead of waiting for a decision that came.
			active.ResumeRequested, active.Updated = true, now
			return runID, false, tx.UpdateRun(ctx, active)
		}
		if run, err = tx.LockRun(ctx, runID); gh.IsCode(err, gh.CodeNotFound) {
			return 0, false, nil
		} else if err != nil {
			return 0, false, err
		}
		if run.SessionID != sessionID || run.State != gh.RunAwaitingApproval {
			return 0, false, nil // over (cancelled, failed) or not this session's
		}
	} else {
		// A decision logged without its run (an older gate): the oldest
		// waiting run, as when one run was all a session could have.
		waiting, err := tx.LockWaitingRuns(ctx, sessionID, false)
		if err != nil || len(waiting) == 0 {
			return 0, false, err
		}
		run = waiting[0]
	}
	run.Updated = now
	if busy {
		run.ResumeRequested = true
		return run.ID, false, tx.UpdateRun(ctx, run)
	}
	queueResumed(&run, now)
	tx.Wake()
	return run.ID, true, tx.UpdateRun(ctx, run)
}

// queueResumed makes a waiting run claimable again. Waiting for a person
// is not a failed attempt: the resumed run gets its full set of attempts.
func queueResumed(r *gh.Run, now time.Time) {
	r.State, r.AvailableAt, r.Attempts, r.ResumeRequested, r.Updated = gh.RunQueued, now, 0, false, now
}

// SessionFreedTx is called in the transaction in which the session's run
// that was queued or running left that state for another than queued
// (it settled, was cancelled, closed, or failed for good) and was already
// written: the lock goes to the oldest waiting run whose decision came
// meanwhile, else, when owed (input nobody answered), to a new queued
// run. It returns the run it queued, if any. A resumed run that finds
// unanswered input leaves it for a turn of its own after it
// (Settle.Unanswered), so owed input is never stranded.
func (k *Kernel) SessionFreedTx(ctx context.Context, tx store.Tx, sessionID string, owed bool, now time.Time) (gh.Run, bool, error) {
	resumable, err := tx.LockWaitingRuns(ctx, sessionID, true)
	if err != nil {
		return gh.Run{}, false, err
	}
	if len(resumable) > 0 {
		run := resumable[0]
		queueResumed(&run, now)
		tx.Wake()
		return run, true, tx.UpdateRun(ctx, run)
	}
	if !owed {
		return gh.Run{}, false, nil
	}
	run, err := tx.InsertRun(ctx, gh.Run{SessionID: sessionID, State: gh.RunQueued, MaxAttempts: k.cfg.MaxAttempts, AvailableAt: now, Created: now, Updated: now})
	if err != nil {
		return gh.Run{}, false, err
	}
	tx.Wake()
	return run, true, nil
}

// decidedRun is the run a gate.decided payload names (0: none, an event
// from before decisions carried it).
func decidedRun(payload json.RawMessage) int64 {
	var d struct {
		RunID int64 `json:"runId"`
	}
	_ = json.Unmarshal(payload, &d)
	return d.RunID
}
