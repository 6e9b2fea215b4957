package gates

import (
	"context"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/kernel"
	"github.com/gatehouse/gatehouse/store"
)

// The decision a cancel makes on the pending gates of its turn.
const (
	CancelBy     = "cancel"
	CancelReason = "the turn was cancelled"
)

// CloseRunGatesTx denies the pending gates of a session's run, in the
// transaction of a cancel (kernel.Cancel; the service registers itself
// with its kernel for it), and logs each decision there. Gates outside a
// run (an incident's card, a library card) are about the session and stay
// open: their own kind decides them. The decision events are committed
// from outside the run (nothing is queued: the run is being cancelled).
// A press racing the cancel either wins first (its decision stands, the
// cancel skips the gate) or loses to it and hears the cancel's denial.
func (s *Service) CloseRunGatesTx(ctx context.Context, tx store.Tx, sessionID string, now time.Time) ([]kernel.Committed, error) {
	pending, err := tx.ListGates(ctx, sessionID, gh.GatePending, 1000)
	if err != nil {
		return nil, err
	}
	var out []kernel.Committed
	for _, g := range pending {
		if gh.GateOutsideRun(g.Kind) {
			continue
		}
		cur, won, err := tx.DecideGate(ctx, store.GateDecision{ID: g.ID, Now: now,
			Decision: gh.Decision{State: gh.GateDenied, By: CancelBy, Surface: ExpiredSurface, Reason: CancelReason}})
		if err != nil {
			return nil, err
		}
		// A gate past its expiry is expired by the compare-and-set
		// instead: that decision is logged here too.
		if !won && cur.State != gh.GateExpired || cur.Committed {
			continue
		}
		cs, err := s.cfg.Kernel.OutsideCommitTx(ctx, tx, sessionID, gh.GateDecidedEvent(cur))
		if err != nil {
			return nil, err
		}
		if err := tx.MarkGateCommitted(ctx, cur.ID); err != nil {
			return nil, err
		}
		out = append(out, cs...)
	}
	return out, nil
}

// Retire closes g without a press, before its time — an incident's card
// whose turn moved on — as expired by the gateway, with why; the
// decision is logged by g's kind in the same transaction. A gate decided
// meanwhile (a press) is left as that press decided it: retired is false.
func (s *Service) Retire(ctx context.Context, g gh.Gate, reason string) (gh.Gate, bool, error) {
	if err := checkText("retire reason", reason, MaxReasonLen, true); err != nil {
		return gh.Gate{}, false, err
	}
	d := store.GateDecision{ID: g.ID, Now: Clock(s.cfg.Now),
		Decision: gh.Decision{State: gh.GateExpired, By: ExpiredSurface, Surface: ExpiredSurface, Reason: reason}}
	out, err := s.decideAndLog(ctx, g, d, true)
	if err != nil {
		return gh.Gate{}, false, err
	}
	retired := out.State == gh.GateExpired && out.DecidedBy == ExpiredSurface && out.Reason == reason
	if retired {
		s.markCommitted(ctx, out)
	}
	return out, retired, nil
}
