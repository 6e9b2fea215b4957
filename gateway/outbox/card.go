package outbox

import (
	"context"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/cards"
	"github.com/gatehouse/gatehouse/gateway/chat"
)

// Opened is the gate.opened of gate, card fields included, read from the
// log; a gate whose event cannot be read is shown from its row (its
// arguments, as cards show an event from before fields existed). A card
// update and a press's answer draw the card from it (chat.CardFor).
func (ob *Outbox) Opened(ctx context.Context, gate gh.Gate) gh.GateOpened {
	o, ok, err := ob.k.GateOpened(ctx, gate)
	if err != nil {
		ob.cfg.Logger.Warn("card shown from the gate row: its gate.opened could not be read", "gate", gate.ID, "err", err)
	}
	if !ok {
		return openedFrom(gate)
	}
	return o
}

func openedFrom(gate gh.Gate) gh.GateOpened {
	return gh.GateOpened{GateID: gate.ID, ToolCallID: gate.ToolCallID, Tool: gate.Tool, Arguments: gate.Arguments, ArgsHash: gate.ArgsHash,
		Kind: gate.Kind, Question: gate.Question, Options: gate.Options, ExpiresAt: gate.ExpiresAt}
}

// grantNotice is the message announcing grant gc, formatted for a: with
// a Revoke button while the grant is active when it is sent.
func (ob *Outbox) grantNotice(ctx context.Context, a chat.Adapter, gc gh.GrantCreated) (chat.Card, error) {
	text := "🔓 " + cards.Visible(gc.By) + " approved " + gc.Tool + " for this chat (" + cards.Visible(gc.Label) + ") until " +
		gc.ExpiresAt.UTC().Format("15:04 MST") + ": calls with the same bound run without a card. Grant " + gc.GrantID + "."
	c := chat.Card{Text: a.Format(text)}
	gr, err := ob.st.GetGrant(ctx, gc.GrantID)
	if gh.IsCode(err, gh.CodeNotFound) {
		return c, nil
	}
	if err != nil {
		return chat.Card{}, err
	}
	if gr.Active(ob.cfg.Now()) {
		c.Buttons = []chat.Button{chat.RevokeButton(gr.ID, gr.Tool)}
	}
	return c, nil
}
