package gateway

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/cards"
	"github.com/gatehouse/gatehouse/gateway/chat"
	"github.com/gatehouse/gatehouse/store"
)

// Grants in the chat. A grant ("Approve for this chat") is announced in
// its chat with a Revoke button while it lasts (package outbox sends the
// notice); "/grants" (Telegram's
// command, Slack's and Discord's slash commands) lists the chat's active
// grants, each with a Revoke button. A Revoke press comes back as a press
// with chat.ChoiceRevokeGrant and the grant's id, and revokes through the
// kernel as /admin and DELETE /v1/grants do: grant.revoked in the log,
// which the chat then hears.

// maxListedGrants bounds the grants one /grants answer lists (and its
// buttons: Discord takes 25 in a message, Slack 25 in an actions block).
const maxListedGrants = 10

// maxActiveGrants bounds the active grants /grants looks through for its
// chat's: grants last an hour by default, so there are few.
const maxActiveGrants = 1000

// grantText is how a grant is named in a chat: tool, bound, who, until.
func grantText(tool, label, by string, until time.Time) string {
	return tool + " for this chat (" + cards.Visible(label) + "), approved by " + cards.Visible(by) + ", until " + until.UTC().Format("15:04 MST")
}

// knownCommands are the commands Command answers, as an unknown one's
// answer lists them.
var knownCommands = []string{
	"/" + chat.CommandGrants,
	"/" + chat.CommandLibrary,
	"/" + chat.CommandModel,
	"/" + chat.CommandThink,
	"/" + chat.CommandTimeZone,
}

// Command implements [chat.Sink].
func (g *Gateway) Command(ctx context.Context, name string, in gh.Inbound) (chat.CommandReply, error) {
	if err := checkInbound(in); err != nil {
		g.cfg.Logger.Warn("refused a malformed command", "platform", in.Platform, "command", name, "err", err)
		return chat.CommandReply{Text: "This command could not be read.", Refused: true}, nil
	}
	if _, ok, err := g.st.ReceiveByUpdate(ctx, in.Platform, in.UpdateID); err != nil {
		return chat.CommandReply{}, err
	} else if ok {
		return chat.CommandReply{Duplicate: true}, nil
	}
	admitted, err := g.hears(ctx, in.Platform, in.UserID, in.IsBot)
	if err != nil {
		return chat.CommandReply{}, err
	}
	var reply chat.CommandReply
	var detail string
	switch {
	case !admitted:
		reply, detail = chat.CommandReply{Text: "You are not allowed to use Gatehouse here.", Refused: true}, "/"+name+": not allowed"
	case name == chat.CommandGrants:
		var err error
		if reply, detail, err = g.listGrants(ctx, in); err != nil {
			return chat.CommandReply{}, err
		}
	case name == chat.CommandLibrary:
		var err error
		if reply, detail, err = g.library(ctx, in); err != nil {
			return chat.CommandReply{}, err
		}
	case name == chat.CommandModel || name == chat.CommandThink:
		var err error
		if reply, detail, err = g.chatSettings(ctx, name, in); err != nil {
			return chat.CommandReply{}, err
		}
	case name == chat.CommandTimeZone:
		var err error
		if reply, detail, err = g.timeZone(ctx, in); err != nil {
			return chat.CommandReply{}, err
		}
	default:
		reply, detail = chat.CommandReply{Text: "Gatehouse knows " + strings.Join(knownCommands, ", ") + " only."}, "/"+clip(name, 50)+": unknown"
	}
	var res chat.ReceiveResult
	entry := receiveEntry(in, cleanText(strings.TrimSpace("/"+name+" "+in.Text)), g.cfg.Now().UTC())
	reason := chat.ReasonCommand
	if !admitted {
		reason = chat.ReasonNotAllowed
	}
	err = g.st.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
		return g.drop(ctx, tx, &res, entry, reason, clip(cleanText(detail), maxFieldLen), chat.SessionFor(in.Platform, in.ChatID, in.ThreadID), 0)
	})
	if errors.Is(err, errRaced) {
		// Its redelivery was logged meanwhile, and answered.
		return chat.CommandReply{Duplicate: true}, nil
	}
	if err != nil {
		return chat.CommandReply{}, err
	}
	g.cfg.Logger.Info("answered a chat command", "platform", in.Platform, "command", name, "user", in.UserID, "detail", detail)
	return reply, nil
}

// listGrants answers /grants: the active grants of the chat (any of its
// threads: on Slack each thread is a session, and a slash command carries
// no thread), or in the approval chat, of every chat.
func (g *Gateway) listGrants(ctx context.Context, in gh.Inbound) (chat.CommandReply, string, error) {
	all := g.inApprovalChat(in.Platform, in.ChatID)
	where := "this chat"
	if all {
		where = "any chat"
	}
	active, err := g.st.ListGrants(ctx, "", true, g.cfg.Now().UTC(), maxActiveGrants)
	if err != nil {
		return chat.CommandReply{}, "", err
	}
	var list []store.Grant
	for _, gr := range active {
		if len(list) > maxListedGrants {
			break
		}
		ok := all
		if !ok {
			if ok, err = g.grantOfChat(ctx, gr, in.Platform, in.ChatID, in.ThreadID); err != nil {
				return chat.CommandReply{}, "", err
			}
		}
		if ok {
			list = append(list, gr)
		}
	}
	if len(list) == 0 {
		return chat.CommandReply{Text: "No grants are active in " + where + ": every call that needs approval shows a card."}, "/grants: none", nil
	}
	more := len(list) > maxListedGrants
	list = list[:min(len(list), maxListedGrants)]
	var b strings.Builder
	fmt.Fprintf(&b, "Active grants in %s (calls they cover run without a card):", where)
	reply := chat.CommandReply{}
	for i, gr := range list {
		fmt.Fprintf(&b, "\n%d. %s. Grant %s.", i+1, grantText(gr.Tool, gr.Label, gr.GrantedBy, gr.ExpiresAt), gr.ID)
		reply.Buttons = append(reply.Buttons, chat.RevokeButton(gr.ID, gr.Tool))
	}
	if more {
		b.WriteString("\nMore are active: /admin lists them all.")
	}
	reply.Text = b.String()
	return reply, fmt.Sprintf("/grants: %d listed", len(list)), nil
}

// grantOfChat reports whether grant gr belongs to the platform chat: its
// session is the chat's (or thread's), or its address names the chat.
func (g *Gateway) grantOfChat(ctx context.Context, gr store.Grant, platform, chatID, threadID string) (bool, error) {
	if gr.SessionID == chat.SessionFor(platform, chatID, threadID) || gr.SessionID == chat.SessionFor(platform, chatID, "") {
		return true, nil
	}
	a, ok, err := g.st.AddressBySession(ctx, gr.SessionID)
	if err != nil || !ok {
		return false, err
	}
	return a.Platform == platform && a.ChatID == chatID, nil
}

// revokeByPress handles a Revoke press by an admitted user: the grant must
// belong to the chat pressed in (or that chat is the approval chat).
func (g *Gateway) revokeByPress(ctx context.Context, p gh.Press) (chat.PressResult, error) {
	gr, err := g.st.GetGrant(ctx, p.GateID)
	if gh.IsCode(err, gh.CodeNotFound) || gh.IsCode(err, gh.CodeInvalid) {
		return chat.PressResult{Text: "This grant no longer exists."}, nil
	}
	if err != nil {
		return chat.PressResult{}, err
	}
	ours, err := g.grantOfChat(ctx, gr, p.Platform, p.ChatID, p.ThreadID)
	if err != nil {
		return chat.PressResult{}, err
	}
	if !ours && !g.inApprovalChat(p.Platform, p.ChatID) {
		g.cfg.Logger.Warn("refused a revoke from a chat the grant is not of", "platform", p.Platform, "grant", gr.ID, "chat", p.ChatID)
		return chat.PressResult{Text: "This grant is not one of this chat."}, nil
	}
	gr, revoked, err := g.k.RevokeGrant(ctx, gr.ID, firstNonEmpty(p.UserName, p.UserID), p.Platform)
	if err != nil {
		return chat.PressResult{}, err
	}
	if !revoked {
		return chat.PressResult{Text: "Already revoked by " + cards.Visible(gr.RevokedBy) + "."}, nil
	}
	g.cfg.Logger.Info("a grant was revoked from the chat", "platform", p.Platform, "grant", gr.ID, "user", p.UserID)
	return chat.PressResult{Won: true, Text: "Revoked: " + gr.Tool + " asks again."}, nil
}
