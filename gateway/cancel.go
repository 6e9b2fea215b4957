package gateway

import (
	"context"
	"errors"
	"strings"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/cards"
	"github.com/gatehouse/gatehouse/gateway/chat"
	"github.com/gatehouse/gatehouse/store"
)

// maxCancelGates bounds the pending cards one "cancel" denies.
const maxCancelGates = 100

// cancelByWord handles a message that is the word "cancel" in a chat whose
// session has approval cards pending. Each card is denied through Press,
// as a press of Deny by the sender with the reason "cancelled by
// <person>", so the rule of who may decide (the allow-list, the
// requester, the approvers) and the first decision winning are those of
// every press. When it decided (or found decided) at least one card, the
// message is logged dropped with chat.ReasonCancel and handled is true.
// Otherwise — nothing pending, a question rather than an approval, or a
// sender who may decide none of them — the message is received as any
// other: it then gets the notice that a card is pending, and a turn of
// its own after the decision. The error is one a retry can cure.
func (g *Gateway) cancelByWord(ctx context.Context, in gh.Inbound) (res chat.ReceiveResult, handled bool, err error) {
	if g.cfg.Gates == nil || in.IsBot || in.Unsupported != "" || !cards.IsCancel(in.Text) {
		return chat.ReceiveResult{}, false, nil
	}
	// A redelivery goes the usual way and is logged as a duplicate.
	if _, ok, err := g.st.ReceiveByUpdate(ctx, in.Platform, in.UpdateID); err != nil || ok {
		return chat.ReceiveResult{}, false, err
	}
	session := chat.SessionFor(in.Platform, in.ChatID, in.ThreadID)
	pending, err := g.st.ListGates(ctx, session, gh.GatePending, maxCancelGates)
	if err != nil {
		return chat.ReceiveResult{}, false, err
	}
	who := firstNonEmpty(in.UserName, in.UserID)
	var decided []string
	for _, gate := range pending {
		if gate.Kind != gh.GateKindApproval {
			continue // a question is answered with one of its options
		}
		pr, err := g.Press(ctx, gh.Press{Platform: in.Platform, UpdateID: in.UpdateID, GateID: gate.ID, Choice: chat.ChoiceDeny,
			Reason: "cancelled by " + who, UserID: in.UserID, UserName: in.UserName, ChatID: in.ChatID, ThreadID: in.ThreadID})
		if err != nil {
			return chat.ReceiveResult{}, false, err
		}
		switch {
		case pr.Gate.State == "" || pr.Gate.State == gh.GatePending:
			// Refused (not allowed, not an approver): nothing changed.
		case pr.Won:
			decided = append(decided, gate.ID+" denied")
		default:
			decided = append(decided, gate.ID+" already "+string(pr.Gate.State))
		}
	}
	if len(decided) == 0 {
		return chat.ReceiveResult{}, false, nil
	}
	g.cfg.Logger.Info("a cancel in the chat decided pending cards", "platform", in.Platform, "session", session, "user", in.UserID, "gates", decided)
	entry := receiveEntry(in, cleanText(in.Text), g.cfg.Now().UTC())
	err = g.st.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
		return g.drop(ctx, tx, &res, entry, chat.ReasonCancel, clip("cancelled by "+who+": "+strings.Join(decided, ", "), maxFieldLen), session, 0)
	})
	if errors.Is(err, errRaced) {
		// A redelivery of this update was logged meanwhile: the usual
		// way logs this one as its duplicate.
		return chat.ReceiveResult{}, false, nil
	}
	if err != nil {
		return chat.ReceiveResult{}, false, err
	}
	return res, true, nil
}
