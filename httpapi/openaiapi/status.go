package openaiapi

import (
	"fmt"
	"strings"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/cards"
)

// The status replies: text the endpoint answers with when there is no
// answer to give yet. Each starts with its marker, by which a later
// request's history holding it is recognised (conversation.isStatus):
// it holds no answer, so what the agent said is still owed.
const (
	markerApproval = "⏸️ Approval needed"
	markerWaiting  = "⏳ Still working"
	markerEnded    = "⚠️ The turn ended without an answer"
)

var statusMarkers = []string{markerApproval, markerWaiting, markerEnded}

// goOn tells the client how to get the answer later.
const goOn = "Send any message (or this one again) to get the result."

// approvalText says that gates wait for a person: each card's body and
// where to decide it.
func approvalText(gates []gh.GateOpened, publicURL string) string {
	var b strings.Builder
	for i, o := range gates {
		if i > 0 {
			b.WriteString("\n\n")
		}
		what := "run " + o.Tool
		if o.Kind == gh.GateKindClarify {
			what = "have an answer to a question about " + o.Tool
		}
		fmt.Fprintf(&b, "%s: the agent wants to %s.\n\n%s\n\n", markerApproval, what, strings.TrimSpace(cards.Body(o)))
		if link := cards.Link(publicURL, o.GateID); link != "" {
			fmt.Fprintf(&b, "Approve or deny it here: %s", link)
		} else {
			fmt.Fprintf(&b, "Approve or deny it in the web chat's /admin, card %s", o.GateID)
		}
		b.WriteString(" (or on a chat platform that shows the card).")
	}
	b.WriteString(" Once it is decided, " + strings.ToLower(goOn[:1]) + goOn[1:])
	return b.String()
}

// waitingText says the answer is not ready after waiting.
func waitingText(waited time.Duration, draining bool) string {
	if draining {
		return markerWaiting + ": the gateway is restarting, and the turn goes on. " + goOn
	}
	return fmt.Sprintf("%s: no answer yet after %s; the turn goes on. %s", markerWaiting, waited.Round(time.Second), goOn)
}

// endedText says the turn settled without answering.
func endedText(run gh.Run) string {
	why := string(run.State)
	if run.Reason != "" {
		why += ": " + run.Reason
	}
	return fmt.Sprintf("%s (%s). Send a message to go on.", markerEnded, why)
}
