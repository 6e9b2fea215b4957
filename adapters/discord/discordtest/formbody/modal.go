package formbody

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Modal is a modal the bot answered an interaction with.
type Modal struct {
	CustomID, Title string
	Inputs          []TextInput
}

// TextInput is one text input of a modal.
type TextInput struct {
	CustomID, Label, Placeholder string
	// Style is 1 (short) or 2 (paragraph).
	Style                int
	Required             bool
	MinLength, MaxLength int
}

// CheckModal reads the data of a type 9 answer as Discord checks it: a
// custom_id of 1–100 characters, a title of 1–45, 1–5 action rows each
// holding one text input (type 4) with a unique custom_id of 1–100, style
// 1 or 2, a label of 1–45, min_length 0–4000, max_length 1–4000 and at
// least min_length, a placeholder of at most 100 and a value of at most
// 4000. It returns the modal, or the field Discord refuses.
func CheckModal(raw json.RawMessage) (*Modal, *Error) {
	bad := func(path, code, msg string) (*Modal, *Error) { return nil, invalid(path, code, msg) }
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
	m := &Modal{CustomID: *d.CustomID, Title: *d.Title}
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
		ti := TextInput{CustomID: *in.CustomID, Label: *in.Label, Placeholder: in.Placeholder, Style: in.Style, Required: true, MaxLength: 4000}
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
	return m, nil
}

// Submission is what a MODAL_SUBMIT carries for values typed into m's
// inputs (custom_id → text): action rows of one text input each. As
// Discord's client does, it refuses a missing required value and one
// outside an input's lengths.
func (m *Modal) Submission(values map[string]string) ([]any, error) {
	var rows []any
	for _, in := range m.Inputs {
		v := values[in.CustomID]
		n := utf8.RuneCountInString(v)
		switch {
		case strings.TrimSpace(v) == "" && in.Required:
			return nil, fmt.Errorf("discord fake: %q is required", in.Label)
		case v != "" && (n < in.MinLength || n > in.MaxLength):
			return nil, fmt.Errorf("discord fake: %q takes %d to %d characters, not %d", in.Label, in.MinLength, in.MaxLength, n)
		}
		rows = append(rows, map[string]any{"type": 1, "components": []any{map[string]any{"type": 4, "custom_id": in.CustomID, "value": v}}})
	}
	return rows, nil
}
