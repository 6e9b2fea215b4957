package kernel

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/store"
)

// RunStartedKey is the idempotency key of the run.started of the claim
// that raised the session's epoch to epoch.
func RunStartedKey(epoch int64) string { return runStartedPrefix + strconv.FormatInt(epoch, 10) }

const runStartedPrefix = "runstart:"

// fence locks the lease's run and checks that the lease still owns it. It
// runs in the same transaction as the write it guards, so a takeover
// cannot slip between the check and the write.
func (k *Kernel) fence(ctx context.Context, tx store.Tx, l gh.Lease, now time.Time) (gh.Session, gh.Run, error) {
	// Session first, then run (the order every writer of a session uses),
	// in one statement.
	sess, run, err := tx.LockSessionRun(ctx, l.SessionID, l.RunID)
	if gh.IsCode(err, gh.CodeUnknownSession) {
		return gh.Session{}, gh.Run{}, gh.Errorf(gh.CodeLeaseLost, "lease %s: session %q does not exist", l.Token(), l.SessionID)
	}
	if gh.IsCode(err, gh.CodeNotFound) {
		return gh.Session{}, gh.Run{}, gh.Errorf(gh.CodeLeaseLost, "lease %s: run %d does not exist", l.Token(), l.RunID)
	}
	if err != nil {
		return gh.Session{}, gh.Run{}, err
	}
	if run.SessionID != l.SessionID {
		return gh.Session{}, gh.Run{}, gh.Errorf(gh.CodeLeaseLost, "lease %s: run %d is not a run of session %q", l.Token(), l.RunID, l.SessionID)
	}
	if run.Epoch != l.Epoch || run.Owner != l.Owner {
		return gh.Session{}, gh.Run{}, gh.Errorf(gh.CodeStaleEpoch, "lease %s is stale: run %d is held by %s@%d", l.Token(), run.ID, run.Owner, run.Epoch)
	}
	if run.State != gh.RunRunning {
		return gh.Session{}, gh.Run{}, gh.Errorf(gh.CodeLeaseLost, "lease %s lost: run %d is %s", l.Token(), run.ID, run.State)
	}
	if !run.LeaseExpiresAt.After(now) {
		return gh.Session{}, gh.Run{}, gh.Errorf(gh.CodeLeaseLost, "lease %s lost: it expired at %s", l.Token(), run.LeaseExpiresAt.Format(time.RFC3339Nano))
	}
	return sess, run, nil
}

// maxClaimSkips bounds how many exhausted runs one Claim fails on its way to
// a claimable one.
const maxClaimSkips = 16

// Claim hands the oldest claimable run to owner: a queued run whose time has
// come, or a running one whose lease expired (a takeover, which counts as
// a failed attempt of the previous owner). It returns false when there is
// nothing to claim. The lease's epoch is the session's, raised by every
// claim, so a newer lease always has the higher epoch. The claim commits
// the attempt's run.started.
func (k *Kernel) Claim(ctx context.Context, owner string) (gh.Lease, bool, error) {
	return k.ClaimAfter(ctx, owner, false)
}

// ClaimAfter is Claim; woken says a wake-up signalled work just now (a run
// became claimable), so the claim goes straight to its write (Store.ClaimStart).
// Otherwise — an idle worker polling, or one looking for more after a
// claim — it asks the read side first, so waiting costs no write
// transaction (on SQLite, no turn at the single writer).
func (k *Kernel) ClaimAfter(ctx context.Context, owner string, woken bool) (gh.Lease, bool, error) {
	if err := validID("owner", owner); err != nil {
		return gh.Lease{}, false, err
	}
	if !woken {
		if any, err := k.st.HasClaimable(ctx, k.now()); err != nil || !any {
			return gh.Lease{}, false, err
		}
	}
	for range maxClaimSkips {
		now := k.now()
		// One step (on Postgres one statement): the candidate, its new
		// epoch, its run.started — where the attempt begins, keyed by
		// that epoch, so one per claim — and the read watermark at it:
		// the attempt reads up to there before it calls a model.
		c, err := k.st.ClaimStart(ctx, store.ClaimStartParams{Now: now, Owner: owner, LeaseExpiresAt: now.Add(k.cfg.LeaseTTL), KeyPrefix: runStartedPrefix})
		if err != nil || !c.Found {
			return gh.Lease{}, false, err
		}
		if c.Exhausted {
			if err := k.endExhausted(ctx, c.Run.SessionID, c.Run.ID); err != nil {
				return gh.Lease{}, false, err
			}
			continue
		}
		run, sess := c.Run, c.Session
		lease := gh.Lease{
			More:  c.More,
			RunID: run.ID, SessionID: run.SessionID, Owner: owner, Epoch: run.Epoch, ExpiresAt: run.LeaseExpiresAt,
			PendingInput: sess.LastInputSeq > sess.ReadWatermark, PrevReadWatermark: sess.ReadWatermark, ReadWatermark: c.Started.Seq,
			CompactionSeq: sess.CompactionSeq,
			TookOver:      c.TookOver, Attempt: run.Attempts, CancelRequested: run.CancelRequested,
		}
		k.publish(lease.SessionID, []Committed{{Event: c.Started}}) // its run.started
		return lease, true, nil
	}
	return gh.Lease{}, false, nil
}

// endExhausted ends a run a claim found taken over with no attempts
// left, if it still is so once locked (another claimer may have ended it).
func (k *Kernel) endExhausted(ctx context.Context, sessionID string, runID int64) error {
	var ended []Committed
	err := k.st.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
		ended = nil
		now := k.now()
		_, run, err := tx.LockSessionRun(ctx, sessionID, runID)
		if err != nil {
			return err
		}
		if run.State != gh.RunRunning || run.LeaseExpiresAt.After(now) || run.Attempts < run.MaxAttempts {
			return nil
		}
		ended, err = k.failExhausted(ctx, tx, run, now)
		return err
	})
	if err == nil && len(ended) > 0 {
		k.publish(sessionID, ended)
	}
	return err
}

// failExhausted ends a run whose every attempt died with its worker. The
// log says so (a failed run.finished the user sees), and input nobody read
// gets a run of its own.
func (k *Kernel) failExhausted(ctx context.Context, tx store.Tx, run gh.Run, now time.Time) ([]Committed, error) {
	sess, err := tx.LockSession(ctx, run.SessionID)
	if err != nil {
		return nil, err
	}
	run.State = gh.RunFailed
	run.Reason = fmt.Sprintf("attempt %d of %d lost its lease (the worker died or hung); no attempts left", run.Attempts, run.MaxAttempts)
	run.LeaseExpiresAt, run.Updated = time.Time{}, now
	if err := tx.UpdateRun(ctx, run); err != nil {
		return nil, err
	}
	payload, _ := json.Marshal(gh.RunFinished{RunID: run.ID, Attempt: run.Attempts, Status: "failed", Error: run.Reason, StopReason: gh.StopError})
	res, err := tx.Append(ctx, store.AppendParams{SessionID: run.SessionID, Kind: gh.KindRunFinished, Payload: payload,
		Key: fmt.Sprintf("run%d-exhausted", run.ID), Now: now})
	if err != nil {
		return nil, err
	}
	if _, _, err := k.SessionFreedTx(ctx, tx, run.SessionID, sess.LastInputSeq > max(sess.ReadWatermark, run.ReadWatermark), now); err != nil {
		return nil, err
	}
	// Published once the caller's transaction commits.
	return []Committed{{Event: res.Event, Duplicate: res.Existing}}, nil
}

// Renew extends the lease by the TTL. A lease that was superseded or lost
// gets stale-epoch or lease-lost: the caller must cancel its attempt at
// once. The returned lease reports whether a cancel was requested.
func (k *Kernel) Renew(ctx context.Context, l gh.Lease) (gh.Lease, error) {
	return k.RenewStep(ctx, l, Step{})
}

// Step is what an attempt is doing, and since when (gh.Run.Step).
type Step struct {
	Name    string
	Started time.Time
}

// RenewStep is Renew that also records the attempt's current step, in
// the renewal's own write (no commit of its own): a step that does not
// change across renewals is a turn that makes no progress. A zero step
// leaves the recorded one as it is.
func (k *Kernel) RenewStep(ctx context.Context, l gh.Lease, step Step) (gh.Lease, error) {
	err := k.st.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
		now := k.now()
		_, run, err := k.fence(ctx, tx, l, now)
		if err != nil {
			return err
		}
		if step.Name != "" {
			run.Step, run.StepStarted = step.Name, step.Started.UTC().Truncate(time.Microsecond)
		}
		run.LeaseExpiresAt, run.Updated = now.Add(k.cfg.LeaseTTL), now
		if err := tx.UpdateRun(ctx, run); err != nil {
			return err
		}
		l.ExpiresAt, l.CancelRequested = run.LeaseExpiresAt, run.CancelRequested
		return nil
	})
	if err == nil {
		k.leases.renewed(l)
	}
	return l, err
}

// RecordRead durably records that the attempt loaded the log up to seq,
// before it shows anything to a model: whatever happens next, a successor
// knows which input this attempt never saw.
func (k *Kernel) RecordRead(ctx context.Context, l gh.Lease, seq int64) error {
	// Through an outage while the lease lasts: a watermark only rises.
	return k.outageTx(ctx, l, func(ctx context.Context, tx store.Tx) error {
		now := k.now()
		_, run, err := k.fence(ctx, tx, l, now)
		if err != nil {
			return err
		}
		if seq > run.ReadWatermark {
			run.ReadWatermark, run.Updated = seq, now
			if err := tx.UpdateRun(ctx, run); err != nil {
				return err
			}
		}
		return tx.SetReadWatermark(ctx, l.SessionID, seq, now)
	}, nil)
}

// Settle is how an attempt ends.
type Settle struct {
	Outcome gh.Outcome
	// Reason is kept on the run (why it failed, was cancelled, waits).
	Reason string
	// ReadWatermark is the highest seq the attempt read; 0 keeps the one
	// recorded at the claim or with RecordRead.
	ReadWatermark int64
	// Events are committed with the settle, in its transaction (the
	// attempt's run.finished account).
	Events []gh.NewEvent
	// Calls are ledger rows written with the settle.
	Calls []gh.LedgerRow
	// NoRetry makes a failure terminal at once: retrying cannot help (no
	// model configured, a key refused).
	NoRetry bool
	// Execution is what the attempt resolved and ran with (provider,
	// model, selection…), kept on the run for audit; nil keeps the run's.
	Execution *gh.Execution
	// View is the attempt's view (LoadView): what it staged commits with
	// the settle. Nil: nothing staged.
	View *View
	// OnDone, when set, writes in the settle's transaction when the run
	// ends done (what the answered turn leaves for memory). Its error
	// fails the settle and nothing is written.
	OnDone func(ctx context.Context, tx store.Tx) error
	// Unanswered says the attempt read input it left for a turn of its
	// own: a turn resumed after a decision answers what it was asked,
	// and a message that arrived meanwhile is answered next. A settle
	// that leaves the session lock (done, cancelled, failed for good,
	// awaiting approval) then queues the session again, as it does for
	// input above the watermark.
	Unanswered bool
}

// Settled reports what Finish did.
type Settled struct {
	// State is the run's state after settling.
	State gh.RunState
	// Requeued is true when the session has a queued run again: input
	// arrived above the watermark, or a failed attempt will be retried.
	Requeued bool
	// RunID is the session's queued run when Requeued.
	RunID int64
}

// Finish settles the lease's run. Input above the read watermark re-queues
// the session, so a message that arrived mid-run is answered rather than
// stranded; so does input the attempt left unanswered (Settle.Unanswered).
// A failed attempt is retried (after a backoff) until MaxAttempts, then
// the run fails with the reason kept. A cancel, asked for or reported,
// settles terminally without re-queuing.
func (k *Kernel) Finish(ctx context.Context, l gh.Lease, s Settle) (Settled, error) {
	switch s.Outcome {
	case gh.OutcomeDone, gh.OutcomeFailed, gh.OutcomeCancelled, gh.OutcomeAwaitingApproval:
	default:
		return Settled{}, gh.Errorf(gh.CodeInvalid, "unknown outcome %q", s.Outcome)
	}
	var out Settled
	var committed []Committed
	if s.View != nil {
		// What the attempt staged commits with its settle.
		ctx = WithView(ctx, s.View)
	}
	// Through an outage while the lease lasts (the answer it carries is
	// saved on the new primary); a retry the fence refuses after a lost
	// COMMIT is resolved by the settle's first key: found, the settle
	// landed.
	var landed func(ctx context.Context) (bool, error)
	if len(s.Events) > 0 && s.Events[0].Key != "" {
		landed = func(ctx context.Context) (bool, error) {
			var err error
			out, err = k.settledBefore(ctx, l, s.Events[0].Key)
			return out.State != "", err
		}
	}
	err := k.outageTx(ctx, l, func(ctx context.Context, tx store.Tx) error {
		out, committed = Settled{}, nil
		now := k.now()
		if len(s.Events) > 0 {
			var err error
			if committed, err = k.CommitTx(ctx, tx, l, s.Events...); err != nil {
				return err
			}
		}
		if _, err := k.flush(ctx, tx, l, now, nil); err != nil {
			return err
		}
		if err := k.addCalls(ctx, tx, s.Calls); err != nil {
			return err
		}
		sess, run, err := k.fence(ctx, tx, l, now)
		if err != nil {
			return err
		}
		wm := max(sess.ReadWatermark, run.ReadWatermark, s.ReadWatermark)
		if wm > sess.ReadWatermark {
			if err := tx.SetReadWatermark(ctx, l.SessionID, wm, now); err != nil {
				return err
			}
		}
		unread := sess.LastInputSeq > wm
		owed := unread || s.Unanswered
		run.ReadWatermark = max(run.ReadWatermark, wm)
		run.LeaseExpiresAt, run.Updated = time.Time{}, now
		if s.Reason != "" {
			run.Reason = s.Reason
		}
		if s.Execution != nil {
			run.Execution = s.Execution
		}
		// freed: the run leaves the session lock for a state other than
		// queued, and the lock goes on (SessionFreedTx).
		freed := false
		outcome := s.Outcome
		if run.CancelRequested {
			outcome = gh.OutcomeCancelled
		}
		switch outcome {
		case gh.OutcomeCancelled:
			// The cancelled turn ends; input that arrived and nobody read
			// (a message typed after pressing stop) still gets its turn.
			run.State, freed = gh.RunCancelled, true
		case gh.OutcomeDone:
			run.State, freed = gh.RunDone, true
		case gh.OutcomeAwaitingApproval:
			if run.ResumeRequested {
				// A decision came while the attempt ran: it goes on.
				queueResumed(&run, now)
			} else {
				// Waiting for a person holds no lock: input it left,
				// or that arrived meanwhile, gets a turn of its own now.
				run.Attempts = 0
				run.State, freed = gh.RunAwaitingApproval, true
			}
		case gh.OutcomeFailed:
			if run.Attempts < run.MaxAttempts && !s.NoRetry {
				run.State = gh.RunQueued
				run.AvailableAt = now.Add(time.Duration(run.Attempts) * k.cfg.RetryBackoff)
			} else {
				run.State, freed = gh.RunFailed, true
			}
		}
		// Sent with the commit, unless the lock goes on in this
		// transaction: only one run of a session may be queued or
		// running, so this one must have left first.
		update := tx.UpdateRunAtCommit
		if freed {
			update = tx.UpdateRun
		}
		if err := update(ctx, run); err != nil {
			return err
		}
		if run.State == gh.RunDone && s.OnDone != nil {
			if err := s.OnDone(ctx, tx); err != nil {
				return err
			}
		}
		out.State = run.State
		if run.State == gh.RunQueued {
			out.Requeued, out.RunID = true, run.ID
			tx.Wake()
		}
		if freed {
			next, ok, err := k.SessionFreedTx(ctx, tx, l.SessionID, owed, now)
			if err != nil {
				return err
			}
			if ok {
				out.Requeued, out.RunID = true, next.ID
			}
		}
		return nil
	}, landed)
	if err == nil {
		k.leases.forget(l)
		// The run's state changed: a client waiting for the end of the
		// turn hears it, with the settle's events (run.finished). A
		// settle found landed after an outage has none in hand: its
		// subscribers read.
		if committed != nil {
			k.publish(l.SessionID, committed)
		} else {
			k.Notify(l.SessionID)
		}
	}
	return out, err
}

// settledBefore reports how l's run settled when the settle keyed key is
// in the log (a COMMIT whose answer an outage lost), or the zero Settled
// when it is not.
func (k *Kernel) settledBefore(ctx context.Context, l gh.Lease, key string) (Settled, error) {
	if _, ok, err := k.st.EventByKey(ctx, l.SessionID, key); err != nil || !ok {
		return Settled{}, err
	}
	run, err := k.st.GetRun(ctx, l.RunID)
	if err != nil {
		return Settled{}, err
	}
	out := Settled{State: run.State}
	if latest, ok, err := k.st.LatestRun(ctx, l.SessionID); err == nil && ok && latest.State == gh.RunQueued {
		out.Requeued, out.RunID = true, latest.ID
	}
	return out, nil
}

// Release gives a claimed run back without counting the attempt: the
// worker is shutting down and has committed what it could. The run is
// claimable again at once, by any replica.
func (k *Kernel) Release(ctx context.Context, l gh.Lease) error {
	err := k.st.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
		now := k.now()
		_, run, err := k.fence(ctx, tx, l, now)
		if err != nil {
			return err
		}
		run.State, run.AvailableAt, run.LeaseExpiresAt, run.Updated = gh.RunQueued, now, time.Time{}, now
		run.Attempts = max(run.Attempts-1, 0)
		tx.Wake()
		return tx.UpdateRun(ctx, run)
	})
	return err
}

// Cancel asks the session's runs to stop: the one queued or running and
// every one awaiting approval. A queued or waiting run is cancelled at
// once; a running one is flagged, its worker learns it at the next
// renewal and settles it as cancelled. Approval cards of the session
// still pending are closed (denied by "cancel"): a press afterwards
// cannot run a cancelled turn's effect. The run returned is the one that
// held the session, else the newest waiting one.
func (k *Kernel) Cancel(ctx context.Context, sessionID, reason string) (gh.Run, error) {
	var out gh.Run
	var closed []Committed
	err := k.st.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
		closed = nil
		if _, err := tx.LockSession(ctx, sessionID); err != nil {
			return err
		}
		run, ok, err := tx.LockActiveRun(ctx, sessionID)
		if err != nil {
			return err
		}
		waiting, err := tx.LockWaitingRuns(ctx, sessionID, false)
		if err != nil {
			return err
		}
		runs := waiting
		if ok {
			runs = append(runs, run)
		}
		if len(runs) == 0 {
			return gh.Errorf(gh.CodeConflict, "session %q has no active run to cancel", sessionID)
		}
		now := k.now()
		if reason == "" {
			reason = "cancelled"
		}
		for _, r := range runs {
			r.Reason, r.Updated, r.ResumeRequested = reason, now, false
			if r.State == gh.RunRunning {
				r.CancelRequested = true
			} else {
				r.State = gh.RunCancelled
			}
			out = r
			if err := tx.UpdateRun(ctx, r); err != nil {
				return err
			}
		}
		closed, err = k.closeGates(ctx, tx, sessionID, now)
		return err
	})
	if err == nil {
		// The gates' decisions travel with the signal (and are counted
		// by the observer); a cancel that closed none only signals.
		if len(closed) > 0 {
			k.publish(sessionID, closed)
		} else {
			k.Notify(sessionID)
		}
	}
	return out, err
}

// GateCloser denies a session's pending in-run gates in the transaction
// of a cancel and logs each decision (package gates: its service
// registers itself with the kernel it is built on, UseGateCloser). The
// kernel owns no gate: it only asks, so a cancel and a press meet in the
// one compare-and-set.
type GateCloser interface {
	CloseRunGatesTx(ctx context.Context, tx store.Tx, sessionID string, now time.Time) ([]Committed, error)
}

// UseGateCloser makes c close the gates of every cancelled turn. The
// gates service calls it when it is built on this kernel.
func (k *Kernel) UseGateCloser(c GateCloser) {
	k.gmu.Lock()
	defer k.gmu.Unlock()
	k.gates = c
}

// closeGates has the session's pending gates closed on behalf of a
// cancel. A kernel with no closer refuses a cancel that would leave a
// pending gate open (its effect could still be approved); with none
// pending there is nothing to close.
func (k *Kernel) closeGates(ctx context.Context, tx store.Tx, sessionID string, now time.Time) ([]Committed, error) {
	k.gmu.RLock()
	c := k.gates
	k.gmu.RUnlock()
	if c != nil {
		return c.CloseRunGatesTx(ctx, tx, sessionID, now)
	}
	pending, err := tx.ListGates(ctx, sessionID, gh.GatePending, 1000)
	if err != nil {
		return nil, err
	}
	for _, g := range pending {
		if !gh.GateOutsideRun(g.Kind) {
			return nil, gh.Errorf(gh.CodeInternal, "cancel: gate %q is pending and no gates service is there to close it", g.ID)
		}
	}
	return nil, nil
}
