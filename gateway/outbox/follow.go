package outbox

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/cards"
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

// Follow runs the follower until ctx ends: a pass at once, then one on
// every commit in this process and every Poll.
func (ob *Outbox) Follow(ctx context.Context) {
	sub := ob.k.SubscribeAll()
	defer sub.Close()
	t := time.NewTicker(ob.cfg.Poll)
	defer t.Stop()
	for {
		if err := ob.FollowOnce(ctx); err != nil && ctx.Err() == nil {
			ob.cfg.Logger.Warn("outbox follower failed; retrying", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-sub.Committed:
		case <-t.C:
		}
	}
}

// FollowOnce brings every platform session's outbox up to its log, and
// the approval chat's copies of the cards of sessions without a chat
// address up to the gates (followApprovals).
func (ob *Outbox) FollowOnce(ctx context.Context) error {
	if n, err := ob.followApprovals(ctx); err != nil {
		return err
	} else if n > 0 {
		ob.Wake()
	}
	for {
		behind, err := ob.st.AddressesBehind(ctx, followBatch)
		if err != nil {
			return err
		}
		added := false
		for _, a := range behind {
			n, err := ob.followSession(ctx, a)
			if err != nil {
				return err
			}
			added = added || n > 0
		}
		if added {
			ob.Wake()
		}
		if len(behind) < followBatch {
			return nil
		}
	}
}

func (ob *Outbox) followSession(ctx context.Context, a store.AddressEntry) (int, error) {
	events, err := ob.k.Events(ctx, a.SessionID, a.Cursor, followEvents)
	if err != nil || len(events) == 0 {
		return 0, err
	}
	now := ob.cfg.Now().UTC()
	added := 0
	err = ob.st.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
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
			if copied, err := ob.copyToApprovalChat(ctx, tx, a, e.Seq, kind, payload, now); err != nil {
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
func (ob *Outbox) copyToApprovalChat(ctx context.Context, tx store.Tx, a store.AddressEntry, seq int64, kind string, payload []byte, now time.Time) (bool, error) {
	ac := ob.cfg.ApprovalChat
	if ac.Platform == "" || (kind != store.OutboxCard && kind != store.OutboxCardUpdate) ||
		(ac.Platform == a.Platform && ac.ChatID == a.ChatID) {
		return false, nil
	}
	return tx.EnqueueOutbox(ctx, store.OutboxEntry{SessionID: approvalCopyPrefix + a.SessionID, Seq: seq, Platform: ac.Platform, Kind: kind,
		Payload: payload, AvailableAt: now, Created: now})
}

// deliverable is what an event becomes in the outbox, if anything.
func deliverable(e gh.Event) (kind string, payload json.RawMessage, ok bool) {
	switch e.Kind {
	case gh.KindAssistantMessage:
		var a gh.AssistantMessage
		if json.Unmarshal(e.Payload, &a) != nil || strings.TrimSpace(a.Text) == "" {
			return "", nil, false
		}
		p, _ := json.Marshal(Text{Text: a.Text + sourcesLine(a.Sources)})
		return "message", p, true
	case gh.KindNotice:
		var n gh.Notice
		if json.Unmarshal(e.Payload, &n) != nil {
			return "", nil, false
		}
		// The kernel's notices are facts; the words are the cards'.
		text := cards.NoticeText(n)
		if strings.TrimSpace(text) == "" {
			return "", nil, false
		}
		p, _ := json.Marshal(Text{Text: "ℹ️ " + text})
		return "message", p, true
	case gh.KindGrantCreated:
		// Sent with a Revoke button while the grant lasts (grantNotice).
		return store.OutboxGrant, e.Payload, true
	case gh.KindGrantRevoked:
		var g gh.GrantRevoked
		if json.Unmarshal(e.Payload, &g) != nil {
			return "", nil, false
		}
		p, _ := json.Marshal(Text{Text: "🔒 Grant " + g.GrantID + " (" + g.Tool + ") was revoked by " + cards.Visible(g.By) + ": its calls ask again."})
		return "message", p, true
	case gh.KindGateOpened:
		return "card", e.Payload, true
	case gh.KindGateDecided, gh.KindGateApproval:
		// An approval of several edits the cards to say who approved
		// so far (the dispatcher reads the gate as it is then).
		return "card_update", e.Payload, true
	}
	return "", nil, false
}

// maxSourcesShown bounds the sources named under a chat answer: a chat
// message is read on a phone, and the web chat lists them all.
const maxSourcesShown = 3

// sourcesLine is the short line under a chat answer that names the
// passages it cites ("\n\nSources: handbook.md (Leave > Sick leave), …"),
// each document and heading once, at most maxSourcesShown and "+N more";
// "" when it cites none. Names and headings are the uploader's words:
// cards.Visible spells out hidden characters, so a name cannot be drawn
// as another (a right-to-left override, a zero-width space).
func sourcesLine(srcs []gh.Source) string {
	seen := map[[2]string]bool{}
	var names []string
	more := 0
	for _, s := range srcs {
		k := [2]string{s.Document, s.Heading}
		if seen[k] || s.Document == "" {
			continue
		}
		seen[k] = true
		if len(names) == maxSourcesShown {
			more++
			continue
		}
		n := s.Document
		if s.Heading != "" {
			n += " (" + s.Heading + ")"
		}
		names = append(names, cards.Visible(n))
	}
	if len(names) == 0 {
		return ""
	}
	line := "\n\nSources: " + strings.Join(names, ", ")
	if more > 0 {
		line += fmt.Sprintf(", +%d more", more)
	}
	return line
}
