package people

import (
	"fmt"
	"slices"
	"strings"
)

// Who may decide a gate from a chat platform. The requester may: anyone
// whose message the turn that asked for the call answers (the user keys
// in gh.GateOpened.Requesters). So may the approvers named for the tool
// (gateway.Config.Approvers: GATEHOUSE_APPROVERS, or
// GATEHOUSE_APPROVERS_<TOOL> for one tool), wherever a copy of the card
// reached them. A rule that says "allowed" keeps the rule from before
// approvers existed: anyone allowed on the platform, in a chat the card
// was sent to. Anyone else is told who can decide, and nothing changes.
// The web UI and the API decide as the operator and are not bound by
// this. The gateway applies these rules to a press (its approvers.go).

// AllowedApprovers is the value of an approver list that keeps the old
// rule: anyone allowed in the card's chat decides.
const AllowedApprovers = "allowed"

// Approver is a platform user named as an approver, by the id the
// platform gives them ("telegram", "111").
type Approver struct {
	Platform string `json:"platform"`
	UserID   string `json:"userId"`
}

func (a Approver) String() string { return a.Platform + ":" + a.UserID }

// ApproverRule is who, besides the requester, may decide a tool's gates.
// The zero rule names nobody: the requester alone decides.
type ApproverRule struct {
	// Allowed: anyone allowed on the platform decides, in a chat the card
	// was sent to (GATEHOUSE_APPROVERS=allowed).
	Allowed bool
	// Users are the approvers named.
	Users []Approver
}

// Approvers are the approver rules: one for every tool, and the tools'
// own, which replace it.
type Approvers struct {
	Default ApproverRule
	// Tools are rules by tool, keyed by [ToolKey] of the tool's name.
	Tools map[string]ApproverRule
	// RequesterOff says, by [ToolKey] ("" for every tool), that the
	// requester does not decide their own card
	// (GATEHOUSE_REQUESTER_APPROVES=off). Defaults to none: they do.
	RequesterOff map[string]bool
	// NeededBy is, by [ToolKey] ("" for every tool), how many distinct
	// people must approve (GATEHOUSE_APPROVERS_NEEDED). Defaults to 1.
	NeededBy map[string]int
}

// For is the rule of tool: its own, else the default.
func (a Approvers) For(tool string) ApproverRule {
	if r, ok := a.Tools[ToolKey(tool)]; ok {
		return r
	}
	return a.Default
}

// Names reports whether the user is named in any rule: such a person's
// press is heard even if the allow-list does not name them (the rule of
// the gate's tool then decides whether it counts).
func (a Approvers) Names(platform, userID string) bool {
	if a.Default.Names(platform, userID) {
		return true
	}
	for _, r := range a.Tools {
		if r.Names(platform, userID) {
			return true
		}
	}
	return false
}

// Names reports whether the user is one of the rule's approvers. The
// comparison is of user keys (see [UserKey]), the space the log's
// requesters are in.
func (r ApproverRule) Names(platform, userID string) bool {
	if userID == "" {
		return false
	}
	key := UserKey(platform, userID)
	return slices.ContainsFunc(r.Users, func(a Approver) bool { return UserKey(a.Platform, a.UserID) == key })
}

// ToolKey is how a tool is named in GATEHOUSE_APPROVERS_<TOOL>: upper
// case, every character but a letter or a digit an underscore
// (email_send → EMAIL_SEND). Tools whose names differ only in those
// characters share a rule.
func ToolKey(tool string) string {
	var b strings.Builder
	for _, r := range strings.ToUpper(strings.TrimSpace(tool)) {
		if r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// ParseApprovers reads an approver list: "allowed", or platform:user
// entries separated by commas ("telegram:111,slack:U012"), user ids as
// the platform gives them (the ids the allow-lists take). Empty names
// nobody. platforms, when given, are the platform names accepted.
func ParseApprovers(s string, platforms ...string) (ApproverRule, error) {
	s = strings.TrimSpace(s)
	if strings.EqualFold(s, AllowedApprovers) {
		return ApproverRule{Allowed: true}, nil
	}
	var r ApproverRule
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		platform, id, ok := strings.Cut(part, ":")
		platform, id = strings.ToLower(strings.TrimSpace(platform)), strings.TrimSpace(id)
		switch {
		case strings.EqualFold(part, AllowedApprovers):
			return ApproverRule{}, fmt.Errorf("%q stands alone: it cannot be mixed with named approvers", AllowedApprovers)
		case !ok || platform == "" || id == "" || strings.ContainsAny(id, " \t\r\n"):
			return ApproverRule{}, fmt.Errorf("want platform:user entries separated by commas (telegram:111,slack:U012) or %q, got %q", AllowedApprovers, part)
		case len(platforms) > 0 && !slices.Contains(platforms, platform):
			return ApproverRule{}, fmt.Errorf("%q: unknown platform %q (want one of %s)", part, platform, strings.Join(platforms, ", "))
		}
		a := Approver{Platform: platform, UserID: id}
		if !slices.Contains(r.Users, a) {
			r.Users = append(r.Users, a)
		}
	}
	return r, nil
}
