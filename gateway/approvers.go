package gateway

import (
	"slices"
	"strings"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/gateway/people"
)

// Who may decide a gate from a chat platform: the rules are package
// people's (people.Approvers, Config.Approvers); here they meet a press.

// mayDecide reports whether the presser of p may decide the gate o of
// tool: a requester, an approver named for the tool, or, under an
// "allowed" rule, anyone (the allow-list and the card's chat were checked
// before).
func (g *Gateway) mayDecide(p gh.Press, o gh.GateOpened, tool string) bool {
	rule := g.cfg.Approvers.For(tool)
	if rule.Allowed {
		return true
	}
	if slices.Contains(o.Requesters, people.UserKey(p.Platform, p.UserID)) {
		return true
	}
	return rule.Names(p.Platform, p.UserID)
}

// whoDecides is what a presser who may not decide the gate o of tool is
// told.
func (g *Gateway) whoDecides(o gh.GateOpened, tool string) string {
	var who []string
	if len(o.Requesters) > 0 {
		who = append(who, "the person who asked for it")
	}
	if users := g.cfg.Approvers.For(tool).Users; len(users) > 0 {
		names := make([]string, len(users))
		for i, u := range users {
			names[i] = u.String()
		}
		who = append(who, "an approver ("+strings.Join(names, ", ")+")")
	}
	who = append(who, "the operator in the web UI")
	return "You cannot decide this card: only " + strings.Join(who, " or ") + " can."
}
