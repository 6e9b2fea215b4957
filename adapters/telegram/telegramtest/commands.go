package telegramtest

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"

	"github.com/gatehouse/gatehouse/adapters/adaptertest"
	"github.com/gatehouse/gatehouse/adapters/telegram/telegramtest/tgcommands"
)

// ---- bot commands ----

// TelegramCommand is a command the bot registered with setMyCommands.
type TelegramCommand = tgcommands.Command

// commandWait is how long Command waits for the bot's answer.
const commandWait = 10 * time.Second

// commandKey reads scope and language_code into the key a list of
// commands is kept under (tgcommands.Key).
func commandKey(p tgParams) (string, *tgErr) {
	key, refusal := tgcommands.Key(p["scope"], p["language_code"])
	if refusal != "" {
		return "", badRequest("%s", refusal)
	}
	return key, nil
}

func (f *TelegramFake) setMyCommands(p tgParams) (any, *tgErr) {
	key, e := commandKey(p)
	if e != nil {
		return nil, e
	}
	list, refusal := tgcommands.Parse(p["commands"])
	if refusal != "" {
		return nil, badRequest("%s", refusal)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.commandCalls++
	if len(list) == 0 {
		delete(f.commands, key)
	} else {
		f.commands[key] = list
	}
	return true, nil
}

func (f *TelegramFake) getMyCommands(p tgParams) (any, *tgErr) {
	key, e := commandKey(p)
	if e != nil {
		return nil, e
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	out := slices.Clone(f.commands[key])
	if out == nil {
		out = []TelegramCommand{}
	}
	return out, nil
}

func (f *TelegramFake) deleteMyCommands(p tgParams) (any, *tgErr) {
	key, e := commandKey(p)
	if e != nil {
		return nil, e
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.commands, key)
	return true, nil
}

// Commands are the names of the commands the bot registered for every
// chat (the default scope, no language), in its order.
func (f *TelegramFake) Commands() []string {
	return commandNames(f.TelegramCommands())
}

// TelegramCommands are the commands the bot registered for every chat
// (the default scope, no language), with their descriptions.
func (f *TelegramFake) TelegramCommands() []TelegramCommand {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.commands["default|"])
}

// CommandRegistrations counts the setMyCommands calls the fake accepted.
func (f *TelegramFake) CommandRegistrations() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.commandCalls
}

func commandNames(list []TelegramCommand) []string {
	var out []string
	for _, c := range list {
		out = append(out, c.Command)
	}
	return out
}

// SayCommand makes user send text, which starts with a command ("/grants",
// "/grants@gatehouse_bot now"), in chat as Telegram's clients send it: with
// a bot_command entity over the command at offset 0. It returns the
// update's id.
func (f *TelegramFake) SayCommand(chat, user, text string) string {
	upd, _ := f.sayCommand(chat, user, text)
	return upd
}

func (f *TelegramFake) sayCommand(chat, user, text string) (update string, msgID int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	word, _, _ := strings.Cut(text, " ")
	if !strings.HasPrefix(word, "/") || len(word) < 2 {
		f.t.Fatalf("telegram fake: %q does not start with a command", text)
	}
	c := f.chat(chat)
	j := f.userMessage(c, user, false, 0)
	msgID = j["message_id"].(int)
	entity := tgEntity{Type: "bot_command", Offset: 0, Length: len(utf16.Encode([]rune(word)))}
	j["text"], j["entities"] = text, []tgEntity{entity}
	m := c.byID[msgID]
	m.Text, m.entities = text, []tgEntity{entity}
	return f.queueMessage(c, j), msgID
}

// Command sends "/name" as user in chat (see SayCommand) and returns the
// bot's answer: its message in chat replying to the command, waited for
// up to 10 s. A command the bot answers with nothing (a stranger's) is an
// error once the wait is over.
func (f *TelegramFake) Command(chat, user, name string) (adaptertest.Message, error) {
	return f.CommandArgs(chat, user, name, "")
}

// CommandArgs is Command with args typed after the name ("/model o3").
func (f *TelegramFake) CommandArgs(chat, user, name, args string) (adaptertest.Message, error) {
	if name == "" || strings.ContainsAny(name, " /@") {
		return adaptertest.Message{}, fmt.Errorf("telegram fake: %q is not a command name", name)
	}
	text := "/" + name
	if args = strings.TrimSpace(args); args != "" {
		text += " " + args
	}
	upd, id := f.sayCommand(chat, user, text)
	deadline := time.NewTimer(commandWait)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		for _, m := range f.TelegramMessages(chat) {
			if m.ReplyTo == id {
				return toMessage(m), nil
			}
		}
		select {
		case <-tick.C:
		case <-deadline.C:
			return adaptertest.Message{}, fmt.Errorf("telegram fake: no answer to /%s (update %s, acknowledged %v) within %s", name, upd, f.Acked(upd), commandWait)
		case <-f.closed:
			return adaptertest.Message{}, errors.New("telegram fake: closed")
		}
	}
}

// toMessage is a bot message as the shared suite sees it.
func toMessage(m TelegramMessage) adaptertest.Message {
	msg := adaptertest.Message{ID: strconv.Itoa(m.ID), Text: m.Text, Edited: m.Edited}
	for _, row := range m.Buttons {
		for _, b := range row {
			if b.Data != "" {
				msg.Buttons = append(msg.Buttons, b.Data)
			}
		}
	}
	return msg
}
