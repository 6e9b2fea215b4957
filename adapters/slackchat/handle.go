package slackchat

import (
	"context"
	"errors"
	"time"

	slackgo "github.com/slack-go/slack"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/gateway"
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

// handlePress hands a block_actions payload to the sink and answers the
// presser: when the press decided the gate, the card is rewritten to its
// outcome for everyone (its buttons go); otherwise the presser alone is
// told why not, in an ephemeral message. The interaction itself has been
// acknowledged already.
func (a *Adapter) handlePress(ctx context.Context, sink gateway.Sink, payload []byte) {
	p, ok, err := parsePress(payload)
	if err != nil {
		a.log.Warn("unreadable block_actions payload", "err", err)
		return
	}
	if !ok {
		return
	}
	res, err := sink.Press(ctx, p)
	actx, cancel := context.WithTimeout(ctx, pressAnswerWithin)
	defer cancel()
	if err != nil {
		a.log.Error("press not recorded", "gate", p.GateID, "user", p.UserID, "err", err)
		a.ephemeral(actx, p, "That press could not be recorded. Please try again.")
		return
	}
	if res.Won && res.Card.Text != "" {
		_, _, _, err := a.api.UpdateMessageContext(actx, p.ChatID, p.MessageID,
			slackgo.MsgOptionText(res.Card.Text, false),
			slackgo.MsgOptionBlocks(cardBlocks(res.Card, res.Card.Text)...))
		if err == nil {
			return
		}
		a.log.Warn("chat.update of a decided card failed", "gate", p.GateID, "err", err)
	}
	if res.Text != "" {
		a.ephemeral(actx, p, res.Text)
	}
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
