package kernel

import (
	"context"
	"encoding/json"
	"time"

	gh "github.com/gatehouse/gatehouse"
)

// Events returns up to limit committed events after seq after.
func (k *Kernel) Events(ctx context.Context, sessionID string, after int64, limit int) ([]gh.Event, error) {
	limit, err := pageOf(after, limit)
	if err != nil {
		return nil, err
	}
	evs, err := k.st.Events(ctx, sessionID, after, limit)
	if err != nil || len(evs) > 0 {
		return evs, err
	}
	// Nothing after: an unknown session is told apart from a quiet one
	// here, so a read that finds events costs no second statement.
	if _, err := k.st.GetSession(ctx, sessionID); err != nil {
		return nil, err
	}
	return evs, nil
}

// pageOf checks a page of events after a seq and returns its limit:
// at most 1000, and 1000 when not given.
func pageOf(after int64, limit int) (int, error) {
	if after < 0 {
		return 0, gh.Errorf(gh.CodeInvalid, "after must not be negative")
	}
	if limit <= 0 || limit > 1000 {
		limit = 1000
	}
	return limit, nil
}

// Load returns the session's log from its latest compaction to the end,
// read page by page, so a turn's cost does not grow with the session's age.
// With a compaction, the result starts at the compaction's firstKept seq
// (the events it kept verbatim) and includes the compaction event in its
// place; without one it starts at seq 1.
func (k *Kernel) Load(ctx context.Context, sessionID string) ([]gh.Event, error) {
	sess, err := k.st.GetSession(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	return k.loadFrom(ctx, sessionID, sess.CompactionSeq, sess.LastSeq)
}

// LoadLeased is Load for a lease's attempt: it starts at the compaction
// the claim saw (Lease.CompactionSeq), so it reads no session row — only
// the lease holder compacts, so none can have come since.
func (k *Kernel) LoadLeased(ctx context.Context, l gh.Lease) ([]gh.Event, error) {
	return k.loadFrom(ctx, l.SessionID, l.CompactionSeq, l.ReadWatermark)
}

// loadFrom reads the log from the compaction at compactionSeq (0: none);
// lastSeq only sizes the result.
func (k *Kernel) loadFrom(ctx context.Context, sessionID string, compactionSeq, lastSeq int64) ([]gh.Event, error) {
	after := int64(0)
	if compactionSeq > 0 {
		after = compactionSeq - 1
		page, err := k.st.Events(ctx, sessionID, after, 1)
		if err != nil {
			return nil, err
		}
		var c gh.Compaction
		if len(page) == 1 && json.Unmarshal(page[0].Payload, &c) == nil && c.FirstKept > 0 && c.FirstKept < compactionSeq {
			after = c.FirstKept - 1
		}
	}
	out := make([]gh.Event, 0, max(0, min(lastSeq-after, int64(k.cfg.LoadPageSize))))
	for {
		page, err := k.st.Events(ctx, sessionID, after, k.cfg.LoadPageSize)
		if err != nil {
			return nil, err
		}
		out = append(out, page...)
		if len(page) < k.cfg.LoadPageSize {
			return out, nil
		}
		after = page[len(page)-1].Seq
	}
}

// Run returns a run.
func (k *Kernel) Run(ctx context.Context, id int64) (gh.Run, error) { return k.st.GetRun(ctx, id) }

// LatestRun returns the session's newest run, if any.
func (k *Kernel) LatestRun(ctx context.Context, sessionID string) (gh.Run, bool, error) {
	return k.st.LatestRun(ctx, sessionID)
}

// WakeC returns a channel closed at the next wake-up. Take it before Claim
// and wait on it (with WaitForWork) when Claim found nothing, so a wake-up
// between the two is not missed.
func (k *Kernel) WakeC() <-chan struct{} { return k.st.WakeC() }

// WaitForWork blocks until wake is closed (a run may have become claimable,
// woken from this process or, on Postgres, any replica), poll passes, or ctx
// ends. The poll is the fallback for what nobody signals: a retry backoff
// running out, a lease expiring. It reports whether it was woken.
func (k *Kernel) WaitForWork(ctx context.Context, wake <-chan struct{}, poll time.Duration) bool {
	t := time.NewTimer(poll)
	defer t.Stop()
	select {
	case <-wake:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	return false
}

// RecordCall writes one model call to the ledger.
func (k *Kernel) RecordCall(ctx context.Context, row gh.LedgerRow) error {
	if row.Created.IsZero() {
		row.Created = k.now()
	}
	return k.st.AddLedger(ctx, row)
}

// RunCost sums the ledger of one run: every attempt and every part of
// its turn (before and after an approval).
func (k *Kernel) RunCost(ctx context.Context, runID int64) (gh.Usage, float64, error) {
	return k.st.RunCost(ctx, runID)
}

// Ledger returns a session's model calls, oldest first.
func (k *Kernel) Ledger(ctx context.Context, sessionID string, limit int) ([]gh.LedgerRow, error) {
	if limit <= 0 || limit > 10000 {
		limit = 1000
	}
	return k.st.Ledger(ctx, sessionID, limit)
}

// EventByKey returns the session's event committed under key, if any.
func (k *Kernel) EventByKey(ctx context.Context, sessionID, key string) (gh.Event, bool, error) {
	return k.st.EventByKey(ctx, sessionID, key)
}

// Usage sums the ledger since a time, by "user" or "model"; userKey, when
// set, keeps one user's calls.
func (k *Kernel) Usage(ctx context.Context, by string, since time.Time, userKey string) ([]gh.UsageRow, error) {
	if by != "user" && by != "model" {
		return nil, gh.Errorf(gh.CodeInvalid, "by must be user or model, not %q", by)
	}
	return k.st.Usage(ctx, by, since, userKey)
}
