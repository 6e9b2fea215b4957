package blockkit

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// View is a modal view as views.open takes it.
type View struct {
	CallbackID, PrivateMetadata string
	Title, Submit, Close        string
	// Texts are the texts of the view's section blocks.
	Texts []string
	// Inputs are its plain_text_input elements.
	Inputs []Input
}

// Input is one plain_text_input of a modal.
type Input struct {
	BlockID, ActionID, Label string
	Multiline, Optional      bool
	MaxLength                int
}

// ParseView checks a modal view: type modal; a plain_text title, and
// close and submit when given, of at most 24 characters; a submit when it
// has inputs; at most 100 blocks with unique block_ids; private_metadata of
// at most 3,000 characters and callback_id of at most 255; input blocks
// with a plain_text label (≤ 2,000) and a plain_text_input (action_id ≤
// 255, max_length ≤ 3,000, placeholder ≤ 150).
func ParseView(raw string) (*View, string) {
	var v struct {
		Type            string            `json:"type"`
		Title           json.RawMessage   `json:"title"`
		Submit          json.RawMessage   `json:"submit"`
		Close           json.RawMessage   `json:"close"`
		Blocks          []json.RawMessage `json:"blocks"`
		PrivateMetadata string            `json:"private_metadata"`
		CallbackID      string            `json:"callback_id"`
	}
	if raw == "" {
		return nil, "view is required"
	}
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		return nil, "view must be a JSON object: " + err.Error()
	}
	out := &View{CallbackID: v.CallbackID, PrivateMetadata: v.PrivateMetadata}
	switch {
	case v.Type != "modal":
		return nil, fmt.Sprintf("view type %q: only modal views are opened by views.open", v.Type)
	case utf8.RuneCountInString(v.PrivateMetadata) > 3000:
		return nil, "private_metadata over 3000 characters"
	case len(v.CallbackID) > 255:
		return nil, "callback_id over 255 characters"
	case len(v.Blocks) == 0 || len(v.Blocks) > 100:
		return nil, fmt.Sprintf("a modal has 1 to 100 blocks, not %d", len(v.Blocks))
	}
	t, problem := CheckText(v.Title, 24, "plain_text")
	if problem != "" {
		return nil, "title: " + problem
	}
	out.Title = t.Text
	for name, rawText := range map[string]json.RawMessage{"submit": v.Submit, "close": v.Close} {
		if rawText == nil {
			continue
		}
		t, problem := CheckText(rawText, 24, "plain_text")
		if problem != "" {
			return nil, name + ": " + problem
		}
		if name == "submit" {
			out.Submit = t.Text
		} else {
			out.Close = t.Text
		}
	}
	ids := map[string]bool{}
	for i, rb := range v.Blocks {
		var b struct {
			Type     string          `json:"type"`
			BlockID  string          `json:"block_id"`
			Text     json.RawMessage `json:"text"`
			Label    json.RawMessage `json:"label"`
			Optional bool            `json:"optional"`
			Element  struct {
				Type        string          `json:"type"`
				ActionID    string          `json:"action_id"`
				Multiline   bool            `json:"multiline"`
				MaxLength   int             `json:"max_length"`
				MinLength   int             `json:"min_length"`
				Placeholder json.RawMessage `json:"placeholder"`
			} `json:"element"`
		}
		if err := json.Unmarshal(rb, &b); err != nil {
			return nil, fmt.Sprintf("block %d: %v", i, err)
		}
		if problem := blockID(i, b.BlockID, ids); problem != "" {
			return nil, problem
		}
		switch b.Type {
		case "section":
			t, problem := CheckText(b.Text, 3000, "mrkdwn", "plain_text")
			if problem != "" {
				return nil, fmt.Sprintf("block %d: section text: %s", i, problem)
			}
			out.Texts = append(out.Texts, t.Text)
		case "input":
			l, problem := CheckText(b.Label, 2000, "plain_text")
			if problem != "" {
				return nil, fmt.Sprintf("block %d: input label: %s", i, problem)
			}
			e := b.Element
			switch {
			case e.Type != "plain_text_input":
				return nil, fmt.Sprintf("block %d: input element %q is not modelled (plain_text_input is)", i, e.Type)
			case e.ActionID == "" || len(e.ActionID) > 255:
				return nil, fmt.Sprintf("block %d: action_id must be 1 to 255 characters", i)
			case e.MaxLength < 0 || e.MaxLength > 3000 || e.MinLength < 0 || e.MinLength > 3000 || (e.MaxLength > 0 && e.MinLength > e.MaxLength):
				return nil, fmt.Sprintf("block %d: min_length %d and max_length %d must be 0 to 3000, min at most max", i, e.MinLength, e.MaxLength)
			}
			if e.Placeholder != nil {
				if _, problem := CheckText(e.Placeholder, 150, "plain_text"); problem != "" {
					return nil, fmt.Sprintf("block %d: placeholder: %s", i, problem)
				}
			}
			if b.BlockID == "" {
				// Slack makes one up; the app then cannot find the value.
				return nil, fmt.Sprintf("block %d: an input without a block_id cannot be read back", i)
			}
			out.Inputs = append(out.Inputs, Input{BlockID: b.BlockID, ActionID: e.ActionID, Label: l.Text,
				Multiline: e.Multiline, Optional: b.Optional, MaxLength: e.MaxLength})
		case "divider", "context", "header", "image", "actions", "rich_text", "markdown":
		default:
			return nil, fmt.Sprintf("block %d: unknown block type %q", i, b.Type)
		}
	}
	if len(out.Inputs) > 0 && out.Submit == "" {
		return nil, "a modal with input blocks needs a submit button"
	}
	return out, ""
}
