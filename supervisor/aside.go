package supervisor

import (
	"fmt"
	"strings"
	"time"

	"github.com/gatehouse/gatehouse/models"
	"github.com/gatehouse/gatehouse/supervisor/transcript"
)

// A message typed while a card waits is answered by a turn of its own at
// once (kernel: a waiting run holds no lock). The model answering it is
// told which cards wait and since when, so it can refer to them ("the
// mail to Bob is still waiting for your approval") and does not ask for
// the same effect again; the paused turn goes on after the decision.

// maxPendingNoted bounds the cards one note lists.
const maxPendingNoted = 5

// pendingNote is the system note naming the cards other turns wait on,
// or nil when none waits. now is the turn's clock, in the zone the base
// prompt uses.
func pendingNote(cards []transcript.PendingCard, now time.Time) *models.Message {
	if len(cards) == 0 {
		return nil
	}
	var b strings.Builder
	b.WriteString("Waiting for a person's decision (an approval card is open in the chat; the call has not run, and its turn goes on by itself after the decision — do not ask for it again):")
	for i, c := range cards {
		if i == maxPendingNoted {
			fmt.Fprintf(&b, "\n- and %d more", len(cards)-i)
			break
		}
		o := c.Opened
		what := o.Tool
		if o.Question != "" {
			what += ": " + clipNote(o.Question)
		}
		var fields []string
		for _, f := range o.Fields {
			if !f.FreeText {
				fields = append(fields, f.Label+" "+clipNote(f.Value))
			}
		}
		if len(o.Fields) == 0 && len(o.Arguments) > 0 {
			fields = append(fields, clipNote(string(o.Arguments)))
		}
		if len(fields) > 0 {
			what += " (" + strings.Join(fields, "; ") + ")"
		}
		since := c.Since.In(now.Location())
		fmt.Fprintf(&b, "\n- %s, open since %s (%s ago)", what, since.Format("Mon 2 Jan 15:04"), now.Sub(since).Round(time.Minute))
	}
	return &models.Message{Role: models.RoleSystem, Text: b.String()}
}

// clipNote keeps one value of a note short.
func clipNote(s string) string {
	const limit = 120
	if r := []rune(s); len(r) > limit {
		return string(r[:limit]) + "…"
	}
	return s
}
