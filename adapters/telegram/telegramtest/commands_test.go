package telegramtest_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/gatehouse/gatehouse/adapters/telegram/telegramtest"
)

// setMyCommands is as strict as Telegram: names of 1-32 lowercase
// letters, digits and underscores, descriptions of 1-256 characters, at
// most 100 commands; each refusal is recorded.
func TestTelegramFakeSetMyCommands(t *testing.T) {
	f := telegramtest.NewTelegram(t, telegramtest.TelegramOptions{})
	cmd := func(name, desc string) map[string]any { return map[string]any{"command": name, "description": desc} }
	many := make([]map[string]any, 101)
	for i := range many {
		many[i] = cmd("c"+strings.Repeat("x", i%20), "d")
	}
	for name, tc := range map[string]struct {
		commands any
		want     string
	}{
		"upper case":        {[]any{cmd("Grants", "d")}, "Bad Request: BOT_COMMAND_INVALID"},
		"slash":             {[]any{cmd("/grants", "d")}, "Bad Request: BOT_COMMAND_INVALID"},
		"empty name":        {[]any{cmd("", "d")}, "Bad Request: BOT_COMMAND_INVALID"},
		"33 characters":     {[]any{cmd(strings.Repeat("a", 33), "d")}, "Bad Request: BOT_COMMAND_INVALID"},
		"hyphen":            {[]any{cmd("my-grants", "d")}, "Bad Request: BOT_COMMAND_INVALID"},
		"empty description": {[]any{cmd("grants", " ")}, "Bad Request: command description must be non-empty"},
		"long description":  {[]any{cmd("grants", strings.Repeat("é", 257))}, "Bad Request: BOT_COMMAND_DESCRIPTION_INVALID"},
		"no description":    {[]any{map[string]any{"command": "grants"}}, `Bad Request: can't parse BotCommand: Can't find field "description"`},
		"not a list":        {"grants", "Bad Request: can't parse commands JSON object"},
		"101 commands":      {many, "Bad Request: too many commands specified"},
	} {
		code, r := call(t, f, f.Token, "setMyCommands", map[string]any{"commands": tc.commands})
		if code != 400 || r.Description != tc.want {
			t.Errorf("%s: %d %q, want 400 %q", name, code, r.Description, tc.want)
		}
	}
	if n := len(f.Errors()); n != 10 {
		t.Fatalf("refusals recorded: %q", f.Errors())
	}
	if len(f.Commands()) != 0 || f.CommandRegistrations() != 0 {
		t.Fatalf("a refused list was kept: %v", f.Commands())
	}

	// The library's call (multipart, commands as JSON), then getMyCommands.
	b := newBot(t, f)
	ctx := context.Background()
	ok, err := b.SetMyCommands(ctx, &bot.SetMyCommandsParams{Commands: []models.BotCommand{
		{Command: "grants", Description: "List this chat's grants"}, {Command: "a_1", Description: strings.Repeat("é", 256)},
	}})
	if err != nil || !ok {
		t.Fatalf("setMyCommands: %v %v", ok, err)
	}
	if got := f.Commands(); !slices.Equal(got, []string{"grants", "a_1"}) {
		t.Fatalf("commands %v", got)
	}
	list, err := b.GetMyCommands(ctx, &bot.GetMyCommandsParams{})
	if err != nil || len(list) != 2 || list[0].Command != "grants" || list[0].Description != "List this chat's grants" {
		t.Fatalf("getMyCommands: %+v %v", list, err)
	}
	// Another scope is kept apart from every chat's list.
	code, _ := call(t, f, f.Token, "setMyCommands", map[string]any{"commands": []any{cmd("other", "d")}, "scope": map[string]any{"type": "all_group_chats"}})
	if code != 200 || !slices.Equal(f.Commands(), []string{"grants", "a_1"}) {
		t.Fatalf("a scoped list: %d %v", code, f.Commands())
	}
	if code, r := call(t, f, f.Token, "setMyCommands", map[string]any{"commands": []any{cmd("x", "d")}, "scope": map[string]any{"type": "chat"}}); code != 400 {
		t.Fatalf("a chat scope without chat_id: %d %+v", code, r)
	}
	// An empty list removes the commands.
	if ok, err := b.DeleteMyCommands(ctx, &bot.DeleteMyCommandsParams{}); err != nil || !ok || len(f.Commands()) != 0 {
		t.Fatalf("deleteMyCommands: %v %v %v", ok, err, f.Commands())
	}
}

// A command is a message with a bot_command entity over the command, as
// Telegram's clients send it.
func TestTelegramFakeSayCommand(t *testing.T) {
	f := telegramtest.NewTelegram(t, telegramtest.TelegramOptions{})
	up := f.SayCommand("group-ops", "alice", "/grants@gatehouse_bot now")
	_, r := call(t, f, f.Token, "getUpdates", map[string]any{})
	var ups []struct {
		ID      int64 `json:"update_id"`
		Message struct {
			Text     string `json:"text"`
			Entities []struct {
				Type   string `json:"type"`
				Offset int    `json:"offset"`
				Length int    `json:"length"`
			} `json:"entities"`
		} `json:"message"`
	}
	if err := json.Unmarshal(r.Result, &ups); err != nil || len(ups) != 1 {
		t.Fatalf("updates %s: %v", r.Result, err)
	}
	m := ups[0].Message
	if m.Text != "/grants@gatehouse_bot now" || len(m.Entities) != 1 || m.Entities[0].Type != "bot_command" ||
		m.Entities[0].Offset != 0 || m.Entities[0].Length != len("/grants@gatehouse_bot") || up == "" {
		t.Fatalf("command message %+v", m)
	}
}
