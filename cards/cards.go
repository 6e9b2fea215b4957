package cards

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	gh "github.com/gatehouse/gatehouse"
)

// Body is the whole text of an approval card before its outcome, nothing
// clipped: what [Text] shows when the platform has room for it.
func Body(o gh.GateOpened) string {
	return render(o, Fields(o), -1, "")
}

// Text is the card of o for one chat platform: its body and tail (the
// outcome line of a decided card, or nothing), formatted by format (the
// adapter's escaping of its markup) into at most limit characters (none
// when limit <= 0).
//
// Every field that is not free text is shown whole. When the card does not
// fit, the free-text fields (a mail's body) are cut, as little as can be,
// each marked with how much was left out, and the card says where the
// whole of it is: the web UI under publicURL, or, without one, which card
// to open in the web chat's /admin. Only when even that does not fit (an
// event from before fields existed, whose arguments are all shown whole,
// or a platform smaller than the tool worker was told) is the body itself
// clipped, marked the same way.
func Text(o gh.GateOpened, tail string, limit int, format func(string) string, publicURL string) string {
	fields := Fields(o)
	full := render(o, fields, -1, "")
	fits := func(body string) (string, bool) {
		text := format(body + tail)
		return text, limit <= 0 || utf8.RuneCountInString(text) <= limit
	}
	if text, ok := fits(full); ok {
		return text
	}
	notice := "\n✂ Clipped to fit this chat. " + Where(publicURL, o.GateID)
	longest := 0
	for _, f := range fields {
		if f.FreeText {
			longest = max(longest, utf8.RuneCountInString(f.Value))
		}
	}
	if longest > 0 && o.Kind != gh.GateKindClarify {
		// The largest cut of the free text that fits: the text grows
		// with the cut, so the search halves the range each time.
		best, lo, hi := "", 0, longest-1
		for lo <= hi {
			mid := (lo + hi) / 2
			if text, ok := fits(render(o, fields, mid, notice)); ok {
				best, lo = text, mid+1
			} else {
				hi = mid - 1
			}
		}
		if best != "" {
			return best
		}
	}
	return Fit(render(o, fields, 0, ""), notice+tail, limit, format)
}

// Where says where the whole of card gateID can be read: a link into the
// web UI under publicURL (GATEHOUSE_PUBLIC_URL), or, without one, where
// to look.
func Where(publicURL, gateID string) string {
	if link := Link(publicURL, gateID); link != "" {
		return "The whole card: " + link
	}
	return "The whole card: open the web chat's /admin, card " + gateID + "."
}

// Link is the web UI's address of card gateID under publicURL, or "" when
// there is no public URL. The admin page opens the card it names.
func Link(publicURL, gateID string) string {
	publicURL = strings.TrimRight(strings.TrimSpace(publicURL), "/")
	if publicURL == "" {
		return ""
	}
	return publicURL + "/admin#card=" + gateID
}

// Fields are the fields a card of o shows: the ones the tool worker
// committed, or, for a gate.opened from before fields existed, each
// argument whole (a string as it is, anything else as JSON), by name.
func Fields(o gh.GateOpened) []gh.CardField {
	if len(o.Fields) > 0 {
		return o.Fields
	}
	var args map[string]json.RawMessage
	if json.Unmarshal(o.Arguments, &args) != nil || args == nil {
		if raw := strings.TrimSpace(string(o.Arguments)); raw != "" && raw != "null" {
			return []gh.CardField{{Label: "arguments", Value: raw}}
		}
		return nil
	}
	keys := make([]string, 0, len(args))
	for k := range args {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]gh.CardField, 0, len(keys))
	for _, k := range keys {
		var s string
		if json.Unmarshal(args[k], &s) != nil {
			s = string(args[k])
		}
		out = append(out, gh.CardField{Label: k, Value: s})
	}
	return out
}

// Need is how many characters a card of tool with fields needs on any
// platform for what it must show whole: its title, every field that is
// not free text, and the label and clip marker of each free-text field,
// each character counted at the longest a platform's escaping makes it.
// The tool worker refuses a call whose card needs more than the smallest
// configured platform has room for (see [Frame]).
func Need(tool string, fields []gh.CardField) int {
	var b strings.Builder
	b.WriteString(title(tool))
	for _, f := range fields {
		if f.FreeText {
			writeField(&b, gh.CardField{Label: f.Label, Value: "x"}, 1)
			continue
		}
		writeField(&b, f, -1)
	}
	return Width(b.String())
}

// Frame is the room a card takes on a platform besides what [Need]
// counts: the expiry line, the clip notice with its link under publicURL,
// and the outcome line of a decided card. A platform of max characters
// shows a card whose Need is at most max - Frame(publicURL) with every
// field that must be whole whole.
func Frame(publicURL string) int {
	const id = "g_0123456789abcdef0123" // as long as toolworker.GateID's
	notice := "\n✂ Clipped to fit this chat. " + Where(publicURL, id)
	expiry := "\nExpires 2006-01-02 15:04 UTC."
	// The outcome line: "\n\n✅ Approved by <name> (<surface>)", names
	// as long as the platforms allow, and room to spare; a denial's
	// reason line besides.
	const outcome = 320 + MaxReasonShown + len("\nReason: ")
	return Width(notice+expiry) + outcome
}

// title is the first line of an approval card.
func title(tool string) string {
	return "🔐 Approval needed: " + Visible(tool)
}

// render writes the card of o: the title, each field, the clip notice
// when given, the expiry. cut < 0 shows free text whole; else each
// free-text field shows its first cut characters and says how many more
// it has.
func render(o gh.GateOpened, fields []gh.CardField, cut int, notice string) string {
	var b strings.Builder
	if o.Kind == gh.GateKindIncident {
		fmt.Fprintf(&b, "🚨 %s", Visible(strings.TrimSpace(o.Question)))
		return b.String()
	}
	if o.Kind == gh.GateKindClarify {
		fmt.Fprintf(&b, "❓ %s", Visible(strings.TrimSpace(o.Question)))
		if o.Tool != "" {
			fmt.Fprintf(&b, "\n(before running %s)", Visible(o.Tool))
		}
		return b.String()
	}
	b.WriteString(title(o.Tool))
	for _, f := range fields {
		c := -1
		if f.FreeText {
			c = cut
		}
		writeField(&b, f, c)
	}
	b.WriteString(notice)
	if !o.ExpiresAt.IsZero() {
		fmt.Fprintf(&b, "\nExpires %s UTC.", o.ExpiresAt.UTC().Format("2006-01-02 15:04"))
	}
	return b.String()
}

// blockMark starts each line of a field shown as a block (free text, or a
// value of several lines), so no line of a value can pass for a line of
// the card ("To: …", "✅ Approved").
const blockMark = "│ "

// writeField writes one field on lines of its own: "Label: value", or
// for free text and values of several lines the label and then each line
// of the value marked. cut >= 0 shows only the first cut characters,
// then how many were left out.
func writeField(b *strings.Builder, f gh.CardField, cut int) {
	label := Visible(f.Label)
	if f.Value == "" {
		fmt.Fprintf(b, "\n%s: (empty)", label)
		return
	}
	value, rest := f.Value, 0
	if cut >= 0 {
		if n := utf8.RuneCountInString(value); n > cut {
			// A cut just after a line break ends on that line, not on an
			// empty one.
			value, rest = strings.TrimSuffix(string([]rune(value)[:cut]), "\n"), n-cut
		}
	}
	value = Visible(value)
	if !f.FreeText && !strings.Contains(value, "\n") {
		fmt.Fprintf(b, "\n%s: %s", label, value)
		return
	}
	fmt.Fprintf(b, "\n%s:", label)
	if value != "" {
		for line := range strings.SplitSeq(value, "\n") {
			b.WriteString("\n" + blockMark + line)
		}
	}
	if rest > 0 {
		fmt.Fprintf(b, "\n%s… ✂ %d more characters not shown", blockMark, rest)
	}
}

// MaxReasonShown is how much of a denial's reason a card shows, in
// characters; the model is given all of it.
const MaxReasonShown = 200

// DecisionLine is the line a decided card ends with: the outcome, who
// decided where (the operator for "local", the web UI's and the API's
// decider) and, for a denial with a reason, the reason on a line of its
// own, cut to MaxReasonShown.
func DecisionLine(state gh.GateState, by, surface, answer, reason string) string {
	// Names, answers and reasons come from people and platforms: shown,
	// never interpreted.
	if by == gh.LocalUser {
		by = "the operator"
	}
	by, surface, answer = Visible(by), Visible(surface), Visible(answer)
	who := by
	if surface != "" && surface != by {
		who = fmt.Sprintf("%s (%s)", by, surface)
	}
	switch state {
	case gh.GateApproved:
		if answer == gh.ScopeChat {
			return "✅ Approved for this chat by " + who
		}
		return "✅ Approved by " + who
	case gh.GateDenied:
		if reason = strings.TrimSpace(reason); reason != "" {
			return "❌ Denied by " + who + "\nReason: " + strings.ReplaceAll(Visible(Clip(reason, MaxReasonShown)), "\n", " ")
		}
		return "❌ Denied by " + who
	case gh.GateAnswered:
		return fmt.Sprintf("💬 %s: answered by %s", answer, who)
	case gh.GateExpired:
		return "⌛ Expired: nobody decided in time, so it did not run."
	}
	return "⏳ Waiting for a decision."
}

// Outcome is the outcome line of decided gate g: DecisionLine, or for
// an incident's card what was done about the stuck turn.
func Outcome(g gh.Gate) string {
	if g.Kind != gh.GateKindIncident {
		line := DecisionLine(g.State, g.DecidedBy, g.Surface, g.Answer, g.Reason)
		switch {
		case len(g.Approvals) > 0 && g.State == gh.GateApproved:
			// Approved by several (GATEHOUSE_APPROVERS_NEEDED): the
			// card says who approved before the last.
			line += "\n☑️ With the approval of " + approvers(g.Approvals)
		case len(g.Approvals) > 0:
			// Denied or expired short of the count.
			line += "\n" + Approvals(g)
		}
		return line
	}
	who := Visible(g.DecidedBy)
	if s := Visible(g.Surface); s != "" && s != who {
		who += " (" + s + ")"
	}
	switch {
	case g.State == gh.GateAnswered && g.Answer == gh.IncidentClose:
		return "🛑 Closed by " + who
	case g.State == gh.GateAnswered:
		return "🔎 Diagnosis asked for by " + who
	case g.State == gh.GateExpired && strings.TrimSpace(g.Reason) != "" && g.Reason != "timeout":
		return "✔ Resolved: " + Visible(Clip(g.Reason, MaxReasonShown)) + "."
	}
	return "⌛ Nobody pressed in time; the turn was left as it is."
}

// Approvals is the line a card that needs several people's approvals
// shows while it waits ("☑️ 1 of 2 approvals: alice (telegram)"), on
// every surface; "" when none is recorded.
func Approvals(g gh.Gate) string {
	if len(g.Approvals) == 0 {
		return ""
	}
	needed := g.Approvals[len(g.Approvals)-1].Needed
	return fmt.Sprintf("☑️ %d of %d approvals: %s", len(g.Approvals), needed, approvers(g.Approvals))
}

func approvers(as []gh.GateApproval) string {
	names := make([]string, len(as))
	for i, a := range as {
		who := Visible(a.By)
		if a.Person == gh.LocalUser {
			who = "the operator"
		}
		if s := Visible(a.Surface); s != "" {
			who += " (" + s + ")"
		}
		names[i] = who
	}
	return strings.Join(names, ", ")
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
