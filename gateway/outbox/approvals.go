package outbox

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/store"
)

// The approval chat gets every card. The follower above follows the
// sessions that have a chat address, whose row holds the cursor; a session
// without one (the web chat's, the API's, the OpenAI-compatible
// endpoint's) has no cursor and no chat for its answers, so only its cards
// and their updates leave, for the approval chat alone. They are found from
// the gates table rather than the log: the pending gates (few) get their
// card, and a gate whose card was copied is watched until its decision is
// in the log, which gets the card update. The rows are keyed as the
// copies of chat sessions' cards are, (approvals:<session>, seq of the
// gate.opened or gate.decided), so a pass repeated, by this replica after
// a restart or by another, adds nothing twice, and the card goes out
// before its update.

const (
	// pendingGates bounds the pending gates one pass reads.
	pendingGates = 500
	// recentGates is how many of the newest gates the first pass reads,
	// for the decisions made while this process was not following.
	recentGates = 500
)

// approvalCopies is the state of the copies of address-less sessions'
// cards: only an optimisation over the gates table and the outbox's keys,
// so losing it (a restart) loses nothing.
type approvalCopies struct {
	mu sync.Mutex
	// watched are gates whose card was copied, until their update is.
	watched map[string]bool
	// chatted are pending gates of sessions with a chat address: the
	// follower's, not looked up again.
	chatted map[string]bool
	// caughtUp says the first pass read the recent gates.
	caughtUp bool
}

// followApprovals enqueues, for the approval chat, the cards and card
// updates of sessions without a chat address, and returns how many rows it
// added. It does nothing without an approval chat.
func (ob *Outbox) followApprovals(ctx context.Context) (int, error) {
	if ob.cfg.ApprovalChat.Platform == "" {
		return 0, nil
	}
	ap := &ob.copies
	ap.mu.Lock()
	defer ap.mu.Unlock()
	gates, err := ob.st.ListGates(ctx, "", gh.GatePending, pendingGates)
	if err != nil {
		return 0, err
	}
	recovering := !ap.caughtUp
	if recovering {
		recent, err := ob.st.ListGates(ctx, "", "", recentGates)
		if err != nil {
			return 0, err
		}
		gates = append(gates, recent...)
	}
	seen := map[string]bool{}
	for _, g := range gates {
		seen[g.ID] = true
	}
	for id := range ap.watched {
		if seen[id] {
			continue
		}
		g, err := ob.st.GetGate(ctx, id)
		if gh.IsCode(err, gh.CodeNotFound) {
			delete(ap.watched, id) // pruned: nothing left to update
			continue
		}
		if err != nil {
			return 0, err
		}
		gates = append(gates, g)
	}
	now := ob.cfg.Now().UTC()
	added := 0
	for _, g := range gates {
		n, err := ob.copyGate(ctx, g, recovering, now)
		if err != nil {
			return added, err
		}
		added += n
	}
	ap.caughtUp = true
	// A chat session's gate is remembered only while it is pending.
	for id := range ap.chatted {
		if !seen[id] {
			delete(ap.chatted, id)
		}
	}
	return added, nil
}

// copyGate enqueues what gate g's card owes the approval chat, if its
// session has no chat address: the card while it is pending, the update
// once its decision is in the log. recovering says g may have been decided
// while no one watched it: its update is enqueued only when a card of it
// is recorded in the approval chat, so a restart does not enqueue an
// update for every recent decision.
func (ob *Outbox) copyGate(ctx context.Context, g gh.Gate, recovering bool, now time.Time) (int, error) {
	ap := &ob.copies
	watched := ap.watched[g.ID] // its card was copied: its session has no address
	switch {
	case ap.chatted[g.ID] || (watched && g.State == gh.GatePending):
		return 0, nil
	case !watched && (g.State == gh.GatePending || recovering):
		if _, has, err := ob.st.AddressBySession(ctx, g.SessionID); err != nil {
			return 0, err
		} else if has {
			// The follower copies a chat session's cards beside its
			// own rows.
			if g.State == gh.GatePending {
				ap.chatted[g.ID] = true
			}
			return 0, nil
		}
	case !watched:
		return 0, nil
	}
	if g.State == gh.GatePending {
		ev, found, err := ob.openedEvent(ctx, g)
		if err != nil || !found {
			// Not readable yet (it commits with the gate row): the next
			// pass tries again.
			return 0, err
		}
		ap.watched[g.ID] = true
		return ob.enqueueCopy(ctx, g.SessionID, ev.Seq, store.OutboxCard, ev.Payload, now)
	}
	if !watched {
		if shown, err := ob.shownInApprovalChat(ctx, g.ID); err != nil || !shown {
			return 0, err
		}
	}
	ev, found, err := ob.k.EventByKey(ctx, g.SessionID, "gate:"+g.ID)
	if err != nil {
		return 0, err
	}
	if !found {
		// Decided, its gate.decided not in the log yet: the gates'
		// sweeper commits it, and a later pass sends the update.
		ap.watched[g.ID] = true
		return 0, nil
	}
	delete(ap.watched, g.ID)
	return ob.enqueueCopy(ctx, g.SessionID, ev.Seq, store.OutboxCardUpdate, ev.Payload, now)
}

// enqueueCopy adds a row for the approval chat, once per (session, seq).
func (ob *Outbox) enqueueCopy(ctx context.Context, session string, seq int64, kind string, payload json.RawMessage, now time.Time) (int, error) {
	ok, err := ob.st.EnqueueOutbox(ctx, store.OutboxEntry{SessionID: approvalCopyPrefix + session, Seq: seq, Platform: ob.cfg.ApprovalChat.Platform,
		Kind: kind, Payload: payload, AvailableAt: now, Created: now})
	if err != nil || !ok {
		return 0, err
	}
	return 1, nil
}

// openedEvent is gate g's gate.opened event: a call's gates are numbered
// from 1 (a clarifying question can come before the approval), and the
// row does not say which one g is (as kernel.GateOpened reads it).
func (ob *Outbox) openedEvent(ctx context.Context, g gh.Gate) (gh.Event, bool, error) {
	for n := 1; ; n++ {
		ev, found, err := ob.k.EventByKey(ctx, g.SessionID, gh.GateOpenedKey(g.ToolCallID, n))
		if err != nil || !found {
			return gh.Event{}, false, err
		}
		var o gh.GateOpened
		if err := json.Unmarshal(ev.Payload, &o); err != nil {
			return gh.Event{}, false, gh.Wrap(gh.CodeInternal, err, "unreadable gate.opened at seq %d of session %q", ev.Seq, g.SessionID)
		}
		if o.GateID == g.ID {
			return ev, true, nil
		}
	}
}

// shownInApprovalChat reports whether a card of gate id was sent to the
// approval chat.
func (ob *Outbox) shownInApprovalChat(ctx context.Context, id string) (bool, error) {
	cs, err := ob.st.GateCards(ctx, id)
	if err != nil {
		return false, err
	}
	ac := ob.cfg.ApprovalChat
	for _, c := range cs {
		if c.Platform == ac.Platform && c.ChatID == ac.ChatID {
			return true, nil
		}
	}
	return false, nil
}
