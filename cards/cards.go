package cards

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	gh "github.com/gatehouse/gatehouse"
)

// maxArgChars bounds one argument's value on a card: the card shows what
// will run, not a whole attachment.
const maxArgChars = 300

// Body is the text of an approval card before its outcome.
func Body(o gh.GateOpened) string {
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
			fmt.Fprintf(&b, "\n%s: %s", k, Clip(s, maxArgChars))
		}
	} else if len(o.Arguments) > 0 && string(o.Arguments) != "null" {
		fmt.Fprintf(&b, "\n%s", Clip(string(o.Arguments), maxArgChars))
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

// Fit formats body and tail with format as one message of at most max
// characters (none if max <= 0), clipping the body: a card is one message
// (its buttons belong to it), and one the platform refuses as too long
// would never be seen.
func Fit(body, tail string, max int, format func(string) string) string {
	text := format(body + tail)
	if max <= 0 || utf8.RuneCountInString(text) <= max {
		return text
	}
	limit := max - utf8.RuneCountInString(tail) - 1
	for limit > 16 {
		text = format(Clip(body, limit) + tail)
		if utf8.RuneCountInString(text) <= max {
			return text
		}
		limit = limit * 9 / 10
	}
	return format(Clip(body, 16) + tail)
}

// Clip trims s and cuts it to n characters, the last one an ellipsis
// when anything was cut.
func Clip(s string, n int) string {
	s = strings.TrimSpace(s)
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}
