package discord

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/bwmarrin/discordgo"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/gateway/chat"
)

// errBucketEmpty is a 429 the adapter returns without asking Discord,
// because Discord's headers said the bucket is empty until its reset.
var errBucketEmpty = errors.New("discord: rate limit bucket is empty until its reset (from Discord's X-RateLimit headers)")

// noMentions is allowed_mentions {"parse":[]}: the message may render
// mentions but notifies nobody, whatever a model wrote.
func noMentions() *discordgo.MessageAllowedMentions {
	return &discordgo.MessageAllowedMentions{Parse: []discordgo.AllowedMentionType{}}
}

// channelOf is where a message to addr goes: a thread is a channel.
func channelOf(addr gh.Address) string {
	if addr.ThreadID != "" {
		return addr.ThreadID
	}
	return addr.ChatID
}

// permanent makes a refusal the platform would repeat.
func permanent(status int, err error) *chat.SendError {
	return &chat.SendError{Status: status, Permanent: true, Err: err}
}

// Send posts m and returns the message id.
func (a *Adapter) Send(ctx context.Context, m chat.Outgoing) (string, error) {
	ch := channelOf(m.Address)
	if ch == "" {
		return "", permanent(http.StatusBadRequest, errors.New("discord: address has no channel"))
	}
	text := m.Text
	if text == "" && m.Card != nil {
		text = m.Card.Text
	}
	if n := utf8.RuneCountInString(text); n > maxText {
		return "", permanent(http.StatusBadRequest, fmt.Errorf("discord: message is %d characters, over Discord's %d", n, maxText))
	}
	send := &discordgo.MessageSend{Content: text, AllowedMentions: noMentions()}
	if m.Address.ReplyTo != "" {
		keep := false // a reply to a deleted message is still sent, as a plain message
		send.Reference = &discordgo.MessageReference{MessageID: m.Address.ReplyTo, ChannelID: ch, FailIfNotExists: &keep}
	}
	if m.Card != nil {
		rows, err := buttonRows(m.Card.Buttons)
		if err != nil {
			return "", permanent(http.StatusBadRequest, err)
		}
		send.Components = rows
	}
	if err := a.bucketOpen(discordgo.EndpointChannelMessages(ch)); err != nil {
		return "", err
	}
	msg, err := a.rest.ChannelMessageSendComplex(ch, send, discordgo.WithContext(ctx))
	if err != nil {
		return "", sendError("send message", err)
	}
	return msg.ID, nil
}

// EditCard rewrites a card to card.Text with card.Buttons (none once
// decided: components [] removes them).
func (a *Adapter) EditCard(ctx context.Context, addr gh.Address, messageID string, card chat.Card) error {
	ch := channelOf(addr)
	if ch == "" || messageID == "" {
		return permanent(http.StatusBadRequest, errors.New("discord: card edit needs a channel and a message id"))
	}
	if n := utf8.RuneCountInString(card.Text); n > maxText {
		return permanent(http.StatusBadRequest, fmt.Errorf("discord: card is %d characters, over Discord's %d", n, maxText))
	}
	rows, err := buttonRows(card.Buttons)
	if err != nil {
		return permanent(http.StatusBadRequest, err)
	}
	edit := discordgo.NewMessageEdit(ch, messageID)
	edit.Components = &rows
	edit.AllowedMentions = noMentions()
	if card.Text != "" {
		edit.Content = &card.Text
	}
	if err := a.bucketOpen(discordgo.EndpointChannelMessage(ch, "")); err != nil {
		return err
	}
	if _, err := a.rest.ChannelMessageEditComplex(edit, discordgo.WithContext(ctx)); err != nil {
		return sendError("edit card", err)
	}
	return nil
}

// buttonRows lays buttons out in action rows of five. It never returns
// nil, so an empty card marshals as components [] and clears buttons.
func buttonRows(buttons []chat.Button) ([]discordgo.MessageComponent, error) {
	rows := []discordgo.MessageComponent{}
	if len(buttons) > buttonsPerRow*maxRows {
		return nil, fmt.Errorf("discord: %d buttons, over Discord's %d", len(buttons), buttonsPerRow*maxRows)
	}
	for start := 0; start < len(buttons); start += buttonsPerRow {
		end := min(start+buttonsPerRow, len(buttons))
		row := discordgo.ActionsRow{}
		for _, b := range buttons[start:end] {
			if b.Data == "" || utf8.RuneCountInString(b.Data) > maxCustomID {
				// Cutting the data would break the round trip through
				// ParseButtonData: refuse rather than send a dead button.
				return nil, fmt.Errorf("discord: button data %q must be 1 to %d characters", b.Data, maxCustomID)
			}
			row.Components = append(row.Components, discordgo.Button{
				Label:    label(b.Label),
				Style:    buttonStyle(b),
				CustomID: b.Data,
			})
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// label fits a button label into Discord's 80 characters; a button
// needs one.
func label(s string) string {
	if s == "" {
		return "…"
	}
	if utf8.RuneCountInString(s) <= maxLabel {
		return s
	}
	r := []rune(s)
	return string(r[:maxLabel-1]) + "…"
}

// buttonStyle colours a button: green for primary or approve, red for
// danger or deny, grey otherwise.
func buttonStyle(b chat.Button) discordgo.ButtonStyle {
	switch b.Style {
	case "primary":
		return discordgo.SuccessButton
	case "danger":
		return discordgo.DangerButton
	}
	if _, choice, ok := chat.ParseButtonData(b.Data); ok {
		switch choice {
		case chat.ChoiceApprove:
			return discordgo.SuccessButton
		case chat.ChoiceDeny:
			return discordgo.DangerButton
		}
	}
	return discordgo.SecondaryButton
}

// bucketOpen returns a 429 SendError when discordgo's record of
// Discord's rate-limit headers says the bucket (or the global limit)
// is empty, so the dispatcher waits instead of discordgo sleeping
// through the context or Discord counting a refused request. A bucket
// busy with a request in flight is not waited for: discordgo
// serialises requests on a bucket, and that request bounds the wait.
func (a *Adapter) bucketOpen(bucketID string) error {
	rl := a.rest.Ratelimiter
	b := rl.GetBucket(bucketID)
	if !b.TryLock() {
		return nil
	}
	wait := rl.GetWaitTime(b, 1)
	b.Unlock()
	if wait <= 0 {
		return nil
	}
	return &chat.SendError{Status: http.StatusTooManyRequests, RetryAfter: wait, Err: errBucketEmpty}
}

// sendError turns discordgo's errors into what the dispatcher acts on:
// a 429 with Discord's retry_after, a refusal with its status
// (permanent when a retry cannot help), or the transport error as is.
func sendError(op string, err error) error {
	var rl *discordgo.RateLimitError
	if errors.As(err, &rl) {
		wait := time.Second // Discord always says; this only guards a body without retry_after
		if rl.RateLimit != nil && rl.TooManyRequests != nil && rl.RetryAfter > 0 {
			wait = rl.RetryAfter
		}
		return &chat.SendError{Status: http.StatusTooManyRequests, RetryAfter: wait, Err: fmt.Errorf("discord: %s: %w", op, err)}
	}
	var re *discordgo.RESTError
	if errors.As(err, &re) && re.Response != nil {
		st := re.Response.StatusCode
		return &chat.SendError{Status: st, Permanent: permanentStatus(st), Err: fmt.Errorf("discord: %s: %w", op, err)}
	}
	return fmt.Errorf("discord: %s: %w", op, err)
}

// permanentStatus: bad request, wrong token, missing permission, unknown
// channel or message, too large — none changes on a retry.
func permanentStatus(status int) bool {
	switch status {
	case http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden,
		http.StatusNotFound, http.StatusMethodNotAllowed, http.StatusRequestEntityTooLarge:
		return true
	}
	return false
}
