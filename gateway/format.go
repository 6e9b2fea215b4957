package gateway

import (
	"encoding/json"
	"strings"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/cards"
)

// cardFor is the card of a gate as it stands: buttons while pending, the
// outcome and none once decided. Its words come from package cards.
func cardFor(a Adapter, o gh.GateOpened, g *gh.Gate) Card {
	body, maxText := cards.Body(o), a.Limits().MaxText
	if g != nil && g.State != gh.GatePending {
		outcome := "\n\n" + cards.DecisionLine(g.State, g.DecidedBy, g.Surface, g.Answer)
		return Card{GateID: o.GateID, Text: cards.Fit(body, outcome, maxText, a.Format)}
	}
	c := Card{GateID: o.GateID, Text: cards.Fit(body, "", maxText, a.Format)}
	if o.Kind == gh.GateKindClarify {
		for i, opt := range o.Options {
			c.Buttons = append(c.Buttons, Button{Label: cards.Clip(opt, 60), Data: ButtonData(o.GateID, ChoiceOption+itoa(int64(i))), Style: "primary"})
		}
		return c
	}
	c.Buttons = []Button{
		{Label: "Approve", Data: ButtonData(o.GateID, ChoiceApprove), Style: "primary"},
		{Label: "Deny", Data: ButtonData(o.GateID, ChoiceDeny), Style: "danger"},
	}
	return c
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
