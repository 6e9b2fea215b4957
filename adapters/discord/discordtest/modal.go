package discordtest

import (
	"errors"
	"fmt"

	"github.com/gatehouse/gatehouse/adapters/discord/discordtest/formbody"
)

// ---- modals: interaction response type 9 and MODAL_SUBMIT ----

// DiscordModal is a modal the bot answered an interaction with.
type DiscordModal = formbody.Modal

// DiscordTextInput is one text input of a modal.
type DiscordTextInput = formbody.TextInput

// SubmitModal submits the modal the bot answered the interaction ixID
// with, as its user, with values typed into its inputs (custom_id →
// text): a MODAL_SUBMIT interaction (type 5) carrying the message the
// modal was opened from. As Discord's client does, it refuses a missing
// required value and one outside an input's lengths. It waits for the
// bot's callback and returns what the user saw: the response message's
// content or the updated message's.
func (f *DiscordFake) SubmitModal(ixID string, values map[string]string) (string, error) {
	f.mu.Lock()
	first, ok := f.interactions[ixID]
	if !ok || first.Modal == nil {
		f.mu.Unlock()
		return "", fmt.Errorf("discord fake: interaction %s was not answered with a modal", ixID)
	}
	modal := first.Modal
	rows, err := modal.Submission(values)
	if err != nil {
		f.mu.Unlock()
		return "", err
	}
	if err := f.canInteract(); err != nil {
		f.mu.Unlock()
		return "", err
	}
	var u *discordUser
	for _, x := range f.users {
		if x.id == first.UserID {
			u = x
		}
	}
	if u == nil {
		f.mu.Unlock()
		return "", fmt.Errorf("discord fake: no user %s", first.UserID)
	}
	ix := f.interact(first.msg.channel, first.msg, u, 5, modal.CustomID, map[string]any{"custom_id": modal.CustomID, "components": rows})
	f.mu.Unlock()
	return f.await(ix)
}

// DenyWithReason presses the "Deny with reason…" button data on the bot's
// message msgID in chat as user and, when the bot answers with a modal,
// types reason into its first input and submits it. It returns what the
// user saw last: the press's answer when no modal came, else the answer to
// the submission (an ephemeral message, or the card's updated content).
func (f *DiscordFake) DenyWithReason(chat, msgID, data, user, reason string) (string, error) {
	f.mu.Lock()
	ix, err := f.press(chat, msgID, data, user)
	f.mu.Unlock()
	if err != nil {
		return "", err
	}
	reply, err := f.await(ix)
	if err != nil {
		return reply, err
	}
	f.mu.Lock()
	modal := ix.Modal
	f.mu.Unlock()
	if modal == nil {
		return reply, nil
	}
	if len(modal.Inputs) == 0 {
		return "", errors.New("discord fake: the modal has no input")
	}
	return f.SubmitModal(ix.ID, map[string]string{modal.Inputs[0].CustomID: reason})
}
