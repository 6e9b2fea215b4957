package gateway

import (
	"context"
	"strconv"
	"strings"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/cards"
	"github.com/gatehouse/gatehouse/gateway/chat"
	"github.com/gatehouse/gatehouse/gateway/people"
)

// Press implements [chat.Sink]: a button press on an approval card. The press
// decides only when its user is allowed on the platform (or named as an
// approver), the card it pressed is one the gateway sent for that gate to
// that chat, and its user may decide the gate (see [people.Approvers]: the
// requester, an approver named for the tool); the first decision on any
// surface wins, and every later press hears it. A press of "Deny with
// reason…" decides nothing: it is answered with AskReason when the
// presser may decide. A Revoke press (ChoiceRevokeGrant) revokes a grant
// of the chat (grants.go).
func (g *Gateway) Press(ctx context.Context, p gh.Press) (chat.PressResult, error) {
	// Only errors a retry can cure are returned (the platform then
	// delivers the press again); everything else is answered with text.
	if err := checkIDs(field{"platform", p.Platform}, field{"update id", p.UpdateID}, field{"chat id", p.ChatID},
		field{"thread id", p.ThreadID}, field{"user id", p.UserID}, field{"message id", p.MessageID}); err != nil {
		g.cfg.Logger.Warn("refused a malformed press", "platform", p.Platform, "err", err)
		return chat.PressResult{Text: "This press could not be read."}, nil
	}
	admitted, err := g.hears(ctx, p.Platform, p.UserID, p.IsBot)
	if err != nil {
		return chat.PressResult{}, err
	}
	if !admitted {
		g.cfg.Logger.Info("refused a press", "platform", p.Platform, "gate", p.GateID, "user", p.UserID, "reason", "not_allowed")
		return chat.PressResult{Text: "You are not allowed to decide this."}, nil
	}
	if p.Choice == chat.ChoiceRevokeGrant {
		return g.revokeByPress(ctx, p)
	}
	if g.cfg.Gates == nil {
		return chat.PressResult{Text: "Approvals are not enabled on this gateway."}, nil
	}
	if !chat.ValidGateID(p.GateID) {
		return chat.PressResult{Text: "This approval no longer exists."}, nil
	}
	gate, err := g.st.GetGate(ctx, p.GateID)
	if gh.IsCode(err, gh.CodeNotFound) || gh.IsCode(err, gh.CodeInvalid) {
		return chat.PressResult{Text: "This approval no longer exists."}, nil
	}
	if err != nil {
		return chat.PressResult{}, err
	}
	// The press must come from the chat the gate's session belongs to, or
	// from a card the gateway sent for it: a button copied into another
	// chat decides nothing. The chat's session is derived, so a press
	// that beats the recording of its card's message id still counts.
	if chat.SessionFor(p.Platform, p.ChatID, p.ThreadID) != gate.SessionID && !g.inApprovalChat(p.Platform, p.ChatID) {
		cards, err := g.st.GateCards(ctx, p.GateID)
		if err != nil {
			return chat.PressResult{}, err
		}
		shown := false
		for _, c := range cards {
			if c.Platform == p.Platform && c.ChatID == p.ChatID && (p.MessageID == "" || c.MessageID == p.MessageID) {
				shown = true
			}
		}
		if !shown {
			g.cfg.Logger.Warn("refused a press from a chat the card was not sent to", "platform", p.Platform, "gate", p.GateID, "chat", p.ChatID)
			return chat.PressResult{Text: "This card is not one this chat was sent."}, nil
		}
	}
	opened := g.out.Opened(ctx, gate)
	// Someone who may not decide hears who may, while there is something
	// to decide; once decided, everyone in the chat hears the decision.
	if gate.State == gh.GatePending && !g.mayDecide(p, opened) {
		g.cfg.Logger.Info("refused a press", "platform", p.Platform, "gate", p.GateID, "user", p.UserID, "reason", "not_an_approver")
		return chat.PressResult{Gate: gate, Text: g.whoDecides(opened)}, nil
	}
	d := gh.Decision{By: firstNonEmpty(p.UserName, p.UserID), Person: people.UserKey(p.Platform, p.UserID), Surface: p.Platform}
	switch {
	case p.Choice == chat.ChoiceApprove:
		d.State = gh.GateApproved
	case p.Choice == chat.ChoiceApproveChat && opened.GrantBound != "":
		d.State, d.Answer = gh.GateApproved, gh.ScopeChat
	case p.Choice == chat.ChoiceDeny:
		d.State, d.Reason = gh.GateDenied, clip(strings.TrimSpace(p.Reason), chat.MaxReason)
	case p.Choice == chat.ChoiceDenyReason && gate.Kind != gh.GateKindApproval && gate.Kind != gh.GateKindLibrary:
		return chat.PressResult{Text: "That choice is not on this card."}, nil
	case p.Choice == chat.ChoiceDenyReason && gate.State == gh.GatePending:
		return chat.PressResult{Gate: gate, AskReason: true, Text: "Why deny it? The reason is shown on the card and given to the agent."}, nil
	case p.Choice == chat.ChoiceDenyReason:
		return chat.PressResult{Gate: gate, Card: chat.CardFor(g.adapters[p.Platform], opened, &gate, g.cfg.PublicURL), Text: decidedText(gate)}, nil
	case strings.HasPrefix(p.Choice, chat.ChoiceOption):
		n, err := strconv.Atoi(strings.TrimPrefix(p.Choice, chat.ChoiceOption))
		if err != nil || n < 0 || n >= len(opened.Options) {
			return chat.PressResult{Text: "That option is not on this question."}, nil
		}
		d.State, d.Answer = gh.GateAnswered, opened.Options[n]
	default:
		return chat.PressResult{Text: "That choice is not on this card."}, nil
	}
	gate, won, err := g.cfg.Gates.Decide(ctx, p.GateID, d)
	if gh.IsCode(err, gh.CodeInvalid) {
		// A choice that does not fit the gate (approve on a question,
		// say) decides nothing, and is answered: an error here would
		// make the platform deliver the press again, forever.
		g.cfg.Logger.Warn("refused a press that does not fit its gate", "platform", p.Platform, "gate", p.GateID, "err", err)
		return chat.PressResult{Text: "That choice does not fit this card."}, nil
	}
	if err != nil {
		if gate.State == "" || gate.State == gh.GatePending {
			return chat.PressResult{}, err
		}
		// Decided, not yet logged: the sweeper logs it; the presser hears it.
		g.cfg.Logger.Warn("press decided a gate whose log commit failed; the sweeper logs it", "gate", p.GateID, "err", err)
	}
	res := chat.PressResult{Gate: gate, Won: won, Card: chat.CardFor(g.adapters[p.Platform], opened, &gate, g.cfg.PublicURL)}
	switch {
	case gate.State == gh.GatePending:
		// One approval of several (GATEHOUSE_APPROVERS_NEEDED): counted,
		// nothing decided, nothing runs.
		res.Text = "Your approval is counted (" + cards.Approvals(gate) + "); it needs another person's before it runs."
		if len(gate.Approvals) > 0 && gate.Approvals[len(gate.Approvals)-1].Needed-len(gate.Approvals) > 1 {
			res.Text = "Your approval is counted (" + cards.Approvals(gate) + "); it needs more people's before it runs."
		}
	case won && gate.State == gh.GateApproved && gate.Answer == gh.ScopeChat:
		res.Text = "Approved for this chat."
	case won && gate.State == gh.GateApproved:
		res.Text = "Approved."
	case won && gate.State == gh.GateDenied:
		res.Text = "Denied."
	case won && gate.Kind == gh.GateKindIncident && gate.Answer == gh.IncidentClose:
		res.Text = "Closing the stuck turn."
	case won && gate.Kind == gh.GateKindIncident:
		res.Text = "Asking the agent to diagnose it."
	case won:
		res.Text = "Answered: " + gate.Answer
	default:
		res.Text = decidedText(gate)
	}
	return res, nil
}

// decidedText tells a later presser the decision made on gate.
func decidedText(gate gh.Gate) string {
	if gate.State == gh.GateExpired {
		return "This approval expired: the call did not run."
	}
	return "Already decided. " + cards.Outcome(gate) + "."
}

// hears reports whether a press or a command of the user counts at all:
// they are admitted on the platform (allowed, or let in), or named as an
// approver — heard whether or not an allow-list names them; the tool's
// rule then says whether their press decides. Bots never.
func (g *Gateway) hears(ctx context.Context, platform, userID string, isBot bool) (bool, error) {
	if isBot {
		return false, nil
	}
	admitted, err := g.admits(ctx, g.st, platform, userID)
	return admitted || (err == nil && g.cfg.Approvers.Names(platform, userID)), err
}

// inApprovalChat reports whether a chat is the approvers' chat, which
// every card is sent to.
func (g *Gateway) inApprovalChat(platform, chatID string) bool {
	ac := g.cfg.ApprovalChat
	return ac.Platform != "" && ac.Platform == platform && ac.ChatID == chatID
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if strings.TrimSpace(v) != "" {
			return v
		}
	}
	return ""
}
