package formbody

import (
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// MaxContent is how many characters a message's content may have.
const MaxContent = 2000

// Error is a field of a body Discord refuses with 50035 "Invalid Form
// Body": its path ("components.0.components.1.custom_id"), and the error
// code and message Discord answers for it.
type Error struct {
	Path, Code, Message string
	// Why is the refusal in the fake's words; "" when it is Path and
	// Message.
	Why string
}

// Reason is the refusal as the fake lists it.
func (e *Error) Reason() string {
	if e.Why != "" {
		return e.Why
	}
	return e.Path + ": " + e.Message
}

func invalid(path, code, msg string) *Error { return &Error{Path: path, Code: code, Message: msg} }

// Button is a button of a message, as the fake keeps it.
type Button struct {
	Style    int               `json:"style"`
	Label    string            `json:"label,omitempty"`
	CustomID string            `json:"custom_id,omitempty"`
	URL      string            `json:"url,omitempty"`
	Emoji    map[string]string `json:"emoji,omitempty"`
	Disabled bool              `json:"disabled"`
}

// Component is a message component as a request sends it.
type Component struct {
	Type       int               `json:"type"`
	Components []Component       `json:"components"`
	Style      int               `json:"style"`
	Label      *string           `json:"label"`
	CustomID   *string           `json:"custom_id"`
	URL        string            `json:"url"`
	Emoji      map[string]string `json:"emoji"`
	Disabled   bool              `json:"disabled"`
	SKUID      string            `json:"sku_id"`
}

// Message is the body of a message create or edit, or the data of an
// interaction's message answer.
type Message struct {
	Content         *string           `json:"content"`
	Components      *[]Component      `json:"components"`
	Embeds          []json.RawMessage `json:"embeds"`
	StickerIDs      []string          `json:"sticker_ids"`
	Flags           int               `json:"flags"`
	AllowedMentions *struct {
		Parse []string `json:"parse"`
	} `json:"allowed_mentions"`
	MessageReference *struct {
		MessageID       string `json:"message_id"`
		ChannelID       string `json:"channel_id"`
		FailIfNotExists *bool  `json:"fail_if_not_exists"`
	} `json:"message_reference"`
}

// Body checks the content, mentions and components that creates, edits
// and interaction answers have in common, and returns the button rows
// (nil when the body has no components).
func Body(m *Message) ([][]Button, *Error) {
	if m.Content != nil && utf8.RuneCountInString(*m.Content) > MaxContent {
		e := invalid("content", "BASE_TYPE_MAX_LENGTH", "Must be 2000 or fewer in length.")
		e.Why = fmt.Sprintf("content is %d characters, over Discord's %d", utf8.RuneCountInString(*m.Content), MaxContent)
		return nil, e
	}
	if m.AllowedMentions != nil {
		for i, p := range m.AllowedMentions.Parse {
			if p != "roles" && p != "users" && p != "everyone" {
				e := invalid("allowed_mentions.parse."+strconv.Itoa(i), "BASE_TYPE_CHOICES", "Value must be one of ('roles', 'users', 'everyone').")
				e.Why = fmt.Sprintf("allowed_mentions.parse has %q", p)
				return nil, e
			}
		}
	}
	if m.Components != nil {
		return Components(*m.Components)
	}
	return nil, nil
}

// Components checks a message's components as Discord does for messages
// without the components-v2 flag: up to 5 action rows, each of 1–5
// buttons, custom_id 1–100 characters and unique, label at most 80.
func Components(comps []Component) ([][]Button, *Error) {
	if len(comps) > 5 {
		return nil, invalid("components", "BASE_TYPE_BAD_LENGTH", "Must be between 0 and 5 in length.")
	}
	seen := map[string]bool{}
	rows := make([][]Button, 0, len(comps))
	for i, row := range comps {
		p := "components." + strconv.Itoa(i)
		if row.Type != 1 {
			return nil, invalid(p+".type", "UNION_TYPE_CHOICES", "Value of field \"type\" must be one of (1,).")
		}
		if len(row.Components) < 1 || len(row.Components) > 5 {
			return nil, invalid(p+".components", "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 5 in length.")
		}
		var bs []Button
		for j, c := range row.Components {
			b, e := button(p+".components."+strconv.Itoa(j), c, seen)
			if e != nil {
				return nil, e
			}
			bs = append(bs, b)
		}
		rows = append(rows, bs)
	}
	return rows, nil
}

// button checks one component of an action row at path q; seen are the
// custom_ids of the message so far.
func button(q string, c Component, seen map[string]bool) (Button, *Error) {
	if c.Type != 2 {
		return Button{}, invalid(q+".type", "COMPONENT_TYPE_INVALID", "This component type is not supported here (the fake knows buttons).")
	}
	label := ""
	if c.Label != nil {
		label = *c.Label
	}
	if utf8.RuneCountInString(label) > 80 {
		return Button{}, invalid(q+".label", "BASE_TYPE_MAX_LENGTH", "Must be 80 or fewer in length.")
	}
	if label == "" && c.Emoji == nil {
		return Button{}, invalid(q+".label", "BUTTON_COMPONENT_LABEL_OR_EMOJI_REQUIRED", "A button needs a label or an emoji.")
	}
	b := Button{Style: c.Style, Label: label, URL: c.URL, Emoji: c.Emoji, Disabled: c.Disabled}
	switch {
	case c.Style >= 1 && c.Style <= 4:
		if c.CustomID == nil || *c.CustomID == "" {
			return Button{}, invalid(q+".custom_id", "BASE_TYPE_REQUIRED", "This field is required")
		}
		if utf8.RuneCountInString(*c.CustomID) > 100 {
			return Button{}, invalid(q+".custom_id", "BASE_TYPE_MAX_LENGTH", "Must be 100 or fewer in length.")
		}
		if c.URL != "" {
			return Button{}, invalid(q+".url", "BUTTON_COMPONENT_URL_NOT_ALLOWED", "A button with a custom_id cannot have a url.")
		}
		if seen[*c.CustomID] {
			return Button{}, invalid(q+".custom_id", "COMPONENT_CUSTOM_ID_DUPLICATED", "Component custom id cannot be duplicated")
		}
		seen[*c.CustomID] = true
		b.CustomID = *c.CustomID
	case c.Style == 5:
		if c.URL == "" || c.CustomID != nil {
			return Button{}, invalid(q+".url", "BUTTON_COMPONENT_URL_REQUIRED", "A link button needs a url and no custom_id.")
		}
	default:
		return Button{}, invalid(q+".style", "BASE_TYPE_CHOICES", "Value must be one of {1, 2, 3, 4, 5}.")
	}
	return b, nil
}
