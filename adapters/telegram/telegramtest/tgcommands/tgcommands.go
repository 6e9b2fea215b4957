// Package tgcommands is how the Telegram fake reads setMyCommands and
// its kin as Telegram does: a command scope and language into the key a
// list is kept under, a list of commands with Telegram's own refusals.
package tgcommands

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Command is a command the bot registered with setMyCommands.
type Command struct {
	Command     string `json:"command"`
	Description string `json:"description"`
}

// maxCommands is how many commands one scope and language can hold.
const maxCommands = 100

// commandScopes are the BotCommandScope types, with the fields each needs.
var commandScopes = map[string][]string{
	"default":                 nil,
	"all_private_chats":       nil,
	"all_group_chats":         nil,
	"all_chat_administrators": nil,
	"chat":                    {"chat_id"},
	"chat_administrators":     {"chat_id"},
	"chat_member":             {"chat_id", "user_id"},
}

// Key reads scope and language_code into the key a list of
// commands is kept under: "default" and "" when absent.
func Key(raw, lang string) (key, refusal string) {
	scope := "default"
	if strings.TrimSpace(raw) != "" {
		var s map[string]json.RawMessage
		if err := json.Unmarshal([]byte(raw), &s); err != nil {
			return "", "can't parse BotCommandScope JSON object"
		}
		var typ string
		if err := json.Unmarshal(s["type"], &typ); err != nil {
			return "", "can't parse BotCommandScope: Can't find field \"type\""
		}
		need, ok := commandScopes[typ]
		if !ok {
			return "", fmt.Sprintf("unsupported bot command scope type %q", typ)
		}
		scope = typ
		for _, field := range need {
			v, ok := s[field]
			if !ok {
				return "", fmt.Sprintf("can't parse BotCommandScope: Can't find field %q", field)
			}
			scope += ":" + strings.Trim(string(v), `"`)
		}
	}
	if lang != "" && (len(lang) != 2 || strings.ToLower(lang) != lang || strings.Trim(lang, "abcdefghijklmnopqrstuvwxyz") != "") {
		return "", "invalid language code specified"
	}
	return scope + "|" + lang, ""
}

// valid reports whether s is a command name Telegram takes: 1-32
// characters, lowercase English letters, digits and underscores.
func valid(s string) bool {
	if len(s) == 0 || len(s) > 32 {
		return false
	}
	for _, r := range s {
		if r != '_' && (r < 'a' || r > 'z') && (r < '0' || r > '9') {
			return false
		}
	}
	return true
}

// Parse reads setMyCommands' commands parameter as Telegram does: the
// list, or Telegram's refusal. Empty is an empty list.
func Parse(raw string) (list []Command, refusal string) {
	// Without commands, the list is set empty (Telegram's answer to a
	// request that forgot the parameter).
	if strings.TrimSpace(raw) != "" {
		var objs []map[string]json.RawMessage
		if err := json.Unmarshal([]byte(raw), &objs); err != nil {
			return nil, "can't parse commands JSON object"
		}
		if len(objs) > maxCommands {
			return nil, "too many commands specified"
		}
		for _, o := range objs {
			var c Command
			for _, fd := range []struct {
				field string
				dst   *string
			}{{"command", &c.Command}, {"description", &c.Description}} {
				field, dst := fd.field, fd.dst
				v, ok := o[field]
				if !ok {
					return nil, fmt.Sprintf("can't parse BotCommand: Can't find field %q", field)
				}
				if err := json.Unmarshal(v, dst); err != nil {
					return nil, fmt.Sprintf("can't parse BotCommand: Field %q must be of type String", field)
				}
			}
			if !valid(c.Command) {
				return nil, "BOT_COMMAND_INVALID"
			}
			desc := strings.TrimSpace(c.Description)
			if desc == "" {
				return nil, "command description must be non-empty"
			}
			if utf8.RuneCountInString(desc) > 256 {
				return nil, "BOT_COMMAND_DESCRIPTION_INVALID"
			}
			c.Description = desc
			list = append(list, c)
		}
	}
	return list, ""
}
