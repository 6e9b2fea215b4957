package kernel

import (
	"context"
	"encoding/json"
	"strconv"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/store"
)

// A message typed while a card of its session waits for a person is told
// so at once: the edge commit of a user.message that finds a gate pending
// commits a notice after it, keyed by the input's seq (WaitingKey), in the
// same transaction when the caller gave one (EdgeCommitTx: the gateway's
// receive, so a redelivered update, a duplicate, adds nothing). The
// notice carries facts, not words (gh.PendingCard: the card, the surface
// the message came from, how many more wait): every surface following the
// log words it (cards.NoticeText says which card and where, and that the
// message is answered right after the decision), so the kernel imports no
// wording; the outbox delivers it at most once. The message
// itself waits for a turn of its own after the decided turn settles (see
// Settle.Unanswered).

// NoticeCardPending is the code of the notice a message typed while a card
// is pending gets (gh.NoticeCardPending).
const NoticeCardPending = gh.NoticeCardPending

// maxWaitingGates bounds the pending gates one notice counts.
const maxWaitingGates = 100

// WaitingKey is the idempotency key of the notice for the input at seq.
func WaitingKey(seq int64) string { return "waiting:" + strconv.FormatInt(seq, 10) }

// noteWaiting commits in tx the notice for input, a user.message just
// committed, when its session has gates pending; the oldest is named.
func (k *Kernel) noteWaiting(ctx context.Context, tx store.Tx, input gh.Event) error {
	pending, err := tx.ListGates(ctx, input.SessionID, gh.GatePending, maxWaitingGates)
	if err != nil || len(pending) == 0 {
		return err
	}
	g := pending[len(pending)-1] // newest first
	o, ok, err := gateOpenedIn(ctx, tx, g)
	if err != nil {
		return err
	}
	if !ok {
		o = gh.GateOpened{GateID: g.ID, ToolCallID: g.ToolCallID, Tool: g.Tool, Arguments: g.Arguments, Kind: g.Kind, Question: g.Question, Options: g.Options}
	}
	var u gh.UserMessage
	if err := json.Unmarshal(input.Payload, &u); err != nil {
		return gh.Wrap(gh.CodeInternal, err, "unreadable user.message at seq %d", input.Seq)
	}
	payload, err := json.Marshal(gh.Notice{Code: NoticeCardPending, Pending: pendingCard(o, u.Source, len(pending)-1)})
	if err != nil {
		return gh.Wrap(gh.CodeInternal, err, "encode notice")
	}
	_, err = tx.Append(ctx, store.AppendParams{SessionID: input.SessionID, Kind: gh.KindNotice, Payload: payload, Key: WaitingKey(input.Seq), Now: k.now()})
	return err
}

// pendingCard is the facts of the notice for o. Free text stays out: a
// notice never shows prose, and the log need not hold a mail's body twice.
func pendingCard(o gh.GateOpened, source string, more int) *gh.PendingCard {
	p := &gh.PendingCard{GateID: o.GateID, Kind: o.Kind, Tool: o.Tool, Question: o.Question, Source: source, More: more}
	for _, f := range o.Fields {
		if !f.FreeText {
			p.Fields = append(p.Fields, f)
		}
	}
	if len(o.Fields) == 0 {
		p.Arguments = o.Arguments
	}
	return p
}
