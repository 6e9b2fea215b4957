package toolworker

import (
	"context"
	"encoding/json"
	"fmt"
	"net/mail"
	"sort"
	"strings"

	"github.com/gatehouse/gatehouse/tools"
)

// VerdictKind is what a commitment check decides.
type VerdictKind string

// Verdicts.
const (
	Allow   VerdictKind = "allow"
	Rewrite VerdictKind = "rewrite"
	Clarify VerdictKind = "clarify"
	Refuse  VerdictKind = "refuse"
)

// Verdict is a commitment check's answer for one call.
type Verdict struct {
	Kind VerdictKind
	// Arguments replace the call's arguments (Rewrite).
	Arguments json.RawMessage
	// Question and Options ask the user (Clarify); the chosen option is
	// applied with Policy.Answer.
	Question string
	Options  []string
	// Reason explains a Refuse.
	Reason string
}

// Policy is the commitment check of one tool: it resolves a request against
// what the agent knows before anyone is asked to approve it.
type Policy interface {
	// Check checks call.Arguments for the person asking (call.User, in
	// call.SessionID).
	Check(ctx context.Context, call tools.Call) Verdict
	// Answer applies a clarify answer to the arguments.
	Answer(args json.RawMessage, answer string) (json.RawMessage, error)
}

// Contacts returns the known contacts of the person with this user key
// (tools.Call.User): name → address. It must read that person's memory
// only; an empty key has none of their own.
type Contacts func(ctx context.Context, userKey string) map[string]string

// EmailPolicy resolves email_send's recipient: an address passes; a name
// is looked up in the contacts — one match is rewritten to its address,
// several are asked about, none is refused.
type EmailPolicy struct{ Contacts Contacts }

// Check implements Policy.
func (p EmailPolicy) Check(ctx context.Context, call tools.Call) Verdict {
	args := call.Arguments
	var a map[string]any
	if err := json.Unmarshal(args, &a); err != nil {
		return Verdict{Kind: Refuse, Reason: "the arguments are not a JSON object"}
	}
	to, _ := a["to"].(string)
	to = strings.TrimSpace(to)
	if strings.Contains(to, "@") {
		if _, err := mail.ParseAddress(to); err != nil {
			return Verdict{Kind: Refuse, Reason: fmt.Sprintf("%q is not a valid email address", to)}
		}
		return Verdict{Kind: Allow}
	}
	var contacts map[string]string
	if p.Contacts != nil {
		contacts = p.Contacts(ctx, call.User)
	}
	var matches []string
	name := strings.ToLower(to)
	for n, addr := range contacts {
		ln := strings.ToLower(n)
		if name != "" && (ln == name || strings.HasPrefix(ln, name+" ")) {
			matches = append(matches, fmt.Sprintf("%s <%s>", n, addr))
		}
	}
	sort.Strings(matches)
	switch len(matches) {
	case 0:
		return Verdict{Kind: Refuse, Reason: fmt.Sprintf("I know no email address for %q; give me the address", to)}
	case 1:
		out, _ := p.Answer(args, matches[0])
		return Verdict{Kind: Rewrite, Arguments: out}
	default:
		return Verdict{Kind: Clarify, Question: fmt.Sprintf("Which %s should get the email?", to), Options: matches}
	}
}

// Answer implements Policy: the chosen "Name <address>" becomes the recipient.
func (p EmailPolicy) Answer(args json.RawMessage, answer string) (json.RawMessage, error) {
	var a map[string]any
	if err := json.Unmarshal(args, &a); err != nil {
		return nil, err
	}
	addr, err := mail.ParseAddress(answer)
	if err != nil {
		return nil, fmt.Errorf("%q is not an address: %w", answer, err)
	}
	a["to"] = addr.Address
	return json.Marshal(a)
}
