package people

import (
	"encoding/json"
	"slices"
	"strings"

	gh "github.com/gatehouse/gatehouse"
)

// The one rule of who may decide a gate, for every kind (a tool's
// approval, a clarifying question, a stuck turn's incident card, a
// library add) and every surface (the chat the card was sent to, its copy
// in GATEHOUSE_APPROVAL_CHAT, the operator on the web UI and the API).
// Every caller asks [Approvers.MayDecide]; nothing else says who may.

// Where is the surface a press comes from, as the rule sees it.
type Where int

const (
	// InChat is a press in a chat the card was sent to (the session's
	// own chat, or one its card was recorded in).
	InChat Where = iota
	// InApprovalChat is a press on the copy in the approvers' chat.
	InApprovalChat
	// ByOperator is the web UI or the API: the operator, who holds the
	// API token.
	ByOperator
)

// Presser is who pressed, and where. The allow-list and the card's chat
// were checked before: the rule only says whether this person's press
// decides.
type Presser struct {
	Where    Where
	Platform string
	UserID   string
}

// Key is the presser's user key (the operator's is gh.LocalUser).
func (p Presser) Key() string {
	if p.Where == ByOperator {
		return gh.LocalUser
	}
	return UserKey(p.Platform, p.UserID)
}

// MayDecide reports whether p's press decides the gate whose card is o:
//
//   - the operator always does (the web UI and the API hold the token);
//   - a library card that would replace the operator's own document is
//     the operator's alone (gh.LibraryNeedsOperator): no press in a chat
//     decides it, Approve or Deny;
//   - the sender of a library upload never does, whatever the mode: they
//     cannot put their own file into the collection everyone trusts;
//   - a requester does unless GATEHOUSE_REQUESTER_APPROVES is off for the
//     tool, and then not even as a named approver or under "allowed" (the
//     point of turning it off is that someone else looks);
//   - an approver named for the tool does, from any copy of the card;
//   - under "allowed", anyone who reached the card does.
func (a Approvers) MayDecide(o gh.GateOpened, p Presser) bool {
	if p.Where == ByOperator {
		return true
	}
	if p.UserID == "" {
		return false
	}
	if gh.LibraryNeedsOperator(o.Kind, o.Arguments) {
		return false
	}
	key := p.Key()
	if o.Kind == gh.GateKindLibrary && librarySender(o) == key {
		return false
	}
	requester := slices.Contains(o.Requesters, key)
	if requester {
		return a.RequesterApproves(o.Tool)
	}
	rule := a.For(o.Tool)
	return rule.Allowed || rule.Names(p.Platform, p.UserID)
}

// WhoDecides is what a presser who may not decide the card o is told.
func (a Approvers) WhoDecides(o gh.GateOpened) string {
	if gh.LibraryNeedsOperator(o.Kind, o.Arguments) {
		return "You cannot decide this card: it would replace the operator's own document, so only the operator in the web UI (or the API) can."
	}
	var who []string
	if len(o.Requesters) > 0 && a.RequesterApproves(o.Tool) {
		who = append(who, "the person who asked for it")
	}
	rule := a.For(o.Tool)
	if rule.Allowed {
		if o.Kind == gh.GateKindLibrary {
			who = append(who, "anyone in the chat but the person who sent the file")
		} else if !a.RequesterApproves(o.Tool) {
			who = append(who, "anyone in the chat but the person who asked for it")
		}
	}
	if len(rule.Users) > 0 {
		names := make([]string, len(rule.Users))
		for i, u := range rule.Users {
			names[i] = u.String()
		}
		who = append(who, "an approver ("+strings.Join(names, ", ")+")")
	}
	who = append(who, "the operator in the web UI")
	return "You cannot decide this card: only " + strings.Join(who, " or ") + " can."
}

// RequesterApproves reports whether the requester may decide their own
// card of tool (GATEHOUSE_REQUESTER_APPROVES, _<TOOL>). Defaults to yes.
func (a Approvers) RequesterApproves(tool string) bool {
	if v, ok := a.RequesterOff[ToolKey(tool)]; ok {
		return !v
	}
	return !a.RequesterOff[""]
}

// Needed is how many distinct people must approve a card of tool before
// it is approved (GATEHOUSE_APPROVERS_NEEDED, _<TOOL>). Defaults to 1.
func (a Approvers) Needed(tool string) int {
	if n, ok := a.NeededBy[ToolKey(tool)]; ok && n > 0 {
		return n
	}
	if n := a.NeededBy[""]; n > 0 {
		return n
	}
	return 1
}

// librarySender is the user key of who sent a library card's file: its
// arguments' "by" (gateway/uploads writes it on every library card, so
// cards opened before this rule are covered too). "" when unreadable,
// which matches no presser.
func librarySender(o gh.GateOpened) string {
	var a struct {
		By string `json:"by"`
	}
	if json.Unmarshal(o.Arguments, &a) != nil {
		return ""
	}
	return a.By
}
