package telegramtest

import (
	"encoding/json"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/gatehouse/gatehouse/adapters/telegram/telegramtest/tghtml"
)

// ---- text and markup ----

// parseText reads text and parse_mode as Telegram does: the text the user
// will see (trimmed), its entities, or Telegram's refusal.
func parseText(p tgParams) (string, []tgEntity, *tgErr) {
	src := p["text"]
	var text string
	var entities []tgEntity
	switch mode := p["parse_mode"]; strings.ToLower(mode) {
	case "":
		text = src
	case "html":
		var err error
		text, entities, err = tghtml.Parse(src)
		if err != nil {
			return "", nil, badRequest("can't parse entities: %v", err)
		}
	default:
		return "", nil, badRequest("fake: parse_mode %q is not modelled (only HTML)", mode)
	}
	trimmed := strings.TrimSpace(text)
	if trimmed == "" {
		return "", nil, badRequest("message text is empty")
	}
	if lead := len(utf16.Encode([]rune(text[:strings.Index(text, trimmed)]))); lead > 0 {
		for i := range entities {
			entities[i].Offset -= lead
		}
	}
	if utf8.RuneCountInString(trimmed) > 4096 {
		return "", nil, badRequest("message is too long")
	}
	return trimmed, entities, nil
}

// forceReply is ForceReply markup: the client opens a reply to the
// message, as if the user had chosen "Reply".
type forceReply struct {
	ForceReply            bool   `json:"force_reply"`
	InputFieldPlaceholder string `json:"input_field_placeholder"`
	Selective             bool   `json:"selective"`
}

// parseForceReply reads reply_markup as ForceReply; ok is false when it is
// another kind of markup. force_reply must be True, a placeholder 1-64
// characters.
func parseForceReply(raw string) (forceReply, bool, *tgErr) {
	var markup map[string]json.RawMessage
	if err := json.Unmarshal([]byte(raw), &markup); err != nil {
		return forceReply{}, false, badRequest("can't parse reply keyboard markup JSON object")
	}
	if _, ok := markup["force_reply"]; !ok {
		return forceReply{}, false, nil
	}
	var fr forceReply
	if err := json.Unmarshal([]byte(raw), &fr); err != nil || !fr.ForceReply {
		return forceReply{}, true, badRequest("can't parse reply keyboard markup JSON object")
	}
	if _, ok := markup["input_field_placeholder"]; ok && (fr.InputFieldPlaceholder == "" || utf8.RuneCountInString(fr.InputFieldPlaceholder) > 64) {
		return forceReply{}, true, badRequest("can't parse reply keyboard markup JSON object")
	}
	return fr, true, nil
}

// parseKeyboard reads reply_markup, which must be an inline keyboard.
func parseKeyboard(raw string) ([][]TelegramButton, *tgErr) {
	var markup map[string]json.RawMessage
	if err := json.Unmarshal([]byte(raw), &markup); err != nil {
		return nil, badRequest("can't parse reply keyboard markup JSON object")
	}
	kb, ok := markup["inline_keyboard"]
	if !ok {
		return nil, badRequest("fake: only inline keyboards are modelled")
	}
	var rows [][]map[string]json.RawMessage
	if err := json.Unmarshal(kb, &rows); err != nil {
		return nil, badRequest("can't parse inline keyboard button: InlineKeyboardButton must be an Object")
	}
	out := make([][]TelegramButton, 0, len(rows))
	for _, row := range rows {
		var r []TelegramButton
		for _, fields := range row {
			b, e := parseButton(fields)
			if e != nil {
				return nil, e
			}
			r = append(r, b)
		}
		if len(r) > 0 {
			out = append(out, r)
		}
	}
	return out, nil
}

func parseButton(fields map[string]json.RawMessage) (TelegramButton, *tgErr) {
	var b TelegramButton
	if err := json.Unmarshal(fields["text"], &b.Text); err != nil {
		return b, badRequest("can't parse inline keyboard button: Field \"text\" must be of type String")
	}
	if strings.TrimSpace(b.Text) == "" {
		return b, badRequest("BUTTON_TEXT_INVALID")
	}
	actions := 0
	if raw, ok := fields["copy_text"]; ok {
		var ct struct {
			Text string `json:"text"`
		}
		if json.Unmarshal(raw, &ct) != nil || ct.Text == "" || utf8.RuneCountInString(ct.Text) > 256 {
			return b, badRequest("BUTTON_COPY_TEXT_INVALID")
		}
		actions++
	}
	if raw, ok := fields["callback_data"]; ok {
		if json.Unmarshal(raw, &b.Data) != nil || b.Data == "" || len(b.Data) > 64 {
			return b, badRequest("BUTTON_DATA_INVALID")
		}
		actions++
	}
	if raw, ok := fields["url"]; ok {
		if json.Unmarshal(raw, &b.URL) != nil || b.URL == "" {
			return b, badRequest("BUTTON_URL_INVALID")
		}
		actions++
	}
	for _, k := range []string{"web_app", "login_url", "switch_inline_query", "switch_inline_query_current_chat",
		"switch_inline_query_chosen_chat", "callback_game", "pay"} {
		if _, ok := fields[k]; ok {
			actions++
		}
	}
	if actions == 0 {
		return b, badRequest("can't parse inline keyboard button: Text buttons are unallowed in the inline keyboard")
	}
	if raw, ok := fields["style"]; ok {
		if json.Unmarshal(raw, &b.Style) != nil || (b.Style != "primary" && b.Style != "success" && b.Style != "danger") {
			return b, badRequest("can't parse inline keyboard button: unsupported button style")
		}
	}
	return b, nil
}

// tgEntity is a message entity as Telegram reports it (UTF-16 offsets).
type tgEntity = tghtml.Entity

// TelegramHTMLText is what a user sees for s sent with parse_mode HTML
// (before Telegram trims white space), or why Telegram refuses s: the
// description after "can't parse entities: ".
func TelegramHTMLText(s string) (string, error) {
	text, _, err := tghtml.Parse(s)
	return text, err
}
