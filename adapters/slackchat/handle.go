package slackchat

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	slackgo "github.com/slack-go/slack"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/gateway/chat"
)

// pressAnswerWithin is how long Slack gives an app to respond to a press.
const pressAnswerWithin = 3 * time.Second

// identityRetry spaces auth.test attempts in Events API mode, where the
// bot's user id is learnt lazily by whichever replica serves a request.
const identityRetry = 30 * time.Second

// identityWait bounds one auth.test made while a request waits.
const identityWait = 500 * time.Millisecond

// identify learns the bot's user id from auth.test, once.
func (a *Adapter) identify(ctx context.Context) (string, error) {
	a.idMu.Lock()
	defer a.idMu.Unlock()
	if a.botUserID != "" {
		return a.botUserID, nil
	}
	a.idTried = a.now()
	res, err := a.api.AuthTestContext(ctx)
	if err != nil {
		return "", err
	}
	a.botUserID = res.UserID
	return a.botUserID, nil
}

// knownBotUserID is the bot's user id when known. In Events API mode it
// tries auth.test now and then; until it succeeds our own messages are
// still recognised by their bot_id, which Slack sets on every message an
// app posts.
func (a *Adapter) knownBotUserID(ctx context.Context) string {
	a.idMu.Lock()
	id, tried := a.botUserID, a.idTried
	a.idMu.Unlock()
	if id != "" || (!tried.IsZero() && a.now().Sub(tried) < identityRetry) {
		return id
	}
	// Bounded: an Events API request waits for this, and Slack wants its
	// answer within 3 s.
	ictx, cancel := context.WithTimeout(ctx, identityWait)
	defer cancel()
	id, err := a.identify(ictx)
	if err != nil {
		a.log.Warn("auth.test failed; own messages are recognised by bot_id only", "err", err)
	}
	return id
}

// handlePress hands an interaction to the sink and answers the presser: a
// block_actions press of one of our buttons, or the submission of the
// modal that asks for a denial's reason (parseReason). When the press
// decided the gate, the card is rewritten to its outcome for everyone (its
// buttons go); a press of "Deny with reason…" that may deny opens that
// modal; otherwise the presser alone is told why not, in an ephemeral
// message. The interaction itself has been acknowledged already (which
// also closes a submitted modal).
func (a *Adapter) handlePress(ctx context.Context, sink chat.Sink, payload []byte) {
	var head struct {
		Type      string `json:"type"`
		TriggerID string `json:"trigger_id"`
	}
	if err := json.Unmarshal(payload, &head); err != nil {
		a.log.Warn("unreadable interaction payload", "err", err)
		return
	}
	// A submitted reason modal is a denial press of its card; the rest is
	// answered as any press is.
	parse, noun := parsePress, "press"
	if head.Type == "view_submission" {
		parse, noun = parseReason, "denial"
	}
	p, ok, err := parse(payload)
	if err != nil {
		a.log.Warn("unreadable interaction payload", "type", head.Type, "err", err)
		return
	}
	if !ok {
		return
	}
	res, err := sink.Press(ctx, p)
	actx, cancel := context.WithTimeout(ctx, pressAnswerWithin)
	defer cancel()
	if err != nil {
		a.log.Error(noun+" not recorded", "gate", p.GateID, "user", p.UserID, "err", err)
		a.ephemeral(actx, p, "That "+noun+" could not be recorded. Please try again.")
		return
	}
	if res.AskReason {
		if err := a.openReasonModal(actx, head.TriggerID, p, res.Gate.Tool); err != nil {
			a.log.Warn("views.open of the reason modal failed", "gate", p.GateID, "err", err)
			a.ephemeral(actx, p, "Could not ask for a reason here; press Deny to deny without one.")
		}
		return
	}
	a.answerPress(actx, p, res)
}

// answerPress shows the presser what their press did: the decided card
// for everyone, else an ephemeral message.
func (a *Adapter) answerPress(ctx context.Context, p gh.Press, res chat.PressResult) {
	if res.Won && res.Card.Text != "" {
		_, _, _, err := a.api.UpdateMessageContext(ctx, p.ChatID, p.MessageID,
			slackgo.MsgOptionText(res.Card.Text, false),
			slackgo.MsgOptionBlocks(cardBlocks(res.Card, res.Card.Text)...))
		if err == nil {
			return
		}
		a.log.Warn("chat.update of a decided card failed", "gate", p.GateID, "err", err)
	}
	if res.Text != "" {
		a.ephemeral(ctx, p, res.Text)
	}
}

// The modal that asks for a denial's reason.
const (
	reasonCallbackID = "gh_deny_reason"
	reasonBlockID    = "gh_reason"
	reasonActionID   = "reason"
)

// reasonMeta is the modal's private_metadata: where the card is, so the
// submission is a press of it.
type reasonMeta struct {
	Gate    string `json:"g"`
	Channel string `json:"c"`
	Thread  string `json:"t,omitempty"`
	Message string `json:"m"`
}

// openReasonModal opens, for the presser of p, a modal asking why they
// deny (views.open with the press's trigger_id, good for 3 s).
func (a *Adapter) openReasonModal(ctx context.Context, triggerID string, p gh.Press, tool string) error {
	meta, _ := json.Marshal(reasonMeta{Gate: p.GateID, Channel: p.ChatID, Thread: p.ThreadID, Message: p.MessageID})
	plain := func(s string) *slackgo.TextBlockObject {
		return slackgo.NewTextBlockObject(slackgo.PlainTextType, s, false, false)
	}
	input := slackgo.NewPlainTextInputBlockElement(plain("Why deny it?"), reasonActionID)
	input.Multiline, input.MaxLength = true, chat.MaxReason
	view := slackgo.ModalViewRequest{
		Type:            slackgo.VTModal,
		CallbackID:      reasonCallbackID,
		Title:           plain("Deny with a reason"),
		Submit:          plain("Deny"),
		Close:           plain("Cancel"),
		PrivateMetadata: string(meta),
		Blocks: slackgo.Blocks{BlockSet: []slackgo.Block{
			slackgo.NewSectionBlock(plain(truncate("Deny "+tool+"? The reason is shown on the card and given to the agent.", maxSectionText)), nil, nil),
			slackgo.NewInputBlock(reasonBlockID, plain("Reason"), nil, input),
		}},
	}
	_, err := a.api.OpenViewContext(ctx, triggerID, view)
	return err
}

// ephemeral tells the presser text, in the card's thread.
func (a *Adapter) ephemeral(ctx context.Context, p gh.Press, text string) {
	opts := []slackgo.MsgOption{slackgo.MsgOptionText(Format(text), false)}
	if p.ThreadID != "" {
		opts = append(opts, slackgo.MsgOptionTS(p.ThreadID))
	}
	if _, err := a.api.PostEphemeralContext(ctx, p.ChatID, p.UserID, opts...); err != nil && !errors.Is(err, context.Canceled) {
		a.log.Warn("chat.postEphemeral to a presser failed", "gate", p.GateID, "user", p.UserID, "err", err)
	}
}
