package blockkit

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Block is a block of a message, as the fake keeps it.
type Block struct {
	Type    string   `json:"type"`
	BlockID string   `json:"block_id,omitempty"`
	Text    *Text    `json:"text,omitempty"`
	Buttons []Button `json:"elements,omitempty"`
	// Raw is the block as it was sent.
	Raw json.RawMessage `json:"-"`
}

// Text is a text composition object.
type Text struct {
	Type  string `json:"type"`
	Text  string `json:"text"`
	Emoji *bool  `json:"emoji,omitempty"`
}

// Button is an element of an actions block (a button, or another
// element with its type).
type Button struct {
	Type     string `json:"type"`
	ActionID string `json:"action_id,omitempty"`
	Text     *Text  `json:"text,omitempty"`
	Value    string `json:"value,omitempty"`
	Style    string `json:"style,omitempty"`
	URL      string `json:"url,omitempty"`
}

// ParseBlocks checks Block Kit the way Slack refuses it with
// invalid_blocks, and returns the blocks ("" problem) or what is wrong.
func ParseBlocks(raw string) ([]Block, string) {
	if raw == "" {
		return nil, ""
	}
	var list []json.RawMessage
	if err := json.Unmarshal([]byte(raw), &list); err != nil {
		return nil, "blocks must be a JSON array"
	}
	if len(list) > 50 {
		return nil, fmt.Sprintf("%d blocks, at most 50", len(list))
	}
	var out []Block
	ids := map[string]bool{}
	for i, rb := range list {
		var b struct {
			Type     string            `json:"type"`
			BlockID  string            `json:"block_id"`
			Text     json.RawMessage   `json:"text"`
			Fields   []json.RawMessage `json:"fields"`
			Elements []json.RawMessage `json:"elements"`
		}
		if err := json.Unmarshal(rb, &b); err != nil {
			return nil, fmt.Sprintf("block %d: %v", i, err)
		}
		if problem := blockID(i, b.BlockID, ids); problem != "" {
			return nil, problem
		}
		blk := Block{Type: b.Type, BlockID: b.BlockID, Raw: rb}
		switch b.Type {
		case "section":
			if b.Text == nil && len(b.Fields) == 0 {
				return nil, fmt.Sprintf("block %d: section without text or fields", i)
			}
			if b.Text != nil {
				t, problem := CheckText(b.Text, 3000, "mrkdwn", "plain_text")
				if problem != "" {
					return nil, fmt.Sprintf("block %d: section text: %s", i, problem)
				}
				blk.Text = t
			}
			if len(b.Fields) > 10 {
				return nil, fmt.Sprintf("block %d: more than 10 fields", i)
			}
			for j, fr := range b.Fields {
				if _, problem := CheckText(fr, 2000, "mrkdwn", "plain_text"); problem != "" {
					return nil, fmt.Sprintf("block %d: field %d: %s", i, j, problem)
				}
			}
		case "actions":
			if len(b.Elements) == 0 || len(b.Elements) > 25 {
				return nil, fmt.Sprintf("block %d: actions need 1 to 25 elements, not %d", i, len(b.Elements))
			}
			actionIDs := map[string]bool{}
			for j, er := range b.Elements {
				var e Button
				if err := json.Unmarshal(er, &e); err != nil {
					return nil, fmt.Sprintf("block %d: element %d: %v", i, j, err)
				}
				if e.ActionID != "" {
					if len(e.ActionID) > 255 || actionIDs[e.ActionID] {
						return nil, fmt.Sprintf("block %d: element %d: action_id %q too long or not unique in its block", i, j, e.ActionID)
					}
					actionIDs[e.ActionID] = true
				}
				if e.Type == "button" {
					var be struct {
						Text json.RawMessage `json:"text"`
					}
					_ = json.Unmarshal(er, &be)
					if be.Text == nil {
						return nil, fmt.Sprintf("block %d: button %d without text", i, j)
					}
					if _, problem := CheckText(be.Text, 75, "plain_text"); problem != "" {
						return nil, fmt.Sprintf("block %d: button %d text: %s", i, j, problem)
					}
					if utf8.RuneCountInString(e.Value) > 2000 {
						return nil, fmt.Sprintf("block %d: button %d value over 2000 characters", i, j)
					}
					if e.Style != "" && e.Style != "primary" && e.Style != "danger" {
						return nil, fmt.Sprintf("block %d: button %d style %q", i, j, e.Style)
					}
				}
				blk.Buttons = append(blk.Buttons, e)
			}
		case "header":
			if _, problem := CheckText(b.Text, 150, "plain_text"); problem != "" {
				return nil, fmt.Sprintf("block %d: header text: %s", i, problem)
			}
		case "context":
			if len(b.Elements) == 0 || len(b.Elements) > 10 {
				return nil, fmt.Sprintf("block %d: context needs 1 to 10 elements", i)
			}
		case "divider", "image", "rich_text", "markdown", "file", "video", "input":
		default:
			return nil, fmt.Sprintf("block %d: unknown block type %q", i, b.Type)
		}
		out = append(out, blk)
	}
	return out, ""
}

// CheckText checks a text composition object.
func CheckText(raw json.RawMessage, maxLen int, types ...string) (*Text, string) {
	if raw == nil {
		return nil, "missing"
	}
	var t Text
	if err := json.Unmarshal(raw, &t); err != nil {
		return nil, err.Error()
	}
	typeOK := false
	for _, ty := range types {
		typeOK = typeOK || t.Type == ty
	}
	n := utf8.RuneCountInString(t.Text)
	switch {
	case !typeOK:
		return nil, fmt.Sprintf("type %q, want one of %v", t.Type, types)
	case t.Type == "mrkdwn" && t.Emoji != nil:
		return nil, "emoji is not allowed on mrkdwn"
	case n == 0:
		return nil, "empty text"
	case n > maxLen:
		return nil, fmt.Sprintf("%d characters, at most %d", n, maxLen)
	}
	return &t, ""
}

// Raws are the blocks as they were sent.
func Raws(blocks []Block) []json.RawMessage {
	out := []json.RawMessage{}
	for _, b := range blocks {
		out = append(out, b.Raw)
	}
	return out
}

// Values are the values of the blocks' buttons, in order.
func Values(blocks []Block) []string {
	var out []string
	for _, b := range blocks {
		for _, e := range b.Buttons {
			if e.Type == "button" {
				out = append(out, e.Value)
			}
		}
	}
	return out
}

// MaxText is how many characters a message's text may have.
const MaxText = 40000

// CheckMessage checks a message's text and its (checked) blocks as Slack
// does: one of them is required, and text is at most MaxText characters.
// It returns Slack's error code and a detail, or "" when they are fine.
func CheckMessage(text string, blocks []Block) (code, detail string) {
	switch n := utf8.RuneCountInString(text); {
	case strings.TrimSpace(text) == "" && len(blocks) == 0:
		return "no_text", ""
	case n > MaxText:
		return "msg_too_long", strconv.Itoa(n) + " characters"
	}
	return "", ""
}

// blockID checks the block_id of block i, when it has one: at most 255
// characters and not among ids, the block_ids seen so far.
func blockID(i int, id string, ids map[string]bool) string {
	if id == "" {
		return ""
	}
	if len(id) > 255 || ids[id] {
		return fmt.Sprintf("block %d: block_id %q too long or not unique", i, id)
	}
	ids[id] = true
	return ""
}
