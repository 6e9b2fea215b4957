package chat

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode"

	gh "github.com/gatehouse/gatehouse"
)

// Adapter is one platform's client. It turns the platform's updates into
// [gh.Inbound] and [gh.Press] for a [Sink], and sends what the dispatcher
// asks it to. An adapter never decides anything: the gateway does.
type Adapter interface {
	// Platform is the platform's name (gh.PlatformTelegram…).
	Platform() string
	// Limits says how long a message may be and how fast the platform
	// lets a bot send.
	Limits() Limits
	// Format renders answer text (Markdown-ish, tables already turned into
	// lines) in the platform's markup, escaped so that nothing in it is
	// read as markup by accident.
	Format(text string) string
	// Connect holds the platform's single inbound connection (Telegram
	// long polling, the Discord gateway, Slack Socket Mode) and hands
	// every update to sink until ctx ends. An adapter in webhook mode has
	// no connection and returns nil when ctx ends. Only the replica that
	// holds the platform's lease calls it.
	Connect(ctx context.Context, sink Sink) error
	// Handler serves the platform's webhook, or is nil when the adapter
	// has none in its configured mode. Any replica may serve it.
	Handler(sink Sink) http.Handler
	// Send delivers one message (or a card with buttons) and returns the
	// platform's id for it. Errors are *SendError when the platform said
	// something the dispatcher should act on (a 429, a refused request).
	Send(ctx context.Context, m Outgoing) (messageID string, err error)
	// EditCard rewrites a sent card to card (its outcome, no buttons).
	EditCard(ctx context.Context, addr gh.Address, messageID string, card Card) error
}

// Drainer is an Adapter whose webhook handler starts work that outlives
// its request (Discord's deferred interaction answers). The gateway's Stop
// waits for it with Drain — after the HTTP server stopped taking requests,
// before the gateway's own commits end — so the run group owns that work
// too.
type Drainer interface {
	Drain(ctx context.Context) error
}

// Sink is what adapters hand updates to; the gateway is one.
type Sink interface {
	// Receive commits an update. The adapter acknowledges the platform
	// only after Receive returns nil: a nil error means the update is in
	// the receive log (handed on or dropped, with its reason; a malformed
	// update is dropped as unsupported). An error means a retry can help
	// (the database is unavailable): the adapter must not acknowledge, so
	// the platform redelivers.
	Receive(ctx context.Context, in gh.Inbound) (ReceiveResult, error)
	// Press records a button press on an approval card: the first press
	// on any surface decides, later ones hear the decision made. Presses
	// that cannot count (forged data, a stranger, a choice that does not
	// fit) are answered with text; an error means a retry can help.
	Press(ctx context.Context, p gh.Press) (PressResult, error)
	// Command answers a chat command (Telegram's "/grants", a Slack or
	// Discord slash command): name without its slash, in the update that
	// carried it (in.Text holds what followed the name). The update is
	// logged in the receive log, never handed on to the agent. An error
	// means a retry can help.
	Command(ctx context.Context, name string, in gh.Inbound) (CommandReply, error)
	// Health reports what one round trip to the platform showed: nil
	// after one succeeded (the auth check, a poll that answered, a
	// socket's hello or heartbeat ack), the error after one failed. The
	// platform's state (/v1/adapters, /admin, the metrics) comes from
	// this evidence: connected only after a round trip succeeded, never
	// merely because Connect runs. Wrap a refused token with
	// [TokenRefused] so the state says so and the retries slow down.
	// It is cheap and does no I/O: call it after every round trip.
	Health(ctx context.Context, platform string, err error)
}

// Prober is an Adapter with a cheap authenticated call (Telegram getMe,
// Slack auth.test, Discord GET /users/@me). The gateway calls it before
// Connect — a refused token is then known before any connection is
// tried — and now and then while it holds the platform and has heard
// nothing, so a quiet platform or one in webhook mode still shows its
// state. A refused token is returned wrapped with [TokenRefused].
type Prober interface {
	Probe(ctx context.Context) error
}

// WebhookProber is an Adapter in webhook mode that can ask the platform
// whether it still delivers to us (Telegram getWebhookInfo): nil when the
// webhook is registered at our URL and its last delivery did not fail.
// The Test's receiving step uses it.
type WebhookProber interface {
	ProbeWebhook(ctx context.Context) error
}

// ErrTokenRefused is what [TokenRefused] errors match with errors.Is.
var ErrTokenRefused = errors.New("the platform refused the token")

// TokenRefused marks err as the platform refusing our credentials
// (Telegram 401, Slack invalid_auth/not_authed, Discord 401 or close
// code 4004): no retry helps until the operator fixes the token.
func TokenRefused(err error) error {
	if err == nil || errors.Is(err, ErrTokenRefused) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrTokenRefused, err)
}

// IsTokenRefused reports whether err says the token was refused.
func IsTokenRefused(err error) bool { return errors.Is(err, ErrTokenRefused) }

// Commands the gateway answers.
const (
	// CommandGrants lists the chat's active grants, each with a Revoke
	// button.
	CommandGrants = "grants"
	// CommandLibrary adds the file a message carries, or the file of the
	// message it replies to, to the chat's knowledge collection; with the
	// argument "shared", it asks an approver to add it to the shared
	// collection. Telegram takes it as a document's caption or as a
	// reply; Slack and Discord as the text of a message with files (see
	// [LibraryCommand]).
	CommandLibrary = "library"
	// CommandModel shows the chat's model and the models it may pick
	// (GATEHOUSE_CHAT_MODELS); with an argument (a listed selection, its
	// number or its model's name, or "default") it picks one for the
	// chat: every session of the chat, from its next turn on.
	CommandModel = "model"
	// CommandThink shows the chat's thinking level; with an argument
	// (off, low, medium, high, or "default") it sets it for the chat.
	CommandThink = "think"
	// CommandTimeZone sets the sender's own time zone ("/tz
	// Europe/Berlin"), which the date in the prompt of a turn answering
	// them follows; "/tz" alone says which zone that is. Slack takes it
	// as "!tz" too (see [TextCommand]).
	CommandTimeZone = "tz"
)

// LibraryCommand reads a message's text as the library command: its
// first word is "/library" or "!library" (any case; Slack's clients keep
// a leading slash for their own commands, so "!library" is the form that
// reaches a Slack bot). args is the rest, trimmed. Adapters that have no
// command entities (Slack, Discord) hand such a message, with its files,
// to Sink.Command(CommandLibrary, …) with in.Text set to args.
func LibraryCommand(text string) (args string, ok bool) {
	name, args, ok := TextCommand(text)
	if !ok || name != CommandLibrary {
		return "", false
	}
	return args, true
}

// textCommands are the commands a message's text may carry where the
// platform has no command entities to mark them (see TextCommand).
var textCommands = []string{
	CommandLibrary,
	CommandModel,
	CommandThink,
	CommandTimeZone,
}

// TextCommand reads a message's text as a command: its first word is
// "/" or "!" and the name of one of textCommands (any case), e.g. "!model
// o3". name is the command's name, args the rest, trimmed. Slack hands
// such a message to Sink.Command(name, …) with in.Text set to args, as
// its clients keep a leading slash for the app's slash commands.
func TextCommand(text string) (name, args string, ok bool) {
	text = strings.TrimSpace(text)
	word, rest := text, ""
	if end := strings.IndexFunc(text, unicode.IsSpace); end >= 0 {
		word, rest = text[:end], text[end:]
	}
	word = strings.ToLower(word)
	if len(word) < 2 || (word[0] != '/' && word[0] != '!') || !slices.Contains(textCommands, word[1:]) {
		return "", "", false
	}
	return word[1:], strings.TrimSpace(rest), true
}

// FileFetcher is implemented by an adapter that can download a file a
// message carried (gh.File.Ref, as the adapter read it). It refuses a
// file over max bytes with a *gh.Error of code CodePayloadTooLarge,
// without reading more than max+1 bytes; any other failure is a
// *gh.Error too (CodeUnavailable when a retry can help).
type FileFetcher interface {
	FetchFile(ctx context.Context, f gh.File, max int64) ([]byte, error)
}

// CommandReply is the answer to a chat command, shown to whoever sent it
// (Slack and Discord answer it to them alone).
type CommandReply struct {
	// Text is plain text: the adapter formats it for the platform.
	Text    string
	Buttons []Button
	// Refused is true when the sender may not use commands here (not
	// allowed, a bot): a platform that needs no answer sends none.
	Refused bool
	// Duplicate is true for a redelivered command, answered the first
	// time: a platform that redelivers sends no second answer.
	Duplicate bool
}

// Receive-log dispositions (what became of a received update) and drop reasons.
const (
	ReceiveHandedOn = "handed_on"
	ReceiveDropped  = "dropped"

	ReasonNotAllowed  = "not_allowed"
	ReasonFromBot     = "from_bot"
	ReasonFlood       = "flood"
	ReasonDuplicate   = "duplicate"
	ReasonUnsupported = "unsupported"
	ReasonEmpty       = "empty"
	// ReasonPairing is a stranger's message with pairing on: the detail
	// holds the code they were sent, or why none was (one is live, or
	// they asked too often).
	ReasonPairing = "pairing"
	// ReasonCommand is a chat command (Sink.Command), answered by the
	// gateway: the detail names it and what it did.
	ReasonCommand = "command"
	// ReasonCancel is a message that was the word "cancel"
	// (cards.CancelWord) from someone who may decide a pending approval
	// card of the chat's session: it denied the card, as a press of Deny
	// with the reason "cancelled by <person>" would, and is not handed on
	// to the agent (the denial's continuation is its answer). The row's
	// detail names the gates.
	ReasonCancel = "cancel"
)

// ReceiveResult is what became of an update.
type ReceiveResult struct {
	Outcome   string `json:"outcome"`
	Reason    string `json:"reason,omitempty"`
	SessionID string `json:"sessionId,omitempty"`
	Seq       int64  `json:"seq,omitempty"`
}

// PressResult is what a press did.
type PressResult struct {
	Gate gh.Gate
	// Won is true when this press decided the gate.
	Won bool
	// Text is what to tell the presser at once ("Approved.", "Already
	// approved by telegram:alice.", "You are not allowed to decide this.").
	Text string
	// Card is how the card looks now: the outcome and, once decided, no
	// buttons. Adapters that can answer a press by editing the card (a
	// Discord interaction of type 7) use it.
	Card Card
	// AskReason answers a press of "Deny with reason…" (ChoiceDenyReason)
	// by someone who may decide the pending gate: the adapter asks the
	// presser for the reason (a reply, a modal) and presses again with
	// ChoiceDeny and gh.Press.Reason. Nothing was decided.
	AskReason bool
}

// ReasonAsker is implemented by an adapter that can ask a presser why
// they deny (see PressResult.AskReason): its cards get a "Deny with
// reason…" button.
type ReasonAsker interface {
	AsksReasons() bool
}

// MaxReason is the longest reason for a denial a chat platform takes, in
// characters; a longer one is cut.
const MaxReason = 1000

// Outgoing is one message to send.
type Outgoing struct {
	Address gh.Address
	// Text is already formatted for the platform and within its length.
	Text string
	// Card, when set, makes the message an approval card with buttons.
	Card *Card
}

// Card is an approval card.
type Card struct {
	GateID string `json:"gateId"`
	// Text is formatted for the platform.
	Text    string   `json:"text"`
	Buttons []Button `json:"buttons,omitempty"`
}

// Button is one button of a card. Data is what the press carries back
// (see [ButtonData]); it fits Telegram's 64 bytes of callback data.
type Button struct {
	Label string `json:"label"`
	Data  string `json:"data"`
	// Style is "primary" or "danger" where the platform colours buttons.
	Style string `json:"style,omitempty"`
}

// Limits are a platform's sending limits. Zero means no limit. MaxText
// sizes answers and cards (package cards); the rates pace the dispatcher
// (package gateway/pacing).
type Limits struct {
	// MaxText is the longest message in characters (runes); longer
	// answers are split.
	MaxText int
	// PerChat is the least time between two sends to one chat.
	PerChat time.Duration
	// GroupPerMinute caps sends to one group chat per minute.
	GroupPerMinute int
	// PerSecond caps all of the bot's sends.
	PerSecond int
}

// SendError is a platform's refusal of a send.
type SendError struct {
	// Status is the HTTP status the platform answered (429, 400…), or 0.
	Status int
	// RetryAfter is how long the platform asked us to wait (429).
	RetryAfter time.Duration
	// Permanent means a retry cannot help (a chat that does not exist, a
	// message too long): the row becomes a dead letter at once.
	Permanent bool
	Err       error
}

func (e *SendError) Error() string {
	return fmt.Sprintf("send refused (status %d, retry after %s): %v", e.Status, e.RetryAfter, e.Err)
}

func (e *SendError) Unwrap() error { return e.Err }

// AsSendError returns err's *SendError, if it has one.
func AsSendError(err error) (*SendError, bool) {
	var se *SendError
	ok := errors.As(err, &se)
	return se, ok
}
