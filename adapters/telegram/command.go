package telegram

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf16"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/gateway/chat"
	"github.com/gatehouse/gatehouse/internal/backoff"
)

// Chat commands. A message whose text starts with a bot_command entity
// naming one of commands ("/grants", or "/grants@<this bot>") goes to
// Sink.Command instead of Sink.Receive; a command addressed to another
// bot ("/grants@otherbot"), or any command the gateway does not answer,
// is an ordinary message. Connect registers commands with setMyCommands,
// so that clients offer them.

// commands are the commands the adapter hands to Sink.Command, with the
// description clients show beside them.
var commands = []models.BotCommand{
	{Command: chat.CommandGrants, Description: "List this chat's grants and revoke them"},
	{Command: chat.CommandLibrary, Description: "Add a file (as its caption, or replying to it) to this chat's library"},
	{Command: chat.CommandModel, Description: "Show this chat's model and the ones it may pick; /model <name> picks one"},
	{Command: chat.CommandThink, Description: "Show or set this chat's thinking level: off, low, medium, high"},
	{Command: chat.CommandTimeZone, Description: "Set your time zone (/tz Europe/Berlin), or show it"},
}

// botCommand is a command a message starts with.
type botCommand struct {
	// name is the command without its slash, lower case ("grants").
	name string
	// target is the bot it is addressed to ("/grants@name"), "" when none.
	target string
	// args is what follows the command, trimmed.
	args string
}

// commandOf reads the command message m starts with: a bot_command entity
// at offset 0 that names one of commands, in its text or, for a document
// sent with a caption, its caption. nil for anything else.
func commandOf(m *models.Message) *botCommand {
	if m == nil {
		return nil
	}
	text, entities := m.Text, m.Entities
	if text == "" {
		text, entities = m.Caption, m.CaptionEntities
	}
	if text == "" {
		return nil
	}
	for _, e := range entities {
		if e.Type != models.MessageEntityTypeBotCommand || e.Offset != 0 {
			continue
		}
		word, rest, ok := cutUTF16(text, e.Length)
		if !ok || !strings.HasPrefix(word, "/") {
			return nil
		}
		name, target, _ := strings.Cut(word[1:], "@")
		name = strings.ToLower(name)
		for _, c := range commands {
			if c.Command == name {
				return &botCommand{name: name, target: target, args: strings.TrimSpace(rest)}
			}
		}
		return nil
	}
	// "!library", as Slack and Discord take it, or a "/library" that
	// came without its entity (a client that sent plain text).
	if args, ok := chat.LibraryCommand(text); ok {
		return &botCommand{name: chat.CommandLibrary, args: args}
	}
	return nil
}

// cutUTF16 splits s after its first n UTF-16 code units, as Telegram
// counts entity offsets and lengths; ok is false when n does not fall on
// a character boundary within s.
func cutUTF16(s string, n int) (head, tail string, ok bool) {
	if n <= 0 {
		return "", s, false
	}
	units := 0
	for i, r := range s {
		if units == n {
			return s[:i], s[i:], true
		}
		if units > n {
			return "", s, false
		}
		if l := utf16.RuneLen(r); l > 0 {
			units += l
		} else {
			units++
		}
	}
	if units == n {
		return s, "", true
	}
	return "", s, false
}

// self is the bot's username, learnt from getMe the first time a command
// names a bot, then kept.
type self struct {
	mu       sync.Mutex
	username string
}

// addressedToUs reports whether a command's target names this bot: no
// target does (Telegram shows "/grants" to every bot of the chat, and a
// private chat has one bot). Usernames compare without case, as on
// Telegram. An error (getMe failed) means the update must come again.
func (a *Adapter) addressedToUs(ctx context.Context, target string) (bool, error) {
	if target == "" {
		return true, nil
	}
	name, err := a.username(ctx)
	if err != nil {
		return false, err
	}
	return strings.EqualFold(target, name), nil
}

// username is the bot's username (getMe, once it succeeds).
func (a *Adapter) username(ctx context.Context) (string, error) {
	a.me.mu.Lock()
	defer a.me.mu.Unlock()
	if a.me.username != "" {
		return a.me.username, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	u, err := a.bot.GetMe(ctx)
	if err != nil {
		return "", fmt.Errorf("telegram: getMe: %w", err)
	}
	if u.Username == "" {
		return "", errors.New("telegram: getMe: the bot has no username")
	}
	a.me.username = u.Username
	return u.Username, nil
}

// handleCommand hands a command to sink and, unless the sink refused it
// or answered it before (a redelivery), answers it in the chat: a reply
// to the command, in its topic, with the answer's buttons. The update may
// be acknowledged once Command returned nil; a failed answer is logged,
// not retried (the command is logged, and the user can ask again).
func (a *Adapter) handleCommand(ctx context.Context, sink chat.Sink, updateID int64, in gh.Inbound, c *botCommand) error {
	in.Text = c.args
	reply, err := sink.Command(ctx, c.name, in)
	if err != nil {
		return fmt.Errorf("telegram: command /%s (update %d): %w", c.name, updateID, err)
	}
	if reply.Refused || reply.Duplicate {
		return nil
	}
	if strings.TrimSpace(reply.Text) == "" {
		a.log.Warn("telegram: a command's answer has no text; nothing sent", "command", c.name, "update", updateID)
		return nil
	}
	if _, err := a.sendCommandReply(ctx, in, reply); err != nil {
		a.log.Warn("telegram: could not answer a command", "command", c.name, "update", updateID, "chat", in.ChatID, "err", err)
	}
	return nil
}

// sendCommandReply sends reply (plain text, escaped here) to in's chat
// and topic as a reply to in's message, with reply.Buttons.
func (a *Adapter) sendCommandReply(ctx context.Context, in gh.Inbound, reply chat.CommandReply) (*models.Message, error) {
	chat, err := chatID(in.ChatID)
	if err != nil {
		return nil, err
	}
	p := &bot.SendMessageParams{
		ChatID:             chat,
		Text:               FormatLiteral(truncate(reply.Text, maxText)),
		ParseMode:          models.ParseModeHTML,
		LinkPreviewOptions: noPreview(),
	}
	if n, err := strconv.Atoi(in.ThreadID); err == nil && n > 0 {
		p.MessageThreadID = n
	}
	if n, err := strconv.Atoi(in.MessageID); err == nil && n > 0 {
		p.ReplyParameters = &models.ReplyParameters{MessageID: n, AllowSendingWithoutReply: true}
	}
	if len(reply.Buttons) > 0 {
		p.ReplyMarkup = keyboard(reply.Buttons)
	}
	return a.bot.SendMessage(ctx, p)
}

// registerCommands calls setMyCommands (the default scope: every chat)
// until it succeeds or ctx ends, waiting longer after each failure. A
// refusal of the request itself (400) cannot change by asking again: it
// is logged and registration given up; commands still work when typed.
func (a *Adapter) registerCommands(ctx context.Context) {
	wait := registerPolicy.New()
	for ctx.Err() == nil {
		_, err := a.bot.SetMyCommands(ctx, &bot.SetMyCommandsParams{Commands: commands})
		if err == nil {
			a.log.Debug("telegram: commands registered", "commands", len(commands))
			return
		}
		if ctx.Err() != nil {
			return
		}
		if errors.Is(err, bot.ErrorBadRequest) {
			a.log.Error("telegram: setMyCommands refused; commands are not offered by clients (they still work when typed)", "err", err)
			return
		}
		a.log.Error("telegram: setMyCommands failed", "err", err)
		d := wait.Next()
		var tooMany *bot.TooManyRequestsError
		if errors.As(err, &tooMany) {
			d = max(d, time.Duration(tooMany.RetryAfter)*time.Second)
		}
		backoff.Sleep(ctx, d)
	}
}
