package toolworker

import (
	"encoding/json"
	"fmt"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/cards"
	"github.com/gatehouse/gatehouse/tools"
)

// cardFields are what the approval card of a call of t with args shows
// (tools.Present), committed in gate.opened so every surface shows the
// same. refusal, when not empty, is why there is no card: the tool
// refuses these arguments, or a field that must be shown whole does not
// fit the card of the smallest chat platform configured
// (Config.CardLimit). The call is then answered with it, and nobody is
// asked to approve what they could not see.
func (w *Worker) cardFields(t tools.Tool, args json.RawMessage) (fields []gh.CardField, refusal string) {
	fields, err := tools.Present(t, args)
	if err != nil {
		return nil, err.Error()
	}
	// gate.opened holds the arguments and the fields: both must fit one
	// event.
	if raw, _ := json.Marshal(fields); len(args)+len(raw)+4096 > w.k.Config().MaxPayloadBytes {
		return nil, fmt.Sprintf("Refused before asking for approval: the arguments are too large to be shown on an approval card (%d bytes). Nothing was sent or changed. Split the call into smaller ones.", len(args))
	}
	limit := w.cfg.CardLimit
	if limit <= 0 {
		return fields, ""
	}
	need := cards.Need(t.Name(), fields)
	if need <= limit {
		return fields, ""
	}
	// Name the field that takes the most room.
	var widest gh.CardField
	most := -1
	for _, f := range fields {
		if n := cards.Need("", []gh.CardField{f}); !f.FreeText && n > most {
			widest, most = f, n
		}
	}
	return nil, fmt.Sprintf("Refused before asking for approval: the approval card must show %q whole, and with it the card needs %d characters, but the smallest chat platform configured shows %d. Nothing was sent or changed. Make it shorter (for example fewer recipients, or a shorter command), or split the call into several.",
		widest.Label, need, limit)
}
