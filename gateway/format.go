package gateway

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/answers"
)

// How answers and cards read on a chat platform. Text is built plain and
// formatted by the adapter (escaping its markup) only at the end.

// maxArgChars bounds one argument's value on a card: the card shows what
// will run, not a whole attachment.
const maxArgChars = 300

// cardBody is the text of an approval card before its outcome.
func cardBody(o gh.GateOpened) string {
	var b strings.Builder
	if o.Kind == gh.GateKindClarify {
		fmt.Fprintf(&b, "❓ %s", strings.TrimSpace(o.Question))
		if o.Tool != "" {
			fmt.Fprintf(&b, "\n(before running %s)", o.Tool)
		}
		return b.String()
	}
	fmt.Fprintf(&b, "🔐 Approval needed: %s", o.Tool)
	var args map[string]json.RawMessage
	if json.Unmarshal(o.Arguments, &args) == nil && len(args) > 0 {
		keys := make([]string, 0, len(args))
		for k := range args {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			var s string
			if json.Unmarshal(args[k], &s) != nil {
				s = string(args[k])
			}
			fmt.Fprintf(&b, "\n%s: %s", k, clipMark(s, maxArgChars))
		}
	} else if len(o.Arguments) > 0 && string(o.Arguments) != "null" {
		fmt.Fprintf(&b, "\n%s", clipMark(string(o.Arguments), maxArgChars))
	}
	if !o.ExpiresAt.IsZero() {
		fmt.Fprintf(&b, "\nExpires %s UTC.", o.ExpiresAt.UTC().Format("2006-01-02 15:04"))
	}
	return b.String()
}

// DecisionLine is the line a decided card ends with.
func DecisionLine(state gh.GateState, by, surface, answer string) string {
	who := by
	if surface != "" && surface != by {
		who = fmt.Sprintf("%s (%s)", by, surface)
	}
	switch state {
	case gh.GateApproved:
		return "✅ Approved by " + who
	case gh.GateDenied:
		return "❌ Denied by " + who
	case gh.GateAnswered:
		return fmt.Sprintf("💬 %s: answered by %s", answer, who)
	case gh.GateExpired:
		return "⌛ Expired: nobody decided in time, so it did not run."
	}
	return "⏳ Waiting for a decision."
}

// cardFor is the card of a gate as it stands: buttons while pending, the
// outcome and none once decided.
func cardFor(a Adapter, o gh.GateOpened, g *gh.Gate) Card {
	body := cardBody(o)
	if g != nil && g.State != gh.GatePending {
		outcome := "\n\n" + DecisionLine(g.State, g.DecidedBy, g.Surface, g.Answer)
		return Card{GateID: o.GateID, Text: fitCard(a, body, outcome)}
	}
	c := Card{GateID: o.GateID, Text: fitCard(a, body, "")}
	if o.Kind == gh.GateKindClarify {
		for i, opt := range o.Options {
			c.Buttons = append(c.Buttons, Button{Label: clipMark(opt, 60), Data: ButtonData(o.GateID, ChoiceOption+itoa(int64(i))), Style: "primary"})
		}
		return c
	}
	c.Buttons = []Button{
		{Label: "Approve", Data: ButtonData(o.GateID, ChoiceApprove), Style: "primary"},
		{Label: "Deny", Data: ButtonData(o.GateID, ChoiceDeny), Style: "danger"},
	}
	return c
}

// fitCard formats body and tail as one message within the platform's
// limit, clipping the body: a card is one message (its buttons belong to
// it), and one the platform refuses as too long would never be seen.
func fitCard(a Adapter, body, tail string) string {
	max := a.Limits().MaxText
	text := a.Format(body + tail)
	if max <= 0 || utf8.RuneCountInString(text) <= max {
		return text
	}
	limit := max - utf8.RuneCountInString(tail) - 1
	for limit > 16 {
		text = a.Format(clipMark(body, limit) + tail)
		if utf8.RuneCountInString(text) <= max {
			return text
		}
		limit = limit * 9 / 10
	}
	return a.Format(clipMark(body, 16) + tail)
}

// SplitText cuts text into parts that each fit max characters once
// formatted by format: at a paragraph break, else a line break, else a
// space, else anywhere. Tables become lines first: chat apps do not
// render them.
func SplitText(text string, max int, format func(string) string) []string {
	text = strings.TrimSpace(answers.TablesToLines(text))
	if text == "" {
		return nil
	}
	if max <= 0 {
		return []string{format(text)}
	}
	var parts []string
	for text != "" {
		n := utf8.RuneCountInString(text)
		if n <= max && utf8.RuneCountInString(format(text)) <= max {
			parts = append(parts, format(text))
			break
		}
		cut := fitCut(text, max, format)
		parts = append(parts, format(strings.TrimRight(text[:cut], " \n")))
		text = strings.TrimLeft(text[cut:], " \n")
	}
	return parts
}

// fitCut is the byte offset of the best cut of text whose formatted head
// fits max runes.
func fitCut(text string, max int, format func(string) string) int {
	limit := max
	for {
		end := byteOffset(text, limit)
		head := text[:end]
		cut := end
		for _, sep := range []string{"\n\n", "\n", " "} {
			if i := strings.LastIndex(head, sep); i > len(head)/2 {
				cut = i + len(sep)
				break
			}
		}
		if utf8.RuneCountInString(format(strings.TrimRight(text[:cut], " \n"))) <= max || limit <= 16 {
			if cut == 0 {
				cut = end
			}
			return cut
		}
		// Escaping grew it past the limit: try a shorter head.
		limit = limit * 9 / 10
	}
}

func byteOffset(s string, runes int) int {
	i := 0
	for j := range s {
		if i == runes {
			return j
		}
		i++
	}
	return len(s)
}

func clipMark(s string, n int) string {
	s = strings.TrimSpace(s)
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
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
