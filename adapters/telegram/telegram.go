package telegram

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/gateway/chat"
	"github.com/gatehouse/gatehouse/internal/backoff"
)

// Config configures an [Adapter].
type Config struct {
	// Token is the bot's token from @BotFather. Required.
	Token string
	// APIURL is the Bot API server. Defaults to "https://api.telegram.org";
	// a trailing "/", "/bot" or "/bot<token>" is accepted and dropped, and
	// New refuses any other path, a query or a fragment (baseurl.go).
	APIURL string
	// WebhookSecret, when set, puts the adapter in webhook mode: Handler
	// serves updates and accepts only requests whose
	// X-Telegram-Bot-Api-Secret-Token header equals it; Connect polls
	// nothing. Telegram allows 1-256 characters of A-Z, a-z, 0-9, _ and -.
	// Empty (the default) means long polling.
	WebhookSecret string
	// WebhookURL, in webhook mode, is the public HTTPS address where
	// Handler is served. When set, Connect registers it (with the secret)
	// by setWebhook; when empty, the webhook is registered by hand.
	WebhookURL string
	// PollTimeout is how long one getUpdates call may wait for an update
	// (whole seconds). Defaults to 30s.
	PollTimeout time.Duration
	// HTTPClient makes every Bot API call. Defaults to a client whose
	// timeout is PollTimeout plus 30s, so that a long poll is never cut.
	// A client of your own must allow at least that much.
	HTTPClient *http.Client
	// Logger receives what the adapter cannot return (a failed poll, a
	// callback query it could not answer). Defaults to slog.Default().
	Logger *slog.Logger
}

// The Bot API's rules this adapter writes to.
const (
	// maxText is the longest message, in characters after entity parsing.
	maxText = 4096
	// maxAnswer is the longest callback query answer.
	maxAnswer = 200
	// secretHeader carries the webhook secret.
	secretHeader = "X-Telegram-Bot-Api-Secret-Token"
	// maxWebhookBody bounds a webhook request; an update is a few KB.
	maxWebhookBody = 1 << 20
	// notOurs answers a press on a button this gateway did not make.
	notOurs = "This button is not from Gatehouse."
)

// allowedUpdates is what the adapter asks Telegram for. Telegram keeps
// the last list a bot gave, so naming it every time keeps an old setting
// (say, messages only) from silently hiding button presses.
var allowedUpdates = []string{
	models.AllowedUpdateMessage,
	models.AllowedUpdateEditedMessage,
	models.AllowedUpdateChannelPost,
	models.AllowedUpdateEditedChannelPost,
	models.AllowedUpdateCallbackQuery,
}

var secretChars = regexp.MustCompile(`^[A-Za-z0-9_-]{1,256}$`)

// Adapter is the Telegram [chat.Adapter].
type Adapter struct {
	cfg    Config
	bot    *bot.Bot
	client *http.Client
	log    *slog.Logger
	// now is the clock ReceivedAt is read from.
	now func() time.Time
	// botID is the bot's user id, the token's first part: a reply to a
	// prompt for a reason counts only when the prompt is the bot's own.
	botID int64
	// me is the bot's username, for commands addressed "/name@bot".
	me self
}

var _ chat.Adapter = (*Adapter)(nil)

// New makes an adapter. It does no I/O: the token is first used by
// Connect or Send.
func New(cfg Config) (*Adapter, error) {
	if strings.TrimSpace(cfg.Token) == "" {
		return nil, errors.New("telegram: token is required")
	}
	if strings.ContainsAny(cfg.Token, "/?# \t\r\n") {
		return nil, errors.New("telegram: token has characters a Bot API token cannot have")
	}
	if cfg.WebhookSecret != "" && !secretChars.MatchString(cfg.WebhookSecret) {
		return nil, errors.New("telegram: webhook secret must be 1-256 characters of A-Z, a-z, 0-9, _ and -")
	}
	if cfg.WebhookURL != "" && cfg.WebhookSecret == "" {
		return nil, errors.New("telegram: a webhook URL needs a webhook secret")
	}
	server, err := serverURL(cfg.APIURL, cfg.Token)
	if err != nil {
		return nil, err
	}
	cfg.APIURL = server
	if cfg.PollTimeout <= 0 {
		cfg.PollTimeout = 30 * time.Second
	}
	if cfg.PollTimeout < time.Second {
		cfg.PollTimeout = time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	client := cfg.HTTPClient
	if client == nil {
		client = &http.Client{Timeout: cfg.PollTimeout + 30*time.Second}
	}
	log := cfg.Logger.With("platform", gh.PlatformTelegram)
	b, err := bot.New(cfg.Token,
		bot.WithServerURL(cfg.APIURL),
		// No getMe at construction: New must not do I/O.
		bot.WithSkipGetMe(),
		bot.WithHTTPClient(cfg.PollTimeout, client),
		// The library logs with the log package by default; its errors
		// (a pipe it could not close) go to our logger instead.
		bot.WithErrorsHandler(func(err error) { log.Warn("telegram library", "err", err) }),
		bot.WithDebugHandler(func(format string, args ...any) { log.Debug(fmt.Sprintf(format, args...)) }),
	)
	if err != nil {
		return nil, fmt.Errorf("telegram: %w", err)
	}
	botID, _ := strconv.ParseInt(strings.SplitN(cfg.Token, ":", 2)[0], 10, 64)
	return &Adapter{cfg: cfg, bot: b, client: client, log: log, now: time.Now, botID: botID}, nil
}

// Platform is "telegram".
func (a *Adapter) Platform() string { return gh.PlatformTelegram }

// Limits are Telegram's: 4096 characters, about one message a second per
// chat, 20 a minute per group, 30 a second in all.
func (a *Adapter) Limits() chat.Limits {
	return chat.Limits{MaxText: maxText, PerChat: time.Second, GroupPerMinute: 20, PerSecond: 30}
}

// AsksReasons is true: a card has a "Deny with reason…" button, whose
// press asks the presser for the reason with a message they reply to
// (force_reply); the reply is the reason.
func (a *Adapter) AsksReasons() bool { return true }

// Format renders text as Telegram HTML; see the package function [Format].
func (a *Adapter) Format(text string) string { return Format(text) }

// webhookMode reports whether updates come by webhook.
func (a *Adapter) webhookMode() bool { return a.cfg.WebhookSecret != "" }

// Connect holds the inbound side until ctx ends: long polling, or in
// webhook mode only registering the webhook when a URL is configured.
// In both modes it registers the chat commands (setMyCommands) once,
// retrying until that succeeds. It returns nil when ctx ends.
func (a *Adapter) Connect(ctx context.Context, sink chat.Sink) error {
	// Commands are registered once per start, beside the inbound side:
	// a Bot API that refuses them for a while delays no update.
	var registering sync.WaitGroup
	registering.Add(1)
	go func() {
		defer registering.Done()
		a.registerCommands(ctx)
	}()
	defer registering.Wait()
	if a.webhookMode() {
		if a.cfg.WebhookURL != "" {
			a.registerWebhook(ctx, sink)
		}
		<-ctx.Done()
		return nil
	}
	a.poll(ctx, sink)
	return nil
}

// registerWebhook calls setWebhook until it succeeds or ctx ends. Each
// call's outcome is a round trip sink.Health hears of.
func (a *Adapter) registerWebhook(ctx context.Context, sink chat.Sink) {
	wait := registerPolicy.New()
	for ctx.Err() == nil {
		_, err := a.bot.SetWebhook(ctx, &bot.SetWebhookParams{
			URL:            a.cfg.WebhookURL,
			SecretToken:    a.cfg.WebhookSecret,
			AllowedUpdates: allowedUpdates,
		})
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			sink.Health(ctx, gh.PlatformTelegram, nil)
			return
		}
		err = classify(fmt.Errorf("telegram: setWebhook: %w", err))
		sink.Health(ctx, gh.PlatformTelegram, err)
		d := wait.Next()
		if chat.IsTokenRefused(err) {
			d = max(d, refusedPolicy.Max(wait.Failures()))
		}
		a.log.Error("telegram: setWebhook failed", "err", err, "retry_in", d)
		backoff.Sleep(ctx, d)
	}
}

// handle hands one update to sink. A nil error means the update may be
// acknowledged; an error means it must come again.
func (a *Adapter) handle(ctx context.Context, sink chat.Sink, ev event) error {
	if ev.command != nil && ev.inbound != nil {
		ours, err := a.addressedToUs(ctx, ev.command.target)
		if err != nil {
			return fmt.Errorf("telegram: command in update %d: %w", ev.updateID, err)
		}
		if ours {
			return a.handleCommand(ctx, sink, ev.updateID, *ev.inbound, ev.command)
		}
	}
	if ev.reason != nil && a.botID != 0 && ev.reasonTo == a.botID {
		return a.handleReason(ctx, sink, *ev.reason, ev.inbound.MessageID)
	}
	if ev.inbound != nil {
		if _, err := sink.Receive(ctx, *ev.inbound); err != nil {
			return fmt.Errorf("telegram: receive update %d: %w", ev.updateID, err)
		}
		return nil
	}
	q := ev.query
	if !q.ours {
		a.answer(ctx, q.queryID, notOurs)
		return nil
	}
	res, err := sink.Press(ctx, q.press)
	if err != nil {
		// Not answered: the query comes again with the update, and is
		// answered then (a press stays answerable for about 15 s).
		return fmt.Errorf("telegram: press %s: %w", q.queryID, err)
	}
	if res.AskReason {
		if err := a.askReason(ctx, q.press, res.Gate.Tool); err != nil {
			a.log.Warn("telegram: could not ask for a reason", "gate", q.press.GateID, "err", err)
			a.answer(ctx, q.queryID, "Could not ask for a reason here; press Deny to deny without one.")
			return nil
		}
		a.answer(ctx, q.queryID, "Reply to my message below with your reason.")
		return nil
	}
	a.answer(ctx, q.queryID, res.Text)
	return nil
}

// askReason sends, under the card p was pressed on, the prompt for the
// reason of a denial: a message the presser's client opens a reply to
// (force_reply). Its reply comes back as an update (handleReason).
func (a *Adapter) askReason(ctx context.Context, p gh.Press, tool string) error {
	to, err := chatID(p.ChatID)
	if err != nil {
		return err
	}
	params := &bot.SendMessageParams{
		ChatID:      to,
		Text:        reasonPrompt(tool, p.GateID),
		ReplyMarkup: &models.ForceReply{ForceReply: true, InputFieldPlaceholder: "Why deny it?"},
	}
	if n, err := strconv.Atoi(p.ThreadID); err == nil && n > 0 {
		params.MessageThreadID = n
	}
	if n, err := strconv.Atoi(p.MessageID); err == nil && n > 0 {
		params.ReplyParameters = &models.ReplyParameters{MessageID: n, AllowSendingWithoutReply: true}
	}
	_, err = a.bot.SendMessage(ctx, params)
	return err
}

// handleReason hands a reply to a prompt for a reason to sink as the
// denial it is. The presser hears, as a reply, what became of it unless
// it decided the gate (the card then shows the outcome, reason included):
// a reply to their message replyTo. An error means the update must come
// again.
func (a *Adapter) handleReason(ctx context.Context, sink chat.Sink, p gh.Press, replyTo string) error {
	p.Reason = truncate(p.Reason, chat.MaxReason)
	res, err := sink.Press(ctx, p)
	if err != nil {
		return fmt.Errorf("telegram: reason for %s: %w", p.GateID, err)
	}
	if res.Won || res.Text == "" {
		return nil
	}
	to, err := chatID(p.ChatID)
	if err != nil {
		return nil
	}
	params := &bot.SendMessageParams{ChatID: to, Text: res.Text}
	if n, err := strconv.Atoi(p.ThreadID); err == nil && n > 0 {
		params.MessageThreadID = n
	}
	if n, err := strconv.Atoi(replyTo); err == nil && n > 0 {
		params.ReplyParameters = &models.ReplyParameters{MessageID: n, AllowSendingWithoutReply: true}
	}
	if _, err := a.bot.SendMessage(ctx, params); err != nil {
		a.log.Warn("telegram: could not tell a presser what became of their reason", "gate", p.GateID, "err", err)
	}
	return nil
}

// answer answers a callback query, which stops the spinner on the
// presser's button and shows text. A failure is logged, not returned: the
// press is already committed, and a query can be answered only once.
func (a *Adapter) answer(ctx context.Context, queryID, text string) {
	_, err := a.bot.AnswerCallbackQuery(ctx, &bot.AnswerCallbackQueryParams{
		CallbackQueryID: queryID,
		Text:            truncate(text, maxAnswer),
	})
	if err != nil {
		a.log.Warn("telegram: answerCallbackQuery failed", "query", queryID, "err", err)
	}
}

// inlineKeyboard is reply_markup for an inline keyboard. The library's
// models.InlineKeyboardButton always writes "copy_text":{"text":""},
// which is not a button we mean (and which Telegram has refused as
// BUTTON_COPY_TEXT_INVALID), so the markup is written here.
type inlineKeyboard struct {
	InlineKeyboard [][]inlineButton `json:"inline_keyboard"`
}

type inlineButton struct {
	Text         string `json:"text"`
	CallbackData string `json:"callback_data"`
	// Style colours the button: "primary", "success" or "danger".
	Style string `json:"style,omitempty"`
}

// keyboard is a card's buttons in one row; an empty keyboard (no rows)
// removes the buttons of a message being edited.
func keyboard(buttons []chat.Button) inlineKeyboard {
	kb := inlineKeyboard{InlineKeyboard: [][]inlineButton{}}
	if len(buttons) == 0 {
		return kb
	}
	row := make([]inlineButton, 0, len(buttons))
	for _, btn := range buttons {
		ib := inlineButton{Text: btn.Label, CallbackData: btn.Data}
		if btn.Style == "primary" || btn.Style == "danger" {
			ib.Style = btn.Style
		}
		row = append(row, ib)
	}
	kb.InlineKeyboard = append(kb.InlineKeyboard, row)
	return kb
}

func noPreview() *models.LinkPreviewOptions {
	return &models.LinkPreviewOptions{IsDisabled: bot.True()}
}

// chatID is a chat id as the Bot API takes it: an integer, or a public
// channel's @username.
func chatID(s string) (any, error) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, nil
	}
	if strings.HasPrefix(s, "@") && len(s) > 1 {
		return s, nil
	}
	return nil, fmt.Errorf("telegram: %q is not a chat id", s)
}

// Send posts m.Text (or, for a card without text of its own, the card's
// text) to the address, in its forum topic, as a reply to Address.ReplyTo
// when that message still exists, with the card's buttons.
func (a *Adapter) Send(ctx context.Context, m chat.Outgoing) (string, error) {
	to, err := chatID(m.Address.ChatID)
	if err != nil {
		return "", &chat.SendError{Status: http.StatusBadRequest, Permanent: true, Err: err}
	}
	text := m.Text
	if text == "" && m.Card != nil {
		text = m.Card.Text
	}
	p := &bot.SendMessageParams{
		ChatID:             to,
		Text:               text,
		ParseMode:          models.ParseModeHTML,
		LinkPreviewOptions: noPreview(),
	}
	if t := m.Address.ThreadID; t != "" {
		n, err := strconv.Atoi(t)
		if err != nil || n <= 0 {
			return "", &chat.SendError{Status: http.StatusBadRequest, Permanent: true,
				Err: fmt.Errorf("telegram: %q is not a forum topic id", t)}
		}
		p.MessageThreadID = n
	}
	if r := m.Address.ReplyTo; r != "" {
		// A reply target that is not a message id is not worth failing
		// the answer for: it goes out without the reply.
		if n, err := strconv.Atoi(r); err == nil && n > 0 {
			p.ReplyParameters = &models.ReplyParameters{MessageID: n, AllowSendingWithoutReply: true}
		}
	}
	if m.Card != nil && len(m.Card.Buttons) > 0 {
		p.ReplyMarkup = keyboard(m.Card.Buttons)
	}
	msg, err := a.bot.SendMessage(ctx, p)
	if err != nil {
		return "", sendError("sendMessage", err)
	}
	return strconv.Itoa(msg.ID), nil
}

// EditCard rewrites a card to card.Text with card.Buttons, which after a
// decision are none: the empty keyboard removes the buttons. An edit that
// changes nothing (a retry of an edit that went through) is success.
func (a *Adapter) EditCard(ctx context.Context, addr gh.Address, messageID string, card chat.Card) error {
	to, err := chatID(addr.ChatID)
	if err != nil {
		return &chat.SendError{Status: http.StatusBadRequest, Permanent: true, Err: err}
	}
	id, err := strconv.Atoi(messageID)
	if err != nil || id <= 0 {
		return &chat.SendError{Status: http.StatusBadRequest, Permanent: true,
			Err: fmt.Errorf("telegram: %q is not a message id", messageID)}
	}
	_, err = a.bot.EditMessageText(ctx, &bot.EditMessageTextParams{
		ChatID:             to,
		MessageID:          id,
		Text:               card.Text,
		ParseMode:          models.ParseModeHTML,
		LinkPreviewOptions: noPreview(),
		ReplyMarkup:        keyboard(card.Buttons),
	})
	if err != nil {
		if strings.Contains(err.Error(), "message is not modified") {
			return nil
		}
		return sendError("editMessageText", err)
	}
	return nil
}

// sendError turns the library's errors into what the dispatcher acts on.
// Errors without a Bot API status (the network, a cancelled context) are
// returned wrapped as they are.
func sendError(method string, err error) error {
	var tooMany *bot.TooManyRequestsError
	if errors.As(err, &tooMany) {
		return &chat.SendError{Status: http.StatusTooManyRequests,
			RetryAfter: time.Duration(tooMany.RetryAfter) * time.Second,
			Err:        fmt.Errorf("telegram: %s: %w", method, err)}
	}
	var migrate *bot.MigrateError
	if errors.As(err, &migrate) {
		// The group became a supergroup with a new id: this address is
		// gone for good; new messages from the chat bring the new one.
		return &chat.SendError{Status: http.StatusBadRequest, Permanent: true,
			Err: fmt.Errorf("telegram: %s: chat moved to %d: %w", method, migrate.MigrateToChatID, err)}
	}
	status := 0
	switch {
	case errors.Is(err, bot.ErrorBadRequest):
		status = http.StatusBadRequest
	case errors.Is(err, bot.ErrorUnauthorized):
		status = http.StatusUnauthorized
	case errors.Is(err, bot.ErrorForbidden):
		status = http.StatusForbidden
	case errors.Is(err, bot.ErrorNotFound):
		status = http.StatusNotFound
	case errors.Is(err, bot.ErrorConflict):
		// Telegram's 409 is about polling and webhooks, not a send that
		// could not work: worth retrying.
		return &chat.SendError{Status: http.StatusConflict, Err: fmt.Errorf("telegram: %s: %w", method, err)}
	default:
		return fmt.Errorf("telegram: %s: %w", method, err)
	}
	// A bad request, a wrong token, a bot blocked or removed from the
	// chat, a chat that does not exist: sending the same again cannot help.
	return &chat.SendError{Status: status, Permanent: true, Err: fmt.Errorf("telegram: %s: %w", method, err)}
}
