package kernel

import (
	"context"
	"encoding/json"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/store"
)

// EdgeInput is an event arriving from outside a run: a person's message, a
// decision on a gate. It needs no lease.
type EdgeInput struct {
	// Tenant must match the session's tenant. Defaults to the default tenant.
	Tenant    string
	SessionID string
	Event     gh.NewEvent
}

// Committed is the result of a commit.
type Committed struct {
	Event gh.Event
	// Duplicate is true when the idempotency key was already committed with
	// the same payload: Event is that first commit and nothing was written.
	Duplicate bool
	// RunID is the session's queued or running run, or for a decision
	// the run it resumes (edge commits only; 0 on a duplicate).
	RunID int64
}

// EdgeCommit validates in, appends it and makes sure a run is queued for
// the session, in one transaction. A repeat of the idempotency key returns
// the committed event; the key with another payload is an
// idempotency-conflict error. Nothing is written on any error. A
// user.message committed while a gate of its session is pending is
// followed by a notice saying so (see NoticeCardPending).
//
// It is the commit of the edges outside the chat platforms (the /v1 API,
// the OpenAI-compatible endpoint), so it refuses a chat platform's session
// with external-session (gh.CheckEdgeSession): that chat alone writes
// it, and an edge added later is refused the same without knowing. The
// chat's own inbound commits with EdgeCommitTx, in its receive-log
// transaction, which does not ask.
func (k *Kernel) EdgeCommit(ctx context.Context, in EdgeInput) (Committed, error) {
	p, err := k.edgeParams(in)
	if err != nil {
		return Committed{}, err
	}
	if err := gh.CheckEdgeSession(in.SessionID); err != nil {
		return Committed{}, err
	}
	if in.Event.Kind == gh.KindGateDecided {
		// A decision resumes its run in its own transaction (resumeTx).
		var c Committed
		err := k.st.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
			var err error
			c, err = k.EdgeCommitTx(ctx, tx, in)
			return err
		})
		if err == nil && !c.Duplicate {
			k.publish(in.SessionID, []Committed{c})
		}
		return c, err
	}
	var res store.AppendResult
	if p.CheckGates {
		// First as anything else, in one statement (on Postgres), unless
		// a card is pending; then a message that finds one commits with
		// its notice in one transaction: the run it wakes cannot commit
		// its claim between them, so the notice follows the message at
		// once.
		alone := p
		alone.CheckGates, alone.UnlessGatePending = false, true
		res, err = k.st.Append(ctx, alone)
		if err == nil && res.GatePending {
			err = k.st.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
				var err error
				if res, err = tx.Append(ctx, p); err != nil || !res.GatePending || res.Existing {
					return err
				}
				return k.noteWaiting(ctx, tx, res.Event)
			})
		}
	} else {
		// Anything else commits in one statement (on Postgres), for speed.
		res, err = k.st.Append(ctx, p)
	}
	c, err := k.edgeResult(res, p, err)
	if err == nil && !c.Duplicate {
		if res.GatePending {
			k.Notify(in.SessionID) // the notice is not in hand: subscribers read
		} else {
			k.publish(in.SessionID, []Committed{c})
		}
	}
	return c, err
}

// EdgeCommitTx is EdgeCommit inside a caller's transaction, so that other
// rows (a receive-log entry, a gate decision) commit with the event. It is
// the platform path: a chat's inbound (package gateway) writes its own
// session here, and a gate's decision, from any surface, is committed here
// too, so unlike EdgeCommit it does not refuse a chat platform's session.
func (k *Kernel) EdgeCommitTx(ctx context.Context, tx store.Tx, in EdgeInput) (Committed, error) {
	p, err := k.edgeParams(in)
	if err != nil {
		return Committed{}, err
	}
	res, err := tx.Append(ctx, p)
	c, err := k.edgeResult(res, p, err)
	if err == nil && !c.Duplicate && in.Event.Kind == gh.KindGateDecided {
		// The decision resumes the run its gate waits in, not whichever
		// run holds the session (see resume.go).
		if c.RunID, _, err = k.resumeTx(ctx, tx, in.SessionID, decidedRun(c.Event.Payload), p.Now); err != nil {
			return Committed{}, err
		}
	}
	if err == nil && !c.Duplicate && res.GatePending {
		// In the input's transaction: a redelivery, a duplicate, adds
		// no second notice.
		if err := k.noteWaiting(ctx, tx, c.Event); err != nil {
			return Committed{}, err
		}
	}
	return c, err
}

func (k *Kernel) edgeParams(in EdgeInput) (store.AppendParams, error) {
	if in.Tenant == "" {
		in.Tenant = gh.DefaultTenant
	}
	if err := validID("session id", in.SessionID); err != nil {
		return store.AppendParams{}, err
	}
	class, payload, err := k.validateEvent(in.Event, true)
	if err != nil {
		return store.AppendParams{}, err
	}
	return store.AppendParams{
		SessionID: in.SessionID, Tenant: in.Tenant, Kind: in.Event.Kind, Payload: payload, Key: in.Event.Key,
		Now: k.now(), Input: class.Input, MaxAttempts: k.cfg.MaxAttempts,
		// Input is answered by the session's queued or running run, or
		// a new one; a decision resumes its own run instead (resumeTx).
		QueueRun: in.Event.Kind != gh.KindGateDecided,
		// A person's message while a card waits is told so (noteWaiting).
		CheckGates: in.Event.Kind == gh.KindUserMessage,
	}, nil
}

func (k *Kernel) edgeResult(res store.AppendResult, p store.AppendParams, err error) (Committed, error) {
	if err != nil {
		return Committed{}, err
	}
	if err := checkRepeat(res, p.Payload, p.Kind); err != nil {
		return Committed{}, err
	}
	return Committed{Event: res.Event, Duplicate: res.Existing, RunID: res.RunID}, nil
}

// Commit appends events under a lease, in one transaction that first
// checks the lease: a superseded lease gets stale-epoch, an expired or
// settled one lease-lost, and nothing is written. Events whose key was
// already committed with the same payload come back as they were
// committed (a retried attempt re-deriving the same generationId).
func (k *Kernel) Commit(ctx context.Context, l gh.Lease, events ...gh.NewEvent) ([]Committed, error) {
	return k.CommitWithCalls(ctx, l, nil, events...)
}

// CommitWithCalls is Commit that also writes ledger rows of the model calls
// behind the events, in the same transaction: an answer and the cost of
// producing it land together, and a turn costs no extra commit for them.
func (k *Kernel) CommitWithCalls(ctx context.Context, l gh.Lease, calls []gh.LedgerRow, events ...gh.NewEvent) ([]Committed, error) {
	var out []Committed
	// Through an outage while the lease lasts: the events' keys make a
	// retry of a commit that did land return what it committed.
	err := k.outageTx(ctx, l, func(ctx context.Context, tx store.Tx) error {
		var err error
		if out, err = k.CommitTx(ctx, tx, l, events...); err != nil {
			return err
		}
		return k.addCalls(ctx, tx, calls)
	}, nil)
	if err == nil {
		k.publish(l.SessionID, out)
	}
	return out, err
}

// CommitTx is Commit inside a caller's transaction (an effect receipt and a
// tool result commit together).
func (k *Kernel) CommitTx(ctx context.Context, tx store.Tx, l gh.Lease, events ...gh.NewEvent) ([]Committed, error) {
	checked := make([]leasedWrite, 0, len(events))
	for _, e := range events {
		_, payload, err := k.validateEvent(e, false)
		if err != nil {
			return nil, err
		}
		checked = append(checked, leasedWrite{e, payload})
	}
	// What the attempt staged commits first, in this transaction, with
	// these events in one batch.
	return k.flush(ctx, tx, l, k.now(), checked)
}

// leasedWrite is one validated event of a leased commit.
type leasedWrite struct {
	e       gh.NewEvent
	payload json.RawMessage
}

// appendLeased appends validated events under the lease, in order, in one
// batch (one round trip on Postgres); a repeat of a key must carry the
// same payload. The attempt's view, when the transaction notes for one,
// learns the events once they commit.
func (k *Kernel) appendLeased(ctx context.Context, tx store.Tx, l gh.Lease, ws []leasedWrite, now time.Time) ([]Committed, error) {
	if len(ws) == 0 {
		return nil, nil
	}
	fence := &store.Fence{RunID: l.RunID, Epoch: l.Epoch, Owner: l.Owner}
	ps := make([]store.AppendParams, len(ws))
	for i, w := range ws {
		ps[i] = store.AppendParams{SessionID: l.SessionID, Kind: w.e.Kind, Payload: w.payload, Key: w.e.Key, Now: now, Fence: fence}
	}
	results, err := tx.AppendAll(ctx, ps)
	if err != nil {
		return nil, err
	}
	note := noteFrom(ctx)
	out := make([]Committed, len(ws))
	for i, res := range results {
		if res.Fenced {
			// Nothing appended: the full fence says why. A lease that no
			// longer holds is the error; one that holds leaves a taken
			// key (or an unknown session), which the plain append
			// reports.
			if _, _, err := k.fence(ctx, tx, l, now); err != nil {
				return nil, err
			}
			p := ps[i]
			p.Fence = nil
			if res, err = tx.Append(ctx, p); err != nil {
				return nil, err
			}
		}
		if err := checkRepeat(res, ws[i].payload, ws[i].e.Kind); err != nil {
			return nil, err
		}
		if note != nil && note.view != nil {
			note.events = append(note.events, res.Event)
		}
		out[i] = Committed{Event: res.Event, Duplicate: res.Existing}
	}
	return out, nil
}

func (k *Kernel) addCalls(ctx context.Context, tx store.Tx, calls []gh.LedgerRow) error {
	now := k.now()
	for _, c := range calls {
		if c.Created.IsZero() {
			c.Created = now
		}
		if err := tx.AddLedger(ctx, c); err != nil {
			return err
		}
	}
	return nil
}
