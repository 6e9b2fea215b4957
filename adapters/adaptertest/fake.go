package adaptertest

import "github.com/gatehouse/gatehouse/gateway/chat"

// Fake is a platform's fake server as the shared suite drives it. Each
// platform's fake (telegramtest, discordtest and slacktest, beside their
// adapters) is a real server on loopback speaking the platform's wire
// protocol, strict about what the real platform refuses; Fake is the
// suite's handle on it.
//
// Users and chats are named by handles ("alice", "room"); the fake maps
// them to ids of the platform's shape (Telegram's integers, Discord's
// snowflakes, Slack's U…/C…) and keeps the mapping stable.
type Fake interface {
	// UserID is the platform id of the user with this handle, as it will
	// appear in gh.Inbound.UserID (what allow-lists name).
	UserID(handle string) string
	// ChatID is the platform id of the chat with this handle (what
	// GATEHOUSE_APPROVAL_CHAT names), creating the chat.
	ChatID(handle string) string
	// Say makes user send text in chat as a new update and returns the
	// update's id (gh.Inbound.UpdateID). bot marks the sender as a bot.
	Say(chat, user, text string, bot bool) (updateID string)
	// SayUnsupported sends an update with no text (a sticker, a file).
	SayUnsupported(chat, user string) (updateID string)
	// Redeliver delivers the update with this id again, as the platform
	// does when it was not acknowledged.
	Redeliver(updateID string)
	// Acked reports whether the platform saw the update acknowledged
	// (200 to a webhook, the polling offset moved past it, a socket ack).
	Acked(updateID string) bool
	// Messages returns the bot's messages in chat, oldest first, as they
	// look now (after edits).
	Messages(chat string) []Message
	// Press presses the button whose data is data on the bot's message
	// msgID in chat, as user, and returns what the platform showed the
	// presser (the callback answer, the interaction response's text).
	Press(chat, msgID, data, user string) (reply string, err error)
	// DenyWithReason presses the "Deny with reason…" button whose data is
	// data on the bot's message msgID in chat, as user, and when the
	// platform then asks for the reason (Telegram: a ForceReply message
	// to reply to; Slack: a modal opened with views.open; Discord: a
	// modal interaction response) gives reason as the user would. It
	// returns what the user was shown last: the press's answer when no
	// reason was asked for, else the answer to the reason ("" when there
	// was none to show).
	DenyWithReason(chat, msgID, data, user, reason string) (reply string, err error)
	// Command sends the chat command name (without its slash: "grants")
	// as user in chat the way the platform does (Telegram: a message
	// "/grants" with its bot_command entity; Slack and Discord: a slash
	// command, which the fake refuses unless the adapter registered it
	// where the platform registers commands at run time) and returns the
	// answer the user is shown, with an ID the fake's Press accepts (an
	// answer only its user sees included).
	Command(chat, user, name string) (reply Message, err error)
	// CommandArgs is Command with args after the name, as the platform
	// takes them (Telegram: the message "/model o3"; Slack: the slash
	// command's text; Discord: the command's first option).
	CommandArgs(chat, user, name, args string) (reply Message, err error)
	// Errors lists requests the fake refused as the real platform would
	// (bad parameters, unknown chat, wrong token): a passing suite has none.
	Errors() []string
}

// Message is one message the bot sent, as the platform holds it.
type Message struct {
	ID   string
	Text string
	// Buttons are the data of the message's buttons; empty once a card
	// has been edited to its outcome.
	Buttons []string
	Edited  bool
}

// Factory starts a platform's fake and an adapter aimed at it. The
// adapter must be fully configured (token, URLs); the suite starts its
// connection through the gateway.
type Factory func(t TB) (chat.Adapter, Fake)

// TB is the part of testing.TB the factories need.
type TB interface {
	Helper()
	Cleanup(func())
	Fatalf(format string, args ...any)
	Errorf(format string, args ...any)
	Logf(format string, args ...any)
	TempDir() string
}
