package telegramtest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gatehouse/gatehouse/adapters/adaptertest"
	"github.com/gatehouse/gatehouse/adapters/internal/platformfake"
	"github.com/gatehouse/gatehouse/adapters/telegram"
	"github.com/gatehouse/gatehouse/adapters/telegram/telegramtest/tgfiles"
	"github.com/gatehouse/gatehouse/gateway/chat"
)

// TelegramToken is the only bot token the Telegram fake accepts.
const TelegramToken = "123456789:AAGatehouseFakeToken_0123456789abcdef"

// TelegramSecret is the webhook secret NewTelegramAdapter configures in
// webhook mode.
const TelegramSecret = "gatehouse-fake-secret"

// telegramBotID is the bot's user id: a token starts with it.
const telegramBotID = 123456789

// TelegramOptions configure the Telegram fake (and the adapter
// NewTelegramAdapter aims at it).
type TelegramOptions struct {
	// Webhook makes the fake deliver updates by POSTing them to the
	// webhook the bot registers with setWebhook, with the secret in
	// X-Telegram-Bot-Api-Secret-Token, instead of holding them for
	// getUpdates. An update is acknowledged by a 2xx answer; any other
	// answer and it is delivered again after RedeliverDelay.
	Webhook bool
	// RateLimit makes the fake refuse sendMessage calls that come too
	// fast with 429 and retry_after, as Telegram does; see Rates.
	RateLimit bool
	// Rates are the limits RateLimit enforces. Zero fields take Telegram's.
	Rates TelegramRates
	// PollTimeout is the adapter's long-poll timeout (NewTelegramAdapter).
	// Defaults to 1s.
	PollTimeout time.Duration
	// AnswerWait is how long Press waits for answerCallbackQuery.
	// Defaults to 5s.
	AnswerWait time.Duration
	// QueryTTL is how long a callback query can be answered. Defaults to
	// 15s, about what Telegram allows.
	QueryTTL time.Duration
	// RedeliverDelay is how long the fake waits before delivering again a
	// webhook update that was not acknowledged. Defaults to 50ms (Telegram
	// waits longer; tests should not).
	RedeliverDelay time.Duration
	// EmptyPollsAtOnce makes getUpdates answer [] at once when nothing is
	// waiting instead of holding the poll for its timeout, as a Bot API
	// emulator, a self-hosted Bot API server under some conditions or a
	// proxy that cuts long polls does. SetEmptyPollsAtOnce toggles it.
	EmptyPollsAtOnce bool
}

// FailConnection, given to FailAll, makes the fake close every
// connection without an answer, as a server that went away does.
const FailConnection = -1

// TelegramRates are Telegram's sending limits as the fake enforces them.
// A send is refused when it comes sooner than 90% of PerChat after the
// previous one to its chat (the slack absorbs clock jitter between the
// sender's limiter and the fake), when a group has had GroupPerMinute
// sends in the last minute, or when the bot has made PerSecond sends in the
// last second. Only sendMessage counts; edits and answers do not.
type TelegramRates struct {
	// PerChat defaults to 1s.
	PerChat time.Duration
	// GroupPerMinute defaults to 20.
	GroupPerMinute int
	// PerSecond defaults to 30.
	PerSecond int
}

// TelegramMessage is a message the bot sent, as the fake holds it.
type TelegramMessage struct {
	ID int
	// Text is what the user sees: markup parsed, entities decoded,
	// surrounding white space trimmed.
	Text string
	// Source is the text as the bot sent it, and ParseMode its parse_mode.
	Source    string
	ParseMode string
	// ThreadID is the forum topic, 0 outside one.
	ThreadID int
	// ReplyTo is the message it replies to, 0 when none.
	ReplyTo int
	// Buttons are the inline keyboard's rows; nil without one.
	Buttons [][]TelegramButton
	// LinkPreviewDisabled reports link_preview_options.is_disabled (or
	// the older disable_web_page_preview).
	LinkPreviewDisabled bool
	Edited              bool
	// ForceReply reports reply_markup ForceReply: the client opens a
	// reply to the message; Placeholder is its input_field_placeholder.
	ForceReply  bool
	Placeholder string
}

// TelegramButton is one inline keyboard button.
type TelegramButton struct {
	Text  string `json:"text"`
	Data  string `json:"callback_data,omitempty"`
	URL   string `json:"url,omitempty"`
	Style string `json:"style,omitempty"`
}

// TelegramFake is a Bot API server on loopback. It keeps chats, users,
// messages and an update queue, serves the methods the adapter calls
// (getMe, getUpdates, sendMessage, editMessageText,
// editMessageReplyMarkup, answerCallbackQuery, setWebhook,
// deleteWebhook, getWebhookInfo, setMyCommands, getMyCommands,
// deleteMyCommands) and refuses, with Telegram's status and description,
// what Telegram refuses: a wrong token (401 Unauthorized, also for the
// right one after RevokeToken), a JSON body that does not parse (400
// "can't parse JSON object"), an unknown method, an unknown
// chat, topic or message, empty or too long text, HTML that does not
// parse, a bad inline keyboard, callback data over 64 bytes, an edit that
// changes nothing, a callback query answered twice or too late, two
// concurrent getUpdates, getUpdates while a webhook is set, a command name
// that is not 1-32 lowercase letters, digits and underscores, a command
// description that is not 1-256 characters, more than 100 commands.
//
// Users send commands as Telegram's clients do (SayCommand, Command): a
// message whose bot_command entity covers "/name" or "/name@bot" at
// offset 0. Whether a group's bot sees a command (privacy mode) is not
// modelled: the bot gets every message.
//
// Chats are named by handles: a handle starting with "group" is a
// supergroup, "forum" a supergroup with topics, "channel" a channel; any
// other handle is the private chat with the user of that name (its id is
// that user's id, as on Telegram). Chats exist from their first update on.
//
// It can also misbehave as servers in front of a bot do: answer empty
// polls at once (EmptyPollsAtOnce), fail every call (FailAll), lose the
// webhook (DeleteWebhook, SetWebhook to another URL). Calls counts what
// the bot asked, so a test can bound a retry loop.
//
// Relaxations, all documented: a webhook URL may be plain http on
// loopback (Telegram wants HTTPS on ports 443, 80, 88 or 8443); only
// parse_mode HTML and none are parsed (Markdown and MarkdownV2 are refused
// as not modelled and recorded); files cannot be uploaded.
type TelegramFake struct {
	// URL is the Bot API base URL (Config.APIURL, bot.WithServerURL).
	URL string
	// Token is the token the fake accepts.
	Token string

	t    adaptertest.TB
	opts TelegramOptions
	srv  *httptest.Server

	closed   chan struct{}
	cancel   context.CancelFunc
	delivery sync.WaitGroup

	mu         sync.Mutex
	users      map[string]*tgUser
	nextUser   int64
	chats      map[string]*tgChat
	chatsByID  map[int64]*tgChat
	nextGroup  int64
	updates    []*tgUpdate
	updateByID map[int64]*tgUpdate
	firstOpen  int // updates[:firstOpen] are all confirmed
	nextUpdate int64
	queries    map[string]*tgQuery
	nextQuery  int64
	allowed    []string // sticky allowed_updates; nil means Telegram's default
	hookURL    string
	hookSecret string
	changed    chan struct{} // closed (and replaced) when updates change
	pollKick   chan struct{} // closed when a newer getUpdates takes over
	sendLog    []time.Time
	refusals   platformfake.Refusals
	// commands are the lists setMyCommands set, by "scope|language".
	commands     map[string][]TelegramCommand
	commandCalls int
	// files are the documents users sent.
	files *tgfiles.Store
	// calls counts requests by method (lower case), refused ones too.
	calls map[string]int
	// failing is FailAll's status: 0 none, FailConnection, or an HTTP
	// status answered with a proxy's HTML page.
	failing int
	// emptyAtOnce is EmptyPollsAtOnce as it is now.
	emptyAtOnce bool
	// revoked refuses Token, as after /revoke in @BotFather.
	revoked bool
	// hookErrDate and hookErrMsg are getWebhookInfo's last_error_date
	// and last_error_message: the last delivery that failed.
	hookErrDate int64
	hookErrMsg  string
}

type tgUser struct {
	id     int64
	handle string
}

type tgChat struct {
	id      int64
	handle  string
	typ     string // private, supergroup, channel
	forum   bool
	topics  map[int]bool
	nextMsg int
	msgs    []*tgMessage
	byID    map[int]*tgMessage
	// lastSend and sends drive the rate limits.
	lastSend time.Time
	sends    []time.Time
}

type tgMessage struct {
	TelegramMessage
	fromBot bool
	// pressable is every callback_data the message has ever had.
	pressable map[string]bool
	from      *tgUser
	isBot     bool
	date      int64
	entities  []tgEntity
}

type tgUpdate struct {
	id        int64
	kind      string
	body      []byte
	confirmed bool
	// redeliver marks an update Redeliver queued again: it goes out with
	// the next getUpdates whatever its offset says.
	redeliver bool
	delivered bool
	statuses  []int
}

type tgQuery struct {
	id       string
	created  time.Time
	answered bool
	answer   string
	done     chan struct{}
}

// tgErr is a Bot API refusal.
type tgErr struct {
	code       int
	desc       string
	retryAfter int
}

func badRequest(format string, args ...any) *tgErr {
	return &tgErr{code: http.StatusBadRequest, desc: "Bad Request: " + fmt.Sprintf(format, args...)}
}

var _ adaptertest.Fake = (*TelegramFake)(nil)

// NewTelegram starts a Telegram fake; t's cleanup stops it.
func NewTelegram(t adaptertest.TB, opts TelegramOptions) *TelegramFake {
	t.Helper()
	if opts.AnswerWait <= 0 {
		opts.AnswerWait = 5 * time.Second
	}
	if opts.QueryTTL <= 0 {
		opts.QueryTTL = 15 * time.Second
	}
	if opts.RedeliverDelay <= 0 {
		opts.RedeliverDelay = 50 * time.Millisecond
	}
	if opts.PollTimeout <= 0 {
		opts.PollTimeout = time.Second
	}
	if opts.Rates.PerChat <= 0 {
		opts.Rates.PerChat = time.Second
	}
	if opts.Rates.GroupPerMinute <= 0 {
		opts.Rates.GroupPerMinute = 20
	}
	if opts.Rates.PerSecond <= 0 {
		opts.Rates.PerSecond = 30
	}
	f := &TelegramFake{
		Token:       TelegramToken,
		files:       tgfiles.New(TelegramToken),
		t:           t,
		opts:        opts,
		closed:      make(chan struct{}),
		users:       map[string]*tgUser{},
		nextUser:    1000,
		chats:       map[string]*tgChat{},
		chatsByID:   map[int64]*tgChat{},
		nextGroup:   1000000000000,
		updateByID:  map[int64]*tgUpdate{},
		nextUpdate:  700000000,
		queries:     map[string]*tgQuery{},
		nextQuery:   4815162342000000000,
		changed:     make(chan struct{}),
		commands:    map[string][]TelegramCommand{},
		calls:       map[string]int{},
		emptyAtOnce: opts.EmptyPollsAtOnce,
	}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	f.URL = f.srv.URL
	ctx, cancel := context.WithCancel(context.Background())
	f.cancel = cancel
	f.delivery.Add(1)
	go f.deliverWebhooks(ctx)
	t.Cleanup(f.close)
	return f
}

func (f *TelegramFake) close() {
	select {
	case <-f.closed:
		return
	default:
	}
	close(f.closed)
	f.cancel()
	f.delivery.Wait()
	f.srv.Close()
}

// NewTelegramAdapter starts a fake and a Telegram adapter aimed at it:
// long polling, or with opts.Webhook a webhook that the returned adapter
// serves on its own loopback server for as long as Connect runs (standing
// in for the gateway's HTTP server), registered with the fake by Connect.
func NewTelegramAdapter(t adaptertest.TB, opts TelegramOptions) (chat.Adapter, *TelegramFake) {
	t.Helper()
	f := NewTelegram(t, opts)
	cfg := telegram.Config{
		Token:       f.Token,
		APIURL:      f.URL,
		PollTimeout: f.opts.PollTimeout,
		Logger:      slog.New(slog.NewTextHandler(adaptertest.LogWriter(t), &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	if !opts.Webhook {
		a, err := telegram.New(cfg)
		if err != nil {
			t.Fatalf("telegram adapter: %v", err)
		}
		return a, f
	}
	w := &telegramWebhook{}
	hook := httptest.NewServer(&w.mount)
	t.Cleanup(hook.Close)
	cfg.WebhookSecret = TelegramSecret
	cfg.WebhookURL = hook.URL + "/telegram"
	a, err := telegram.New(cfg)
	if err != nil {
		t.Fatalf("telegram adapter: %v", err)
	}
	w.Adapter = a
	return w, f
}

// TelegramFactory is the shared suite's Factory for Telegram in long
// polling mode (a 1 s poll timeout).
func TelegramFactory(t adaptertest.TB) (chat.Adapter, adaptertest.Fake) {
	t.Helper()
	return NewTelegramAdapter(t, TelegramOptions{})
}

// TelegramWebhookFactory is the shared suite's Factory for Telegram in
// webhook mode.
func TelegramWebhookFactory(t adaptertest.TB) (chat.Adapter, adaptertest.Fake) {
	t.Helper()
	return NewTelegramAdapter(t, TelegramOptions{Webhook: true})
}

// telegramWebhook is a webhook-mode adapter that also serves its own
// Handler while Connect runs, so that a test needs no HTTP server of its
// own. Between Connects the webhook answers 503 and the fake retries.
type telegramWebhook struct {
	*telegram.Adapter
	mount platformfake.Mount
}

func (w *telegramWebhook) Connect(ctx context.Context, sink chat.Sink) error {
	return w.mount.While(w.Adapter.Handler(sink), func() error { return w.Adapter.Connect(ctx, sink) })
}

// ---- the suite's handle ----

// UserID is the Telegram user id of handle.
func (f *TelegramFake) UserID(handle string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return strconv.FormatInt(f.user(handle).id, 10)
}

// ChatID is the Telegram chat id of the chat handle (creating it).
func (f *TelegramFake) ChatID(handle string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return strconv.FormatInt(f.chat(handle).id, 10)
}

// Say makes user write text in chat; in a channel it is a channel post.
func (f *TelegramFake) Say(chat, user, text string, bot bool) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.chat(chat)
	m := f.userMessage(c, user, bot, 0)
	m["text"] = text
	return f.queueMessage(c, m)
}

// SayInTopic makes user write text in the forum topic topicID of chat
// (which becomes a forum, the topic existing from then on).
func (f *TelegramFake) SayInTopic(chat string, topicID int, user, text string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.chat(chat)
	if c.typ != "supergroup" {
		f.t.Fatalf("telegram fake: chat %q cannot have topics", chat)
	}
	c.forum = true
	c.topics[topicID] = true
	m := f.userMessage(c, user, false, topicID)
	m["text"] = text
	return f.queueMessage(c, m)
}

// SayUnsupported sends a sticker.
func (f *TelegramFake) SayUnsupported(chat, user string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.chat(chat)
	m := f.userMessage(c, user, false, 0)
	m["sticker"] = map[string]any{
		"file_id": "CAACAgIAAxkBAAEfake", "file_unique_id": "AgADfake", "type": "regular",
		"width": 512, "height": 512, "is_animated": false, "is_video": false, "emoji": "👍",
	}
	return f.queueMessage(c, m)
}

// Inject queues an update of any shape (update_id is filled in) and
// returns its id: for what Say cannot make (an edit, a join, a photo).
func (f *TelegramFake) Inject(update map[string]any) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	kind := ""
	for k := range update {
		if k != "update_id" {
			kind = k
		}
	}
	return strconv.FormatInt(f.queue(kind, update), 10)
}

// Message is the JSON of a message from user in chat as an update
// carries it, for Inject; the chat and user are created.
func (f *TelegramFake) Message(chat, user string) map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.userMessage(f.chat(chat), user, false, 0)
}

// Redeliver queues the update again: it is delivered (by getUpdates or
// the webhook) once more with the same id, as Telegram does with an
// update that was not acknowledged.
func (f *TelegramFake) Redeliver(updateID string) {
	id, _ := strconv.ParseInt(updateID, 10, 64)
	f.mu.Lock()
	defer f.mu.Unlock()
	u := f.updateByID[id]
	if u == nil {
		f.t.Fatalf("telegram fake: no update %s to redeliver", updateID)
		return
	}
	if u.confirmed {
		u.confirmed, u.redeliver, u.delivered = false, true, false
		f.firstOpen = min(f.firstOpen, slices.Index(f.updates, u))
	}
	f.notify()
}

// Acked reports whether the update was acknowledged: the getUpdates
// offset moved past it, or the webhook answered 2xx.
func (f *TelegramFake) Acked(updateID string) bool {
	id, _ := strconv.ParseInt(updateID, 10, 64)
	f.mu.Lock()
	defer f.mu.Unlock()
	u := f.updateByID[id]
	return u != nil && u.confirmed
}

// WebhookStatuses are the HTTP statuses the webhook answered for the
// update, in order.
func (f *TelegramFake) WebhookStatuses(updateID string) []int {
	id, _ := strconv.ParseInt(updateID, 10, 64)
	f.mu.Lock()
	defer f.mu.Unlock()
	if u := f.updateByID[id]; u != nil {
		return slices.Clone(u.statuses)
	}
	return nil
}

// Messages are the bot's messages in chat, oldest first, as they look now.
func (f *TelegramFake) Messages(chat string) []adaptertest.Message {
	var out []adaptertest.Message
	for _, m := range f.TelegramMessages(chat) {
		out = append(out, toMessage(m))
	}
	return out
}

// TelegramMessages are the bot's messages in chat with everything the
// fake knows of them.
func (f *TelegramFake) TelegramMessages(chat string) []TelegramMessage {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.chats[chat]
	if c == nil {
		return nil
	}
	var out []TelegramMessage
	for _, m := range c.msgs {
		if !m.fromBot {
			continue
		}
		tm := m.TelegramMessage
		tm.Buttons = cloneButtons(m.Buttons)
		out = append(out, tm)
	}
	return out
}

// Press presses the button with data on the bot's message msgID in chat,
// as user, and returns the callback query's answer. The message must have
// had that button, now or before an edit (a client that has not caught up
// with the edit still shows it).
func (f *TelegramFake) Press(chat, msgID, data, user string) (string, error) {
	return f.press(chat, msgID, data, user, true)
}

// PressAny sends a callback query with data whatever buttons the message
// has, as a modified client (or a button another program put there) can.
func (f *TelegramFake) PressAny(chat, msgID, data, user string) (string, error) {
	return f.press(chat, msgID, data, user, false)
}

func (f *TelegramFake) press(chat, msgID, data, user string, check bool) (string, error) {
	f.mu.Lock()
	c := f.chats[chat]
	if c == nil {
		f.mu.Unlock()
		return "", fmt.Errorf("telegram fake: no chat %q", chat)
	}
	id, _ := strconv.Atoi(msgID)
	m := c.byID[id]
	if m == nil || !m.fromBot {
		f.mu.Unlock()
		return "", fmt.Errorf("telegram fake: no bot message %s in %q", msgID, chat)
	}
	if check && !m.pressable[data] {
		f.mu.Unlock()
		return "", fmt.Errorf("telegram fake: message %s in %q never had a button %q", msgID, chat, data)
	}
	f.nextQuery++
	q := &tgQuery{id: strconv.FormatInt(f.nextQuery, 10), created: time.Now(), done: make(chan struct{})}
	f.queries[q.id] = q
	f.queue("callback_query", map[string]any{"callback_query": map[string]any{
		"id":            q.id,
		"from":          f.userJSON(f.user(user), false),
		"message":       f.messageJSON(c, m),
		"chat_instance": strconv.FormatInt(-c.id*7+13, 10),
		"data":          data,
	}})
	f.mu.Unlock()

	t := time.NewTimer(f.opts.AnswerWait)
	defer t.Stop()
	select {
	case <-q.done:
		f.mu.Lock()
		defer f.mu.Unlock()
		return q.answer, nil
	case <-t.C:
		return "", fmt.Errorf("telegram fake: callback query %s not answered within %s", q.id, f.opts.AnswerWait)
	case <-f.closed:
		return "", errors.New("telegram fake: closed")
	}
}

// Reply makes user answer the message msgID of chat with text: a reply,
// as a client sends it after "Reply" or under a ForceReply prompt, with the
// replied message in reply_to_message. It returns the update's id.
func (f *TelegramFake) Reply(chat, msgID, user, text string) (string, error) {
	upd, _, err := f.userReply(chat, msgID, user, text)
	return upd, err
}

func (f *TelegramFake) userReply(chat, msgID, user, text string) (update string, id int, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.chats[chat]
	if c == nil {
		return "", 0, fmt.Errorf("telegram fake: no chat %q", chat)
	}
	n, _ := strconv.Atoi(msgID)
	target := c.byID[n]
	if target == nil {
		return "", 0, fmt.Errorf("telegram fake: no message %s in %q", msgID, chat)
	}
	j := f.userMessage(c, user, false, target.ThreadID)
	j["text"] = text
	id = j["message_id"].(int)
	c.byID[id].Text, c.byID[id].ReplyTo = text, target.ID
	replied := f.messageJSON(c, target)
	delete(replied, "reply_to_message") // Telegram nests one level only
	j["reply_to_message"] = replied
	return f.queueMessage(c, j), id, nil
}

// DenyWithReason presses the "Deny with reason…" button data on the bot's
// message msgID in chat as user and, when the bot then asks for the reason
// (a message replying to the card with ForceReply), replies to it with
// reason, as the user's client does. It returns what the user was shown
// last: the press's answer when no reason was asked for; else the bot's
// reply to the reason, or "" when there was none (the card was edited to
// its outcome).
func (f *TelegramFake) DenyWithReason(chat, msgID, data, user, reason string) (string, error) {
	before := len(f.TelegramMessages(chat))
	answer, err := f.Press(chat, msgID, data, user)
	if err != nil {
		return answer, err
	}
	var prompt *TelegramMessage
	for _, m := range f.TelegramMessages(chat)[before:] {
		if m.ForceReply && strconv.Itoa(m.ReplyTo) == msgID {
			prompt = &m
		}
	}
	if prompt == nil {
		return answer, nil
	}
	upd, id, err := f.userReply(chat, strconv.Itoa(prompt.ID), user, reason)
	if err != nil {
		return "", err
	}
	deadline := time.Now().Add(f.opts.AnswerWait)
	for !f.Acked(upd) {
		if time.Now().After(deadline) {
			return "", fmt.Errorf("telegram fake: the reply with the reason (update %s) was not acknowledged within %s", upd, f.opts.AnswerWait)
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, m := range f.TelegramMessages(chat) {
		if m.ReplyTo == id {
			return m.Text, nil
		}
	}
	return "", nil
}

// Errors lists the requests the fake refused, as "method: code description".
func (f *TelegramFake) Errors() []string { return f.refusals.Errors() }

// Throttled lists the sends refused with 429 (kept apart from Errors: a
// 429 is the platform working as meant, and a sender that honours
// retry_after is correct).
func (f *TelegramFake) Throttled() []string { return f.refusals.Throttled() }

// SetWebhook points delivery at url with secret, as setWebhook does.
func (f *TelegramFake) SetWebhook(url, secret string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hookURL, f.hookSecret = url, secret
	f.notify()
}

// DeleteWebhook removes the webhook as a deleteWebhook call from outside
// does (another program with the token, an operator with curl): updates
// wait for getUpdates or a new webhook.
func (f *TelegramFake) DeleteWebhook() { f.SetWebhook("", "") }

// WebhookURL is the webhook Telegram delivers to now, "" when none.
func (f *TelegramFake) WebhookURL() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.hookURL
}

// FailAll makes every later call fail until FailAll(0): with status (a
// 5xx) answered by a proxy's HTML page, as nginx in front of the Bot API
// answers when the API is down, or with FailConnection closed without an
// answer. A poll already held is answered as usual. Calls still counts
// them.
func (f *TelegramFake) FailAll(status int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failing = status
}

// SetEmptyPollsAtOnce turns EmptyPollsAtOnce on or off; a poll already
// held is answered at once when it is turned on.
func (f *TelegramFake) SetEmptyPollsAtOnce(on bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.emptyAtOnce = on
	f.notify()
}

// RevokeToken makes the fake refuse Token from now on with Telegram's 401,
// as after /revoke in @BotFather; RestoreToken accepts it again.
func (f *TelegramFake) RevokeToken() { f.setRevoked(true) }

// RestoreToken undoes RevokeToken.
func (f *TelegramFake) RestoreToken() { f.setRevoked(false) }

func (f *TelegramFake) setRevoked(v bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.revoked = v
}

// Calls is how many requests for method (any case: "getUpdates") the
// fake has had, answered, refused or failed.
func (f *TelegramFake) Calls(method string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[strings.ToLower(method)]
}
