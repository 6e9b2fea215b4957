package kernel

import (
	"context"
	"sync"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/store"
)

// A database outage (a primary lost, a standby promoted) must not cost an
// attempt what it holds and has not saved: an effect's outcome, an
// answer. A fenced write that fails because the database cannot be
// reached is therefore retried, with backoff, for as long as the
// attempt's lease is still its own by the kernel's clock (the fence
// compares the same clock in SQL, so a retry past it could only be
// refused). Every fenced write is idempotent by its events' keys, and
// the fence refuses a lease another worker took over, so a retry never
// doubles anything; a write whose COMMIT was lost with the connection is
// resolved by what the retry finds under those keys (for a settle: its
// run.finished key), never by guessing.

// Outage retry bounds.
const (
	outageFirstBackoff = 50 * time.Millisecond
	outageMaxBackoff   = time.Second
)

// leaseClock remembers, per attempt, when its lease ends as last renewed
// in this process: a caller's copy of the lease is older than the
// renewal loop's, and an outage retry may go on until the newest end.
type leaseClock struct {
	mu   sync.Mutex
	ends map[leaseID]time.Time
}

type leaseID struct {
	run   int64
	epoch int64
}

// renewed records l's end after a renewal.
func (c *leaseClock) renewed(l gh.Lease) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ends == nil {
		c.ends = map[leaseID]time.Time{}
	}
	if len(c.ends) > 4096 {
		// Attempts that ended without a settle (a crash of theirs, a
		// lease lost) leave entries: drop the ones long over.
		cut := time.Now().Add(-time.Hour)
		for k, end := range c.ends {
			if end.Before(cut) {
				delete(c.ends, k)
			}
		}
	}
	id := leaseID{l.RunID, l.Epoch}
	if l.ExpiresAt.After(c.ends[id]) {
		c.ends[id] = l.ExpiresAt
	}
}

// end is when l's lease ends: its own expiry or a later renewal's.
func (c *leaseClock) end(l gh.Lease) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.ends[leaseID{l.RunID, l.Epoch}]; e.After(l.ExpiresAt) {
		return e
	}
	return l.ExpiresAt
}

// forget drops l after its attempt settled or released it.
func (c *leaseClock) forget(l gh.Lease) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.ends, leaseID{l.RunID, l.Epoch})
}

// outageTx runs fn in one transaction (inTx) and carries it through a
// database outage: an error that says the database cannot be reached
// (gh.CodeUnavailable) is retried with backoff until the lease's end or
// the end of ctx. unknown, when set, is asked after a retry is refused
// by the fence (lease lost, stale epoch) following an outage: it reads
// whether an earlier try did commit (its COMMIT's answer lost with the
// connection) and, if so, the write stands and the refusal is not an
// error.
func (k *Kernel) outageTx(ctx context.Context, l gh.Lease, fn func(ctx context.Context, tx store.Tx) error, unknown func(ctx context.Context) (bool, error)) error {
	backoff := outageFirstBackoff
	outage := false
	for {
		err := k.inTx(ctx, fn)
		switch {
		case err == nil:
			if outage {
				k.outageOver(l)
			}
			return nil
		case outage && unknown != nil && (gh.IsCode(err, gh.CodeLeaseLost) || gh.IsCode(err, gh.CodeStaleEpoch)):
			if done, rerr := unknown(ctx); rerr == nil && done {
				k.outageOver(l)
				return nil
			}
			return err
		case !gh.IsCode(err, gh.CodeUnavailable) || ctx.Err() != nil:
			return err
		}
		wait := min(backoff, time.Until(k.leases.end(l)))
		if wait <= 0 || !k.leases.end(l).After(k.now().Add(wait)) {
			return err // the lease ends first: the successor decides
		}
		if !outage {
			outage = true
			k.outageStarted(l, err)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		backoff = min(2*backoff, outageMaxBackoff)
	}
}

// outageStarted and outageOver log an attempt's outage once each, not
// once per try.
func (k *Kernel) outageStarted(l gh.Lease, err error) {
	k.cfg.Logger.Warn("database unavailable: the attempt keeps what it holds and retries its commit while its lease lasts",
		"session", l.SessionID, "run", l.RunID, "lease_ends", k.leases.end(l).Format(time.RFC3339), "err", err)
}

func (k *Kernel) outageOver(l gh.Lease) {
	k.cfg.Logger.Info("database back: the attempt's commit is saved", "session", l.SessionID, "run", l.RunID)
}
