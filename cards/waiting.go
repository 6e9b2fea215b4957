package cards

import (
	"fmt"
	"strings"

	gh "github.com/gatehouse/gatehouse"
)

// CancelWord is what a person who may decide a pending approval card types
// in its chat to deny it: the whole message, trimmed, in any case. The
// gateway denies the card with the reason "cancelled by <person>".
const CancelWord = "cancel"

// IsCancel reports whether text is CancelWord and nothing else.
func IsCancel(text string) bool { return strings.EqualFold(strings.TrimSpace(text), CancelWord) }

// waitingValueMax is how much of a card's first field the notice names;
// the card itself shows the whole of it.
const waitingValueMax = 120

// Waiting is the notice a person gets at once when they write while a card
// of their session waits for a person: which card (its tool and its first
// field, or the question), where it is, and that the message is answered
// now, in a turn of its own, while the card's turn waits for its
// decision. source is the surface the
// message came from (gh.UserMessage.Source): on a chat platform the card is
// above in that chat, and an approval card can be denied there by typing
// CancelWord. more counts the other cards pending in the session.
func Waiting(o gh.GateOpened, source string, more int) string {
	chat := source != "" && source != "api" && source != "web"
	var where string
	switch {
	case chat:
		where = "above in this chat"
	case source == "web":
		where = "above in this conversation"
	default:
		where = "in this session (the web chat shows it; GET /v1/gates lists it)"
	}
	also := ""
	if more > 0 {
		also = fmt.Sprintf(" (and %d more)", more)
	}
	if o.Kind == gh.GateKindClarify {
		return fmt.Sprintf("A question is waiting for an answer: “%s”%s. It is %s. Your message is answered now, in a turn of its own; the question's turn goes on once it is answered.",
			Clip(Visible(oneLine(o.Question)), waitingValueMax), also, where)
	}
	card := Visible(o.Tool)
	for _, f := range Fields(o) {
		if !f.FreeText {
			v := strings.TrimSpace(Visible(oneLine(f.Value)))
			if v == "" {
				v = "(empty)"
			}
			card += ", " + Visible(f.Label) + ": " + Clip(v, waitingValueMax)
			break
		}
	}
	text := fmt.Sprintf("A card is waiting for a decision: %s%s. It is %s. Your message is answered now, in a turn of its own; the card's turn goes on after the decision.", card, also, where)
	if chat {
		text += fmt.Sprintf(" To deny the card now, reply %q (if you may decide it).", CancelWord)
	}
	return text
}

// oneLine joins the lines of s with "; ", so a value of several lines (a
// list of recipients) reads as one.
func oneLine(s string) string {
	lines := strings.FieldsFunc(s, func(r rune) bool { return r == '\n' || r == '\r' })
	for i := range lines {
		lines[i] = strings.TrimSpace(lines[i])
	}
	return strings.Join(lines, "; ")
}
