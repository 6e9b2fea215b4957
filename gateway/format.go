package gateway

import (
	"context"
	"encoding/json"
	"strings"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/cards"
	"github.com/gatehouse/gatehouse/store"
)

// CardFormatter is implemented by an adapter whose answers keep some
// markup (Telegram's bold and code, Discord's Markdown, Slack's mrkdwn):
// FormatCard renders a card's text literally instead, every character as
// written and nothing read as markup, a mention or an emoji code, so the
// card shows the arguments exactly. An adapter without it has its cards
// formatted by Format.
type CardFormatter interface {
	FormatCard(text string) string
}

// cardFormat is how adapter a formats a card's text.
func cardFormat(a Adapter) func(string) string {
	if f, ok := a.(CardFormatter); ok {
		return f.FormatCard
	}
	return a.Format
}

// cardFor is the card of a gate as it stands: buttons while pending, the
// outcome and none once decided. Its words come from package cards: every
// field that decides the effect whole, free text clipped to fit with a
// link to the whole card (Config.PublicURL).
func (g *Gateway) cardFor(a Adapter, o gh.GateOpened, gate *gh.Gate) Card {
	maxText, format := a.Limits().MaxText, cardFormat(a)
	if gate != nil && gate.State != gh.GatePending {
		outcome := "\n\n" + cards.DecisionLine(gate.State, gate.DecidedBy, gate.Surface, gate.Answer, gate.Reason)
		return Card{GateID: o.GateID, Text: cards.Text(o, outcome, maxText, format, g.cfg.PublicURL)}
	}
	c := Card{GateID: o.GateID, Text: cards.Text(o, "", maxText, format, g.cfg.PublicURL)}
	if o.Kind == gh.GateKindClarify {
		for i, opt := range o.Options {
			c.Buttons = append(c.Buttons, Button{Label: cards.Clip(cards.Visible(opt), 60), Data: ButtonData(o.GateID, ChoiceOption+itoa(int64(i))), Style: "primary"})
		}
		return c
	}
	c.Buttons = []Button{
		{Label: "Approve", Data: ButtonData(o.GateID, ChoiceApprove), Style: "primary"},
		{Label: "Deny", Data: ButtonData(o.GateID, ChoiceDeny), Style: "danger"},
	}
	if o.GrantBound != "" {
		// A grant is offered: the tool declared what it would cover.
		c.Buttons = append(c.Buttons[:1], append([]Button{{Label: "Approve for this chat", Data: ButtonData(o.GateID, ChoiceApproveChat)}}, c.Buttons[1:]...)...)
	}
	if r, ok := a.(ReasonAsker); ok && r.AsksReasons() {
		c.Buttons = append(c.Buttons, Button{Label: "Deny with reason…", Data: ButtonData(o.GateID, ChoiceDenyReason)})
	}
	return c
}

// openedOf is the gate.opened of gate, card fields included, read from
// the log; a gate whose event cannot be read is shown from its row (its
// arguments, as cards show an event from before fields existed).
func (g *Gateway) openedOf(ctx context.Context, gate gh.Gate) gh.GateOpened {
	o, ok, err := g.k.GateOpened(ctx, gate)
	if err != nil {
		g.cfg.Logger.Warn("card shown from the gate row: its gate.opened could not be read", "gate", gate.ID, "err", err)
	}
	if !ok {
		return openedFrom(gate)
	}
	return o
}

// deliverable is what an event becomes in the outbox, if anything.
func deliverable(e gh.Event) (kind string, payload json.RawMessage, ok bool) {
	switch e.Kind {
	case gh.KindAssistantMessage:
		var a gh.AssistantMessage
		if json.Unmarshal(e.Payload, &a) != nil || strings.TrimSpace(a.Text) == "" {
			return "", nil, false
		}
		p, _ := json.Marshal(textPayload{Text: a.Text})
		return "message", p, true
	case gh.KindNotice:
		var n gh.Notice
		if json.Unmarshal(e.Payload, &n) != nil || strings.TrimSpace(n.Text) == "" {
			return "", nil, false
		}
		p, _ := json.Marshal(textPayload{Text: "ℹ️ " + n.Text})
		return "message", p, true
	case gh.KindGrantCreated:
		// Sent with a Revoke button while the grant lasts (grantNotice).
		return store.OutboxGrant, e.Payload, true
	case gh.KindGrantRevoked:
		var g gh.GrantRevoked
		if json.Unmarshal(e.Payload, &g) != nil {
			return "", nil, false
		}
		p, _ := json.Marshal(textPayload{Text: "🔒 Grant " + g.GrantID + " (" + g.Tool + ") was revoked by " + cards.Visible(g.By) + ": its calls ask again."})
		return "message", p, true
	case gh.KindGateOpened:
		return "card", e.Payload, true
	case gh.KindGateDecided:
		return "card_update", e.Payload, true
	}
	return "", nil, false
}

type textPayload struct {
	Text string `json:"text"`
}
