package gates

import (
	"context"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/kernel"
	"github.com/gatehouse/gatehouse/store"
)

// Opening is a gate to open: its row and its card.
type Opening struct {
	// Gate is the row, pending; its fields are what gate.opened says
	// (gh.GateOpenedEvent).
	Gate gh.Gate
	// Card is what only the card carries: Workspace, Fields, Requesters
	// and the grant offer. Its row fields are ignored (taken from Gate).
	Card gh.GateOpened
	// Key is gate.opened's idempotency key: the same call or card opens
	// the same gate once, however often it is retried.
	Key string
}

// OpenInRun opens a gate of a run's attempt (a tool approval, a
// question): gate.opened and the gate's row commit through the attempt's
// fenced commit — staged on the attempt's view when it has one, so they
// commit with the settle that pauses the run (one transaction, no
// transaction of their own), else in a transaction of their own — and
// the registry is seeded after the commit. An attempt whose lease is
// lost commits nothing: the fence refuses it.
func (s *Service) OpenInRun(ctx context.Context, l gh.Lease, o Opening) error {
	if err := checkOpening(o); err != nil {
		return err
	}
	event := gh.GateOpenedEvent(o.Key, o.Gate, o.Card)
	insert := func(ctx context.Context, tx store.Tx) error {
		_, err := tx.InsertGate(ctx, o.Gate)
		return err
	}
	seed := func(ctx context.Context) { s.seed(ctx, o.Gate) }
	k := s.cfg.Kernel
	if v := kernel.ViewOf(ctx, l); v != nil {
		v.Stage(event, insert, seed)
		return nil
	}
	err := k.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
		if _, err := k.CommitTx(ctx, tx, l, event); err != nil {
			return err
		}
		return insert(ctx, tx)
	})
	if err != nil {
		return err
	}
	k.Notify(l.SessionID)
	seed(ctx)
	return nil
}

// OpenOutsideTx opens a gate about a session rather than in a run (an
// incident's card, a library card) in the caller's transaction:
// gate.opened committed from outside any run (kernel.OutsideCommitTx: no
// lease, nothing woken) and the gate's row. A gate whose gate.opened is
// committed already (the command delivered again, a second sweeper) opens
// nothing and returns nil. After the transaction commits, the caller
// passes what it returned to Opened.
func (s *Service) OpenOutsideTx(ctx context.Context, tx store.Tx, o Opening) ([]kernel.Committed, error) {
	if err := checkOpening(o); err != nil {
		return nil, err
	}
	// Opened before: the card stands (its expiry, taken from the clock,
	// would differ now, so the key alone cannot say it is a repeat).
	if _, found, err := tx.EventByKey(ctx, o.Gate.SessionID, o.Key); err != nil || found {
		return nil, err
	}
	cs, err := s.cfg.Kernel.OutsideCommitTx(ctx, tx, o.Gate.SessionID, gh.GateOpenedEvent(o.Key, o.Gate, o.Card))
	if err != nil || cs[0].Duplicate {
		return nil, err
	}
	if _, err := tx.InsertGate(ctx, o.Gate); err != nil {
		return nil, err
	}
	return cs, nil
}

// Opened finishes opening g outside a run after its transaction
// committed: it publishes what OpenOutsideTx committed (a stream in this
// process sends it unread) and seeds the registry. Nothing committed
// (a repeat) does nothing.
func (s *Service) Opened(ctx context.Context, g gh.Gate, committed []kernel.Committed) {
	if len(committed) == 0 {
		return
	}
	s.cfg.Kernel.Publish(g.SessionID, committed)
	s.seed(ctx, g)
}

// checkOpening refuses a gate that could not be decided: one with no id,
// session, kind or key, or one already decided.
func checkOpening(o Opening) error {
	g := o.Gate
	switch {
	case CheckID(g.ID) != nil:
		return gh.Errorf(gh.CodeInternal, "open a gate: %v", CheckID(g.ID))
	case g.SessionID == "" || g.Kind == "" || o.Key == "":
		return gh.Errorf(gh.CodeInternal, "open gate %q: session, kind and key are required", g.ID)
	case g.State != "" && g.State != gh.GatePending:
		return gh.Errorf(gh.CodeInternal, "open gate %q: a gate opens pending, not %s", g.ID, g.State)
	case g.ExpiresAt.IsZero():
		return gh.Errorf(gh.CodeInternal, "open gate %q: it needs an expiry", g.ID)
	}
	return nil
}
