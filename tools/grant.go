package tools

import (
	"encoding/json"
	"slices"
	"strings"
)

// Grantable is implemented by a tool that may be approved "for this chat":
// GrantBound returns the bound a grant of these arguments covers — a
// canonical string that a later call must reproduce exactly to run under
// the grant — and a label that says it in words. ok false: these
// arguments offer no grant (the card has Approve and Deny only). A tool
// without it (shell_exec, MCP tools) never offers one.
type Grantable interface {
	GrantBound(args json.RawMessage) (bound, label string, ok bool)
}

// GrantBound implements [Grantable]: "the same recipients", the set of
// addresses the send parses from to, as it sends them (mailaddr: domains
// mapped and lower-cased, in their A-label form), sorted and without
// repeats. Display names do not count: a grant for
// sara@example.com covers "Sara <sara@example.com>" too, and nothing else.
func (t *EmailSend) GrantBound(args json.RawMessage) (bound, label string, ok bool) {
	var a emailArgs
	if err := json.Unmarshal(args, &a); err != nil {
		return "", "", false
	}
	list, err := parseRecipients(a.To)
	if err != nil {
		return "", "", false
	}
	addrs := make([]string, 0, len(list))
	for _, r := range list {
		// The address as sent: the domain mapped (lower-cased, in its
		// A-label form), the local part as written, which may be
		// case-sensitive.
		addrs = append(addrs, r.Addr.Local+"@"+strings.ToLower(r.Addr.ASCIIDomain))
	}
	slices.Sort(addrs)
	addrs = slices.Compact(addrs)
	bound = strings.Join(addrs, ",")
	return bound, "the same recipients: " + strings.Join(addrs, ", "), true
}
