package kernel

import (
	"context"
	"encoding/json"

	gh "github.com/gatehouse/gatehouse"
)

// GateOpened returns the gate.opened event g was opened by, as committed
// (its card fields included), or ok false when the log has none (a gate
// row without its event). A gate row keeps the arguments but not the
// card: surfaces that start from the row read the card here.
func (k *Kernel) GateOpened(ctx context.Context, g gh.Gate) (o gh.GateOpened, ok bool, err error) {
	return gateOpenedIn(ctx, k.st, g)
}

// gateOpenedIn is GateOpened read through r (the store, or a transaction).
func gateOpenedIn(ctx context.Context, r interface {
	EventByKey(ctx context.Context, sessionID, key string) (gh.Event, bool, error)
}, g gh.Gate) (o gh.GateOpened, ok bool, err error) {
	// A call's gates are numbered from 1 (a clarifying question can come
	// before the approval); the row does not say which one g is.
	for n := 1; ; n++ {
		ev, found, err := r.EventByKey(ctx, g.SessionID, gh.GateOpenedKey(g.ToolCallID, n))
		if err != nil || !found {
			return gh.GateOpened{}, false, err
		}
		if err := json.Unmarshal(ev.Payload, &o); err != nil {
			return gh.GateOpened{}, false, gh.Wrap(gh.CodeInternal, err, "unreadable gate.opened at seq %d", ev.Seq)
		}
		if o.GateID == g.ID {
			return o, true, nil
		}
	}
}
