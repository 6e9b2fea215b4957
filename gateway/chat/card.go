package chat

import (
	"strconv"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/cards"
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

// CardFor is the card of a gate for adapter a, as the gate stands: buttons
// while pending, the outcome and none once decided. Its words come from
// package cards: every field that decides the effect whole, free text
// clipped to fit with a link to the whole card at publicURL (the web UI's
// address; empty says to open the web chat's /admin). The dispatcher sends
// it, and a press answers with it.
func CardFor(a Adapter, o gh.GateOpened, gate *gh.Gate, publicURL string) Card {
	maxText, format := a.Limits().MaxText, cardFormat(a)
	if gate != nil && gate.State != gh.GatePending {
		outcome := "\n\n" + cards.Outcome(*gate)
		return Card{GateID: o.GateID, Text: cards.Text(o, outcome, maxText, format, publicURL)}
	}
	tail := ""
	if gate != nil {
		if line := cards.Approvals(*gate); line != "" {
			tail = "\n\n" + line
		}
	}
	c := Card{GateID: o.GateID, Text: cards.Text(o, tail, maxText, format, publicURL)}
	if o.Kind == gh.GateKindClarify || o.Kind == gh.GateKindIncident {
		for i, opt := range o.Options {
			c.Buttons = append(c.Buttons, Button{Label: cards.Clip(cards.Visible(opt), 60), Data: ButtonData(o.GateID, ChoiceOption+strconv.Itoa(i)), Style: "primary"})
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

// RevokeButton is the button that revokes grant id of tool (a press of
// ChoiceRevokeGrant): on a grant's notice while it lasts, and on each
// grant "/grants" lists.
func RevokeButton(id, tool string) Button {
	return Button{Label: cards.Clip("Revoke "+tool, 60), Data: ButtonData(id, ChoiceRevokeGrant), Style: "danger"}
}
