package gateway

import (
	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/gateway/people"
)

// Who may decide a gate from a chat platform: the rule is package
// people's one (people.Approvers.MayDecide); here it meets a press.

// mayDecide reports whether the presser of p may decide the gate o: the
// allow-list and the card's chat were checked before.
func (g *Gateway) mayDecide(p gh.Press, o gh.GateOpened) bool {
	where := people.InChat
	if g.inApprovalChat(p.Platform, p.ChatID) {
		where = people.InApprovalChat
	}
	return g.cfg.Approvers.MayDecide(o, people.Presser{Where: where, Platform: p.Platform, UserID: p.UserID})
}

// whoDecides is what a presser who may not decide the gate o is told.
func (g *Gateway) whoDecides(o gh.GateOpened) string { return g.cfg.Approvers.WhoDecides(o) }
