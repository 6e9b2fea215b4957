package discordtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ---- modals: interaction response type 9 and MODAL_SUBMIT ----

// DiscordModal is a modal the bot answered an interaction with.
type DiscordModal struct {
	CustomID, Title string
	Inputs          []DiscordTextInput
}

// DiscordTextInput is one text input of a modal.
type DiscordTextInput struct {
	CustomID, Label, Placeholder string
	// Style is 1 (short) or 2 (paragraph).
	Style                int
	Required             bool
	MinLength, MaxLength int
}

// checkModal reads the data of a type 9 answer as Discord checks it: a
// custom_id of 1–100 characters, a title of 1–45, 1–5 action rows each
// holding one text input (type 4) with a unique custom_id of 1–100, style
// 1 or 2, a label of 1–45, min_length 0–4000, max_length 1–4000 and at
// least min_length, a placeholder of at most 100 and a value of at most
// 4000. It returns the modal or writes the 400. f.mu held.
func (f *DiscordFake) checkModal(w http.ResponseWriter, r *http.Request, raw json.RawMessage) (*DiscordModal, bool) {
	bad := func(path, code, msg string) (*DiscordModal, bool) {
		f.refuse("%s %s: modal: %s: %s", r.Method, r.URL.Path, path, msg)
		discordFormError(w, path, code, msg)
		return nil, false
	}
	var d struct {
		CustomID   *string `json:"custom_id"`
		Title      *string `json:"title"`
		Components []struct {
			Type       int `json:"type"`
			Components []struct {
				Type        int     `json:"type"`
				CustomID    *string `json:"custom_id"`
				Label       *string `json:"label"`
				Style       int     `json:"style"`
				Placeholder string  `json:"placeholder"`
				Value       string  `json:"value"`
				Required    *bool   `json:"required"`
				MinLength   *int    `json:"min_length"`
				MaxLength   *int    `json:"max_length"`
			} `json:"components"`
		} `json:"components"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &d) != nil {
		return bad("data", "BASE_TYPE_REQUIRED", "This field is required")
	}
	if d.CustomID == nil || *d.CustomID == "" || utf8.RuneCountInString(*d.CustomID) > 100 {
		return bad("data.custom_id", "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 100 in length.")
	}
	if d.Title == nil || *d.Title == "" || utf8.RuneCountInString(*d.Title) > 45 {
		return bad("data.title", "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 45 in length.")
	}
	if len(d.Components) == 0 || len(d.Components) > 5 {
		return bad("data.components", "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 5 in length.")
	}
	m := &DiscordModal{CustomID: *d.CustomID, Title: *d.Title}
	seen := map[string]bool{}
	for i, row := range d.Components {
		path := "data.components." + strconv.Itoa(i)
		if row.Type != 1 || len(row.Components) != 1 {
			return bad(path, "COMPONENT_LAYOUT_WIDTH_EXCEEDED", "A modal's action row holds exactly one text input.")
		}
		in := row.Components[0]
		path += ".components.0"
		switch {
		case in.Type != 4:
			return bad(path+".type", "UNION_TYPE_CHOICES", "Value of field \"type\" must be one of (4,).")
		case in.CustomID == nil || *in.CustomID == "" || utf8.RuneCountInString(*in.CustomID) > 100:
			return bad(path+".custom_id", "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 100 in length.")
		case seen[*in.CustomID]:
			return bad(path+".custom_id", "COMPONENT_CUSTOM_ID_DUPLICATED", "Component custom id cannot be duplicated")
		case in.Style != 1 && in.Style != 2:
			return bad(path+".style", "BASE_TYPE_CHOICES", "Value must be one of {1, 2}.")
		case in.Label == nil || *in.Label == "" || utf8.RuneCountInString(*in.Label) > 45:
			return bad(path+".label", "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 45 in length.")
		case utf8.RuneCountInString(in.Placeholder) > 100:
			return bad(path+".placeholder", "BASE_TYPE_MAX_LENGTH", "Must be 100 or fewer in length.")
		case utf8.RuneCountInString(in.Value) > 4000:
			return bad(path+".value", "BASE_TYPE_MAX_LENGTH", "Must be 4000 or fewer in length.")
		}
		ti := DiscordTextInput{CustomID: *in.CustomID, Label: *in.Label, Placeholder: in.Placeholder, Style: in.Style, Required: true, MaxLength: 4000}
		if in.Required != nil {
			ti.Required = *in.Required
		}
		if in.MinLength != nil {
			if *in.MinLength < 0 || *in.MinLength > 4000 {
				return bad(path+".min_length", "NUMBER_TYPE_MAX", "int value should be between 0 and 4000.")
			}
			ti.MinLength = *in.MinLength
		}
		if in.MaxLength != nil {
			if *in.MaxLength < 1 || *in.MaxLength > 4000 || *in.MaxLength < ti.MinLength {
				return bad(path+".max_length", "NUMBER_TYPE_MAX", "int value should be between 1 and 4000, and at least min_length.")
			}
			ti.MaxLength = *in.MaxLength
		}
		seen[ti.CustomID] = true
		m.Inputs = append(m.Inputs, ti)
	}
	return m, true
}

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
	var rows []any
	for _, in := range modal.Inputs {
		v := values[in.CustomID]
		n := utf8.RuneCountInString(v)
		switch {
		case strings.TrimSpace(v) == "" && in.Required:
			f.mu.Unlock()
			return "", fmt.Errorf("discord fake: %q is required", in.Label)
		case v != "" && (n < in.MinLength || n > in.MaxLength):
			f.mu.Unlock()
			return "", fmt.Errorf("discord fake: %q takes %d to %d characters, not %d", in.Label, in.MinLength, in.MaxLength, n)
		}
		rows = append(rows, map[string]any{"type": 1, "components": []any{map[string]any{"type": 4, "custom_id": in.CustomID, "value": v}}})
	}
	if f.session == nil || f.session.conn == nil || !f.session.conn.ready {
		f.mu.Unlock()
		return "", errors.New("discord fake: no gateway client is connected to receive the interaction")
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
