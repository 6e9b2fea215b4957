package gateway

import (
	"context"
	"time"

	"github.com/gatehouse/gatehouse/store"
)

// The follower turns a platform session's deliverable events into outbox
// rows keyed by (session, seq), and moves the session's cursor past them
// in the same transaction: a crash or a second replica cannot make a
// second row, and nothing is skipped.

const (
	followBatch  = 100
	followEvents = 200
)

func (g *Gateway) follow(ctx context.Context) {
	sub := g.k.SubscribeAll()
	defer sub.Close()
	t := time.NewTicker(g.cfg.Poll)
	defer t.Stop()
	for {
		if err := g.FollowOnce(ctx); err != nil && ctx.Err() == nil {
			g.cfg.Logger.Warn("outbox follower failed; retrying", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-sub.Committed:
		case <-t.C:
		}
	}
}

// FollowOnce brings every platform session's outbox up to its log.
func (g *Gateway) FollowOnce(ctx context.Context) error {
	for {
		behind, err := g.st.AddressesBehind(ctx, followBatch)
		if err != nil {
			return err
		}
		added := false
		for _, a := range behind {
			n, err := g.followSession(ctx, a)
			if err != nil {
				return err
			}
			added = added || n > 0
		}
		if added {
			g.wakeDispatch()
		}
		if len(behind) < followBatch {
			return nil
		}
	}
}

func (g *Gateway) followSession(ctx context.Context, a store.AddressEntry) (int, error) {
	events, err := g.k.Events(ctx, a.SessionID, a.Cursor, followEvents)
	if err != nil || len(events) == 0 {
		return 0, err
	}
	now := g.cfg.Now().UTC()
	added := 0
	err = g.st.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
		added = 0
		for _, e := range events {
			kind, payload, ok := deliverable(e)
			if !ok {
				continue
			}
			ok, err := tx.EnqueueOutbox(ctx, store.OutboxEntry{SessionID: a.SessionID, Seq: e.Seq, Platform: a.Platform, Kind: kind,
				Payload: payload, AvailableAt: now, Created: now})
			if err != nil {
				return err
			}
			if ok {
				added++
			}
			if copied, err := g.copyToApprovalChat(ctx, tx, a, e.Seq, kind, payload, now); err != nil {
				return err
			} else if copied {
				added++
			}
		}
		return tx.AdvanceCursor(ctx, a.SessionID, events[len(events)-1].Seq, now)
	})
	return added, err
}

// approvalCopyPrefix starts the outbox "session" of the copies of a
// session's cards sent to the approval chat: their own queue, in seq
// order (a card before its update), keyed apart from the session's rows.
const approvalCopyPrefix = "approvals:"

// copyToApprovalChat enqueues, beside a card or a card update of session
// a, its copy for the approval chat (Config.ApprovalChat), unless there is
// none or it is the session's own chat.
func (g *Gateway) copyToApprovalChat(ctx context.Context, tx store.Tx, a store.AddressEntry, seq int64, kind string, payload []byte, now time.Time) (bool, error) {
	ac := g.cfg.ApprovalChat
	if ac.Platform == "" || (kind != store.OutboxCard && kind != store.OutboxCardUpdate) ||
		(ac.Platform == a.Platform && ac.ChatID == a.ChatID) {
		return false, nil
	}
	return tx.EnqueueOutbox(ctx, store.OutboxEntry{SessionID: approvalCopyPrefix + a.SessionID, Seq: seq, Platform: ac.Platform, Kind: kind,
		Payload: payload, AvailableAt: now, Created: now})
}
