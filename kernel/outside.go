package kernel

import (
	"context"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/store"
)

// OutsideCommitTx appends events to a session from outside its runs, in
// the caller's transaction: no lease, no run queued, and nothing counted
// as input. It is for what people decide about a run rather than in it —
// an incident's card, its outcome, the results of calls a closed turn
// left open (package incidents) — which must neither wait for the run's
// lease nor wake it. Any known kind may be written this way; a repeat of
// a key returns the event committed (the same key with another payload is
// an idempotency conflict). The caller publishes what it committed once
// the transaction commits (Publish).
func (k *Kernel) OutsideCommitTx(ctx context.Context, tx store.Tx, sessionID string, events ...gh.NewEvent) ([]Committed, error) {
	if err := validID("session id", sessionID); err != nil {
		return nil, err
	}
	out := make([]Committed, 0, len(events))
	now := k.now()
	for _, e := range events {
		class, ok := gh.ClassOf(e.Kind)
		if !ok {
			return nil, gh.Errorf(gh.CodeUnknownKind, "unknown event kind %q", e.Kind)
		}
		_, payload, err := k.validateEvent(e, class.Edge)
		if err != nil {
			return nil, err
		}
		res, err := tx.Append(ctx, store.AppendParams{SessionID: sessionID, Kind: e.Kind, Payload: payload, Key: e.Key, Now: now})
		if err != nil {
			return nil, err
		}
		if err := checkRepeat(res, payload, e.Kind); err != nil {
			return nil, err
		}
		out = append(out, Committed{Event: res.Event, Duplicate: res.Existing})
	}
	return out, nil
}
