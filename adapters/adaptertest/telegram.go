package adaptertest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"mime/multipart"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/gatehouse/gatehouse/adapters/telegram"
	"github.com/gatehouse/gatehouse/gateway"
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
}

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
// deleteWebhook, getWebhookInfo) and refuses, with Telegram's status and
// description, what Telegram refuses: a wrong token, an unknown method, an
// unknown chat, topic or message, empty or too long text, HTML that does
// not parse, a bad inline keyboard, callback data over 64 bytes, an edit
// that changes nothing, a callback query answered twice or too late, two
// concurrent getUpdates, getUpdates while a webhook is set.
//
// Chats are named by handles: a handle starting with "group" is a
// supergroup, "forum" a supergroup with topics, "channel" a channel; any
// other handle is the private chat with the user of that name (its id is
// that user's id, as on Telegram). Chats exist from their first update on.
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

	t    TB
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
	errs       []string
	throttled  []string
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

var _ Fake = (*TelegramFake)(nil)

// NewTelegram starts a Telegram fake; t's cleanup stops it.
func NewTelegram(t TB, opts TelegramOptions) *TelegramFake {
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
		Token:      TelegramToken,
		t:          t,
		opts:       opts,
		closed:     make(chan struct{}),
		users:      map[string]*tgUser{},
		nextUser:   1000,
		chats:      map[string]*tgChat{},
		chatsByID:  map[int64]*tgChat{},
		nextGroup:  1000000000000,
		updateByID: map[int64]*tgUpdate{},
		nextUpdate: 700000000,
		queries:    map[string]*tgQuery{},
		nextQuery:  4815162342000000000,
		changed:    make(chan struct{}),
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
func NewTelegramAdapter(t TB, opts TelegramOptions) (gateway.Adapter, *TelegramFake) {
	t.Helper()
	f := NewTelegram(t, opts)
	cfg := telegram.Config{
		Token:       f.Token,
		APIURL:      f.URL,
		PollTimeout: f.opts.PollTimeout,
		Logger:      slog.New(slog.NewTextHandler(tbWriter(t), &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	if !opts.Webhook {
		a, err := telegram.New(cfg)
		if err != nil {
			t.Fatalf("telegram adapter: %v", err)
		}
		return a, f
	}
	w := &telegramWebhook{}
	hook := httptest.NewServer(http.HandlerFunc(w.serve))
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
func TelegramFactory(t TB) (gateway.Adapter, Fake) {
	t.Helper()
	return NewTelegramAdapter(t, TelegramOptions{})
}

// TelegramWebhookFactory is the shared suite's Factory for Telegram in
// webhook mode.
func TelegramWebhookFactory(t TB) (gateway.Adapter, Fake) {
	t.Helper()
	return NewTelegramAdapter(t, TelegramOptions{Webhook: true})
}

// telegramWebhook is a webhook-mode adapter that also serves its own
// Handler while Connect runs, so that a test needs no HTTP server of its
// own. Between Connects the webhook answers 503 and the fake retries.
type telegramWebhook struct {
	*telegram.Adapter
	h atomic.Pointer[http.Handler]
}

func (w *telegramWebhook) Connect(ctx context.Context, sink gateway.Sink) error {
	h := w.Adapter.Handler(sink)
	w.h.Store(&h)
	defer w.h.Store(nil)
	return w.Adapter.Connect(ctx, sink)
}

func (w *telegramWebhook) serve(rw http.ResponseWriter, r *http.Request) {
	h := w.h.Load()
	if h == nil {
		http.Error(rw, "not connected", http.StatusServiceUnavailable)
		return
	}
	(*h).ServeHTTP(rw, r)
}

// tbWriter writes log lines to t until the test has ended (testing
// panics on a log after that, and an adapter's last words may come late).
func tbWriter(t TB) io.Writer {
	w := &tbLog{t: t}
	t.Cleanup(func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.done = true
	})
	return w
}

type tbLog struct {
	mu   sync.Mutex
	t    TB
	done bool
}

func (w *tbLog) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Logf("%s", bytes.TrimRight(p, "\n"))
	}
	return len(p), nil
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
func (f *TelegramFake) Messages(chat string) []Message {
	var out []Message
	for _, m := range f.TelegramMessages(chat) {
		msg := Message{ID: strconv.Itoa(m.ID), Text: m.Text, Edited: m.Edited}
		for _, row := range m.Buttons {
			for _, b := range row {
				if b.Data != "" {
					msg.Buttons = append(msg.Buttons, b.Data)
				}
			}
		}
		out = append(out, msg)
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

// Errors lists the requests the fake refused, as "method: code description".
func (f *TelegramFake) Errors() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.errs)
}

// Throttled lists the sends refused with 429 (kept apart from Errors: a
// 429 is the platform working as meant, and a sender that honours
// retry_after is correct).
func (f *TelegramFake) Throttled() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.throttled)
}

// SetWebhook points delivery at url with secret, as setWebhook does.
func (f *TelegramFake) SetWebhook(url, secret string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hookURL, f.hookSecret = url, secret
	f.notify()
}

// ---- state ----

func (f *TelegramFake) user(handle string) *tgUser {
	u := f.users[handle]
	if u == nil {
		f.nextUser++
		u = &tgUser{id: f.nextUser, handle: handle}
		f.users[handle] = u
	}
	return u
}

func (f *TelegramFake) chat(handle string) *tgChat {
	c := f.chats[handle]
	if c != nil {
		return c
	}
	c = &tgChat{handle: handle, typ: "private", topics: map[int]bool{}, byID: map[int]*tgMessage{}}
	switch {
	case strings.HasPrefix(handle, "group"):
		c.typ = "supergroup"
	case strings.HasPrefix(handle, "forum"):
		c.typ, c.forum = "supergroup", true
	case strings.HasPrefix(handle, "channel"):
		c.typ = "channel"
	}
	if c.typ == "private" {
		c.id = f.user(handle).id
	} else {
		f.nextGroup++
		c.id = -f.nextGroup
	}
	f.chats[handle] = c
	f.chatsByID[c.id] = c
	return c
}

func (f *TelegramFake) chatJSON(c *tgChat) map[string]any {
	j := map[string]any{"id": c.id, "type": c.typ}
	if c.typ == "private" {
		j["first_name"] = firstName(c.handle)
		j["username"] = c.handle
	} else {
		j["title"] = c.handle
	}
	if c.forum {
		j["is_forum"] = true
	}
	return j
}

func (f *TelegramFake) userJSON(u *tgUser, bot bool) map[string]any {
	return map[string]any{"id": u.id, "is_bot": bot, "first_name": firstName(u.handle), "username": u.handle}
}

func botUserJSON() map[string]any {
	return map[string]any{"id": telegramBotID, "is_bot": true, "first_name": "Gatehouse", "username": "gatehouse_bot"}
}

func firstName(handle string) string {
	r, n := utf8.DecodeRuneInString(handle)
	return strings.ToUpper(string(r)) + handle[n:]
}

// userMessage makes a message from user in c, stored in the chat (so the
// bot can reply to it), and returns its JSON for the caller to finish.
func (f *TelegramFake) userMessage(c *tgChat, user string, bot bool, topic int) map[string]any {
	c.nextMsg++
	m := &tgMessage{date: time.Now().Unix(), isBot: bot}
	m.ID = c.nextMsg
	m.ThreadID = topic
	j := map[string]any{"message_id": m.ID, "date": m.date, "chat": f.chatJSON(c)}
	if c.typ == "channel" {
		j["sender_chat"] = f.chatJSON(c)
	} else {
		m.from = f.user(user)
		j["from"] = f.userJSON(m.from, bot)
	}
	if topic != 0 {
		j["message_thread_id"] = topic
		j["is_topic_message"] = true
	}
	c.msgs = append(c.msgs, m)
	c.byID[m.ID] = m
	return j
}

func (f *TelegramFake) queueMessage(c *tgChat, m map[string]any) string {
	kind := "message"
	if c.typ == "channel" {
		kind = "channel_post"
	}
	return strconv.FormatInt(f.queue(kind, map[string]any{kind: m}), 10)
}

// queue adds an update; f.mu is held.
func (f *TelegramFake) queue(kind string, update map[string]any) int64 {
	f.nextUpdate++
	id := f.nextUpdate
	update["update_id"] = id
	body, err := json.Marshal(update)
	if err != nil {
		f.t.Fatalf("telegram fake: update: %v", err)
	}
	u := &tgUpdate{id: id, kind: kind, body: body}
	f.updates = append(f.updates, u)
	f.updateByID[id] = u
	f.notify()
	return id
}

// notify wakes whoever waits for updates; f.mu is held.
func (f *TelegramFake) notify() {
	close(f.changed)
	f.changed = make(chan struct{})
}

func (f *TelegramFake) messageJSON(c *tgChat, m *tgMessage) map[string]any {
	j := map[string]any{"message_id": m.ID, "date": m.date, "chat": f.chatJSON(c), "text": m.Text}
	if m.fromBot {
		j["from"] = botUserJSON()
	} else if m.from != nil {
		j["from"] = f.userJSON(m.from, m.isBot)
	}
	if len(m.entities) > 0 {
		j["entities"] = m.entities
	}
	if m.ThreadID != 0 {
		j["message_thread_id"] = m.ThreadID
		j["is_topic_message"] = true
	}
	if m.ReplyTo != 0 {
		if r := c.byID[m.ReplyTo]; r != nil {
			j["reply_to_message"] = map[string]any{"message_id": r.ID, "date": r.date, "chat": f.chatJSON(c), "text": r.Text}
		}
	}
	if len(m.Buttons) > 0 {
		j["reply_markup"] = map[string]any{"inline_keyboard": m.Buttons}
	}
	if m.Edited {
		j["edit_date"] = time.Now().Unix()
	}
	return j
}

// remember adds the message's buttons to what can be pressed on it.
func (m *tgMessage) remember() {
	for _, row := range m.Buttons {
		for _, b := range row {
			if b.Data == "" {
				continue
			}
			if m.pressable == nil {
				m.pressable = map[string]bool{}
			}
			m.pressable[b.Data] = true
		}
	}
}

func cloneButtons(rows [][]TelegramButton) [][]TelegramButton {
	if rows == nil {
		return nil
	}
	out := make([][]TelegramButton, len(rows))
	for i, r := range rows {
		out[i] = slices.Clone(r)
	}
	return out
}

// ---- the Bot API ----

func (f *TelegramFake) serve(w http.ResponseWriter, r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.Path, "/bot")
	slash := strings.LastIndexByte(rest, '/')
	if !ok || slash < 0 {
		f.reply(w, "?", nil, &tgErr{code: http.StatusNotFound, desc: "Not Found"})
		return
	}
	token, method := rest[:slash], rest[slash+1:]
	if token != f.Token {
		f.reply(w, method, nil, &tgErr{code: http.StatusUnauthorized, desc: "Unauthorized"})
		return
	}
	if r.Method != http.MethodPost && r.Method != http.MethodGet {
		f.reply(w, method, nil, &tgErr{code: http.StatusMethodNotAllowed, desc: "Method Not Allowed"})
		return
	}
	p, err := readTelegramParams(r)
	if err != nil {
		f.reply(w, method, nil, badRequest("%v", err))
		return
	}
	for k, v := range p {
		if !utf8.ValidString(v) {
			f.reply(w, method, nil, badRequest("strings must be encoded in UTF-8 (%s)", k))
			return
		}
	}
	var res any
	var e *tgErr
	// Method names are case-insensitive on Telegram.
	switch strings.ToLower(method) {
	case "getme":
		res = botUserJSON()
	case "getupdates":
		res, e = f.getUpdates(r, p)
	case "sendmessage":
		res, e = f.sendMessage(p)
	case "editmessagetext":
		res, e = f.editMessage(p, true)
	case "editmessagereplymarkup":
		res, e = f.editMessage(p, false)
	case "answercallbackquery":
		res, e = f.answerCallbackQuery(p)
	case "setwebhook":
		res, e = f.setWebhook(p)
	case "deletewebhook":
		res, e = f.deleteWebhook(p)
	case "getwebhookinfo":
		res = f.webhookInfo()
	default:
		e = &tgErr{code: http.StatusNotFound, desc: "Not Found"}
	}
	f.reply(w, method, res, e)
}

func (f *TelegramFake) reply(w http.ResponseWriter, method string, res any, e *tgErr) {
	w.Header().Set("Content-Type", "application/json")
	if e == nil {
		_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "result": res})
		return
	}
	f.mu.Lock()
	line := fmt.Sprintf("%s: %d %s", method, e.code, e.desc)
	if e.code == http.StatusTooManyRequests {
		f.throttled = append(f.throttled, line)
	} else {
		f.errs = append(f.errs, line)
	}
	f.mu.Unlock()
	body := map[string]any{"ok": false, "error_code": e.code, "description": e.desc}
	if e.retryAfter > 0 {
		body["parameters"] = map[string]any{"retry_after": e.retryAfter}
	}
	w.WriteHeader(e.code)
	_ = json.NewEncoder(w).Encode(body)
}

// tgParams are a call's parameters, each as text: a JSON body's strings
// unquoted and its other values as JSON text, as Telegram reads a form.
type tgParams map[string]string

// readTelegramParams reads parameters the ways the Bot API takes them: a
// query string, and a multipart, url-encoded or JSON body.
func readTelegramParams(r *http.Request) (tgParams, error) {
	p := tgParams{}
	for k, v := range r.URL.Query() {
		p[k] = v[0]
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 10<<20))
	if err != nil {
		return nil, fmt.Errorf("unreadable body: %w", err)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		// getMe and friends: a multipart content type with nothing in it.
		return p, nil
	}
	ct, ctParams, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch ct {
	case "multipart/form-data":
		mr := multipart.NewReader(bytes.NewReader(body), ctParams["boundary"])
		for {
			part, err := mr.NextPart()
			if err == io.EOF {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("bad multipart body: %w", err)
			}
			if part.FileName() != "" {
				return nil, errors.New("file uploads are not modelled by the fake")
			}
			v, err := io.ReadAll(part)
			if err != nil {
				return nil, fmt.Errorf("bad multipart body: %w", err)
			}
			p[part.FormName()] = string(v)
		}
	case "application/x-www-form-urlencoded":
		vals, err := url.ParseQuery(string(body))
		if err != nil {
			return nil, fmt.Errorf("bad form body: %w", err)
		}
		for k, v := range vals {
			p[k] = v[0]
		}
	case "application/json":
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(body, &obj); err != nil {
			return nil, fmt.Errorf("bad JSON body: %w", err)
		}
		for k, raw := range obj {
			var s string
			switch {
			case string(raw) == "null":
				continue
			case json.Unmarshal(raw, &s) == nil:
				p[k] = s
			default:
				p[k] = string(raw)
			}
		}
	default:
		return nil, fmt.Errorf("unsupported content type %q", ct)
	}
	return p, nil
}

func (p tgParams) int(k string) (int64, bool, *tgErr) {
	v, ok := p[k]
	if !ok || v == "" {
		return 0, false, nil
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil {
		return 0, true, badRequest("field %q must be of type Integer", k)
	}
	return n, true, nil
}

func (p tgParams) bool(k string) bool {
	v := strings.ToLower(strings.TrimSpace(p[k]))
	return v == "true" || v == "1"
}

// chatParam resolves chat_id to a known chat; f.mu is held.
func (f *TelegramFake) chatParam(p tgParams) (*tgChat, *tgErr) {
	v := strings.TrimSpace(p["chat_id"])
	if v == "" {
		return nil, badRequest("chat_id is empty")
	}
	if name, ok := strings.CutPrefix(v, "@"); ok {
		if c := f.chats[name]; c != nil && c.typ != "private" {
			return c, nil
		}
		return nil, badRequest("chat not found")
	}
	id, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return nil, badRequest("chat not found")
	}
	c := f.chatsByID[id]
	if c == nil {
		return nil, badRequest("chat not found")
	}
	return c, nil
}

// ---- getUpdates ----

// allowedKind reports whether an update of kind goes to the bot under
// the allowed_updates it asked for (Telegram's default leaves out
// chat_member and reactions); f.mu is held.
func (f *TelegramFake) allowedKind(kind string) bool {
	if f.allowed == nil {
		return kind != "chat_member" && kind != "message_reaction" && kind != "message_reaction_count"
	}
	return slices.Contains(f.allowed, kind)
}

func (f *TelegramFake) setAllowed(p tgParams) *tgErr {
	raw, ok := p["allowed_updates"]
	if !ok {
		return nil
	}
	var list []string
	if err := json.Unmarshal([]byte(raw), &list); err != nil {
		return badRequest("can't parse allowed updates")
	}
	if len(list) == 0 {
		f.allowed = nil
	} else {
		f.allowed = list
	}
	return nil
}

// confirm forgets updates below offset, as getUpdates does; f.mu is held.
func (f *TelegramFake) confirm(offset int64) {
	if offset <= 0 {
		return
	}
	for _, u := range f.updates[f.firstOpen:] {
		if u.confirmed || u.id >= offset {
			continue
		}
		if u.redeliver && !u.delivered {
			continue
		}
		u.confirmed = true
	}
	f.advance()
}

// advance moves firstOpen past confirmed updates; f.mu is held.
func (f *TelegramFake) advance() {
	for f.firstOpen < len(f.updates) && f.updates[f.firstOpen].confirmed {
		f.firstOpen++
	}
}

// pending are the updates getUpdates would return; f.mu is held. Updates
// of kinds the bot did not ask for are dropped, as Telegram does.
func (f *TelegramFake) pending(offset int64, limit int) []*tgUpdate {
	var out []*tgUpdate
	for _, u := range f.updates[f.firstOpen:] {
		if len(out) == limit {
			break
		}
		if u.confirmed {
			continue
		}
		if !f.allowedKind(u.kind) {
			u.confirmed = true
			continue
		}
		if u.id >= offset || (u.redeliver && !u.delivered) {
			out = append(out, u)
		}
	}
	f.advance()
	return out
}

func (f *TelegramFake) getUpdates(r *http.Request, p tgParams) (any, *tgErr) {
	offset, _, e := p.int("offset")
	if e != nil {
		return nil, e
	}
	limit, ok, e := p.int("limit")
	if e != nil {
		return nil, e
	}
	if !ok || limit <= 0 || limit > 100 {
		limit = 100
	}
	timeout, _, e := p.int("timeout")
	if e != nil {
		return nil, e
	}
	f.mu.Lock()
	if e := f.setAllowed(p); e != nil {
		f.mu.Unlock()
		return nil, e
	}
	if f.hookURL != "" {
		f.mu.Unlock()
		return nil, &tgErr{code: http.StatusConflict, desc: "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first"}
	}
	if f.pollKick != nil {
		close(f.pollKick)
	}
	kick := make(chan struct{})
	f.pollKick = kick
	defer func() {
		f.mu.Lock()
		if f.pollKick == kick {
			f.pollKick = nil
		}
		f.mu.Unlock()
	}()
	// Telegram holds the request up to timeout seconds while there is
	// nothing to return; a fake that answered [] at once would make a
	// client spin.
	deadline := time.NewTimer(time.Duration(max(timeout, 0)) * time.Second)
	defer deadline.Stop()
	for {
		f.confirm(offset)
		ups := f.pending(offset, int(limit))
		if len(ups) > 0 || timeout <= 0 {
			out := make([]json.RawMessage, 0, len(ups))
			for _, u := range ups {
				u.delivered = true
				out = append(out, u.body)
			}
			f.mu.Unlock()
			return out, nil
		}
		changed := f.changed
		f.mu.Unlock()
		select {
		case <-changed:
		case <-deadline.C:
			f.mu.Lock()
			timeout = 0
			continue
		case <-kick:
			// A client that gave up on this request is not a second
			// poller: give its cancellation a moment to arrive.
			select {
			case <-r.Context().Done():
				return []json.RawMessage{}, nil
			case <-time.After(200 * time.Millisecond):
			}
			return nil, &tgErr{code: http.StatusConflict, desc: "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running"}
		case <-r.Context().Done():
			return []json.RawMessage{}, nil
		case <-f.closed:
			return []json.RawMessage{}, nil
		}
		f.mu.Lock()
	}
}

// ---- webhooks ----

func (f *TelegramFake) setWebhook(p tgParams) (any, *tgErr) {
	raw := strings.TrimSpace(p["url"])
	f.mu.Lock()
	defer f.mu.Unlock()
	if raw == "" {
		// An empty URL removes the webhook.
		f.hookURL, f.hookSecret = "", ""
		return true, nil
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return nil, badRequest("bad webhook: invalid webhook URL specified")
	}
	loopback := false
	if ip := net.ParseIP(u.Hostname()); ip != nil && ip.IsLoopback() {
		loopback = true
	}
	if u.Scheme != "https" && !(u.Scheme == "http" && loopback) {
		return nil, badRequest("bad webhook: An HTTPS URL must be provided for webhook")
	}
	secret := p["secret_token"]
	if secret != "" && !validSecret(secret) {
		return nil, badRequest("bad webhook: secret token contains unallowed characters")
	}
	if e := f.setAllowed(p); e != nil {
		return nil, e
	}
	if p.bool("drop_pending_updates") {
		f.dropPending()
	}
	f.hookURL, f.hookSecret = raw, secret
	f.notify()
	return true, nil
}

func validSecret(s string) bool {
	if len(s) > 256 {
		return false
	}
	for _, r := range s {
		if r != '_' && r != '-' && (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') && (r < '0' || r > '9') {
			return false
		}
	}
	return true
}

func (f *TelegramFake) deleteWebhook(p tgParams) (any, *tgErr) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hookURL, f.hookSecret = "", ""
	if p.bool("drop_pending_updates") {
		f.dropPending()
	}
	return true, nil
}

// dropPending forgets every update not yet acknowledged; f.mu is held.
func (f *TelegramFake) dropPending() {
	for _, u := range f.updates[f.firstOpen:] {
		u.confirmed = true
	}
	f.advance()
}

func (f *TelegramFake) webhookInfo() any {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, u := range f.updates[f.firstOpen:] {
		if !u.confirmed {
			n++
		}
	}
	return map[string]any{"url": f.hookURL, "has_custom_certificate": false, "pending_update_count": n}
}

// deliverWebhooks posts updates, oldest first, to the webhook while one
// is set, each until it is answered 2xx.
func (f *TelegramFake) deliverWebhooks(ctx context.Context) {
	defer f.delivery.Done()
	client := &http.Client{Timeout: 10 * time.Second}
	for {
		f.mu.Lock()
		hook, secret := f.hookURL, f.hookSecret
		var next *tgUpdate
		if hook != "" {
			for _, u := range f.updates[f.firstOpen:] {
				if u.confirmed {
					continue
				}
				if !f.allowedKind(u.kind) {
					u.confirmed = true
					continue
				}
				next = u
				break
			}
			f.advance()
		}
		changed := f.changed
		f.mu.Unlock()
		if next == nil {
			select {
			case <-changed:
				continue
			case <-ctx.Done():
				return
			}
		}
		status := 0
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, hook, bytes.NewReader(next.body))
		if err == nil {
			req.Header.Set("Content-Type", "application/json")
			if secret != "" {
				req.Header.Set("X-Telegram-Bot-Api-Secret-Token", secret)
			}
			if resp, err := client.Do(req); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				status = resp.StatusCode
			}
		}
		if ctx.Err() != nil {
			return
		}
		f.mu.Lock()
		next.statuses = append(next.statuses, status)
		next.delivered = true
		ok := status >= 200 && status < 300
		if ok {
			next.confirmed = true
			f.advance()
		}
		f.mu.Unlock()
		if !ok {
			t := time.NewTimer(f.opts.RedeliverDelay)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return
			}
		}
	}
}

// ---- sending ----

func (f *TelegramFake) sendMessage(p tgParams) (any, *tgErr) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, e := f.chatParam(p)
	if e != nil {
		return nil, e
	}
	text, entities, e := parseText(p)
	if e != nil {
		return nil, e
	}
	m := &tgMessage{fromBot: true, date: time.Now().Unix(), entities: entities}
	m.Text, m.Source, m.ParseMode = text, p["text"], p["parse_mode"]
	thread, _, e := p.int("message_thread_id")
	if e != nil {
		return nil, e
	}
	if thread != 0 {
		if !c.forum || !c.topics[int(thread)] {
			return nil, badRequest("message thread not found")
		}
		m.ThreadID = int(thread)
	}
	if e := f.replyTo(c, p, m); e != nil {
		return nil, e
	}
	if raw, ok := p["reply_markup"]; ok {
		rows, e := parseKeyboard(raw)
		if e != nil {
			return nil, e
		}
		m.Buttons = rows
	}
	m.remember()
	m.LinkPreviewDisabled = p.bool("disable_web_page_preview")
	if raw, ok := p["link_preview_options"]; ok {
		var lp struct {
			IsDisabled bool `json:"is_disabled"`
		}
		if err := json.Unmarshal([]byte(raw), &lp); err != nil {
			return nil, badRequest("can't parse link preview options JSON object")
		}
		m.LinkPreviewDisabled = lp.IsDisabled
	}
	if f.opts.RateLimit {
		if e := f.throttle(c, time.Now()); e != nil {
			return nil, e
		}
	}
	c.nextMsg++
	m.ID = c.nextMsg
	c.msgs = append(c.msgs, m)
	c.byID[m.ID] = m
	return f.messageJSON(c, m), nil
}

// replyTo reads reply_parameters (or the older reply_to_message_id);
// f.mu is held.
func (f *TelegramFake) replyTo(c *tgChat, p tgParams, m *tgMessage) *tgErr {
	target, _, e := p.int("reply_to_message_id")
	if e != nil {
		return e
	}
	allowMissing := p.bool("allow_sending_without_reply")
	if raw, ok := p["reply_parameters"]; ok {
		var rp struct {
			MessageID                int64 `json:"message_id"`
			AllowSendingWithoutReply bool  `json:"allow_sending_without_reply"`
		}
		if err := json.Unmarshal([]byte(raw), &rp); err != nil {
			return badRequest("can't parse reply parameters JSON object")
		}
		target, allowMissing = rp.MessageID, rp.AllowSendingWithoutReply
	}
	if target == 0 {
		return nil
	}
	if c.byID[int(target)] == nil {
		if allowMissing {
			return nil
		}
		return badRequest("message to be replied not found")
	}
	m.ReplyTo = int(target)
	return nil
}

// throttle applies the rate limits to a send to c; f.mu is held.
func (f *TelegramFake) throttle(c *tgChat, now time.Time) *tgErr {
	rates := f.opts.Rates
	var wait time.Duration
	if !c.lastSend.IsZero() {
		if since := now.Sub(c.lastSend); since < rates.PerChat*9/10 {
			wait = max(wait, rates.PerChat-since)
		}
	}
	if c.typ != "private" {
		c.sends = trimBefore(c.sends, now.Add(-time.Minute))
		if len(c.sends) >= rates.GroupPerMinute {
			wait = max(wait, c.sends[len(c.sends)-rates.GroupPerMinute].Add(time.Minute).Sub(now))
		}
	}
	f.sendLog = trimBefore(f.sendLog, now.Add(-time.Second))
	if len(f.sendLog) >= rates.PerSecond {
		wait = max(wait, f.sendLog[len(f.sendLog)-rates.PerSecond].Add(time.Second).Sub(now))
	}
	if wait > 0 {
		secs := int((wait + time.Second - 1) / time.Second)
		return &tgErr{code: http.StatusTooManyRequests, desc: fmt.Sprintf("Too Many Requests: retry after %d", secs), retryAfter: secs}
	}
	c.lastSend = now
	c.sends = append(c.sends, now)
	f.sendLog = append(f.sendLog, now)
	return nil
}

func trimBefore(ts []time.Time, cut time.Time) []time.Time {
	i := 0
	for i < len(ts) && !ts[i].After(cut) {
		i++
	}
	return ts[i:]
}

func (f *TelegramFake) editMessage(p tgParams, withText bool) (any, *tgErr) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if p["inline_message_id"] != "" {
		return nil, badRequest("MESSAGE_ID_INVALID")
	}
	c, e := f.chatParam(p)
	if e != nil {
		return nil, e
	}
	id, ok, e := p.int("message_id")
	if e != nil {
		return nil, e
	}
	if !ok {
		return nil, badRequest("message identifier is not specified")
	}
	m := c.byID[int(id)]
	if m == nil {
		return nil, badRequest("message to edit not found")
	}
	if !m.fromBot {
		return nil, badRequest("message can't be edited")
	}
	text, source, mode, entities := m.Text, m.Source, m.ParseMode, m.entities
	if withText {
		text, entities, e = parseText(p)
		if e != nil {
			return nil, e
		}
		source, mode = p["text"], p["parse_mode"]
	}
	// Without reply_markup, an edit leaves no inline keyboard: Telegram
	// drops the buttons of a message whose text is edited without them.
	var rows [][]TelegramButton
	if raw, ok := p["reply_markup"]; ok {
		rows, e = parseKeyboard(raw)
		if e != nil {
			return nil, e
		}
	}
	if len(rows) == 0 {
		rows = nil
	}
	if text == m.Text && sameEntities(entities, m.entities) && sameButtons(rows, m.Buttons) {
		return nil, badRequest("message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message")
	}
	m.Text, m.Source, m.ParseMode, m.entities, m.Buttons, m.Edited = text, source, mode, entities, rows, true
	m.remember()
	if withText {
		if raw, ok := p["link_preview_options"]; ok {
			var lp struct {
				IsDisabled bool `json:"is_disabled"`
			}
			if json.Unmarshal([]byte(raw), &lp) == nil {
				m.LinkPreviewDisabled = lp.IsDisabled
			}
		}
	}
	return f.messageJSON(c, m), nil
}

func sameEntities(a, b []tgEntity) bool { return slices.Equal(a, b) }

func sameButtons(a, b [][]TelegramButton) bool {
	return slices.EqualFunc(a, b, func(x, y []TelegramButton) bool { return slices.Equal(x, y) })
}

func (f *TelegramFake) answerCallbackQuery(p tgParams) (any, *tgErr) {
	text := p["text"]
	if utf8.RuneCountInString(text) > 200 {
		return nil, badRequest("MESSAGE_TOO_LONG")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	q := f.queries[p["callback_query_id"]]
	if q == nil || q.answered || time.Since(q.created) > f.opts.QueryTTL {
		return nil, badRequest("query is too old and response timeout expired or query ID is invalid")
	}
	q.answered, q.answer = true, text
	close(q.done)
	return true, nil
}

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
		text, entities, err = parseTelegramHTML(src)
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
type tgEntity struct {
	Type     string `json:"type"`
	Offset   int    `json:"offset"`
	Length   int    `json:"length"`
	URL      string `json:"url,omitempty"`
	Language string `json:"language,omitempty"`
}

// TelegramHTMLText is what a user sees for s sent with parse_mode HTML
// (before Telegram trims white space), or why Telegram refuses s: the
// description after "can't parse entities: ".
func TelegramHTMLText(s string) (string, error) {
	text, _, err := parseTelegramHTML(s)
	return text, err
}

var telegramTags = map[string]string{
	"b": "bold", "strong": "bold", "i": "italic", "em": "italic", "u": "underline", "ins": "underline",
	"s": "strikethrough", "strike": "strikethrough", "del": "strikethrough", "tg-spoiler": "spoiler",
	"span": "spoiler", "a": "text_link", "code": "code", "pre": "pre", "blockquote": "blockquote",
	"tg-emoji": "custom_emoji",
}

// parseTelegramHTML follows Telegram's HTML parse mode: the tags above,
// properly nested and closed; &lt; &gt; &amp; &quot; and numeric
// entities; any other & is literal; a < that does not open a supported
// tag is an error (that is what a missing escape runs into).
func parseTelegramHTML(s string) (string, []tgEntity, error) {
	type open struct {
		tag, typ, url, lang string
		start               int
	}
	var out strings.Builder
	var stack []open
	var entities []tgEntity
	pos := 0 // UTF-16 offset in out
	for i := 0; i < len(s); {
		switch s[i] {
		case '&':
			if r, n, ok := decodeHTMLEntity(s[i:]); ok {
				out.WriteRune(r)
				pos += utf16Len(r)
				i += n
				continue
			}
			out.WriteByte('&')
			pos++
			i++
		case '<':
			begin := i
			if i+1 < len(s) && s[i+1] == '/' {
				end := strings.IndexByte(s[i:], '>')
				if end < 0 {
					return "", nil, fmt.Errorf("Unclosed end tag at byte offset %d", begin)
				}
				name := strings.ToLower(strings.TrimSpace(s[i+2 : i+end]))
				if len(stack) == 0 {
					return "", nil, fmt.Errorf("Unexpected end tag at byte offset %d", begin)
				}
				top := stack[len(stack)-1]
				if name != "" && name != top.tag {
					return "", nil, fmt.Errorf("Unmatched end tag at byte offset %d, expected \"</%s>\", found \"</%s>\"", begin, top.tag, name)
				}
				stack = stack[:len(stack)-1]
				if pos > top.start {
					entities = append(entities, tgEntity{Type: top.typ, Offset: top.start, Length: pos - top.start, URL: top.url, Language: top.lang})
				}
				i += end + 1
				continue
			}
			j := i + 1
			for j < len(s) && !isHTMLSpace(s[j]) && s[j] != '>' {
				j++
			}
			if j >= len(s) {
				return "", nil, fmt.Errorf("Unclosed start tag at byte offset %d", begin)
			}
			name := strings.ToLower(s[i+1 : j])
			typ, ok := telegramTags[name]
			if !ok {
				return "", nil, fmt.Errorf("Unsupported start tag \"%s\" at byte offset %d", name, begin)
			}
			attrs := map[string]string{}
			for {
				for j < len(s) && isHTMLSpace(s[j]) {
					j++
				}
				if j >= len(s) {
					return "", nil, fmt.Errorf("Unclosed start tag at byte offset %d", begin)
				}
				if s[j] == '>' {
					j++
					break
				}
				k := j
				for j < len(s) && (isASCIIAlnum(s[j]) || s[j] == '-' || s[j] == '_') {
					j++
				}
				if k == j {
					return "", nil, fmt.Errorf("Empty attribute name in the tag \"%s\" at byte offset %d", name, begin)
				}
				attr := strings.ToLower(s[k:j])
				for j < len(s) && isHTMLSpace(s[j]) {
					j++
				}
				if j >= len(s) || s[j] != '=' {
					attrs[attr] = ""
					continue
				}
				j++
				for j < len(s) && isHTMLSpace(s[j]) {
					j++
				}
				if j >= len(s) {
					return "", nil, fmt.Errorf("Unclosed start tag at byte offset %d", begin)
				}
				var val string
				if q := s[j]; q == '"' || q == '\'' {
					end := strings.IndexByte(s[j+1:], q)
					if end < 0 {
						return "", nil, fmt.Errorf("Unclosed end of attribute value in the tag \"%s\" at byte offset %d", name, begin)
					}
					val = s[j+1 : j+1+end]
					j += end + 2
				} else {
					k := j
					for j < len(s) && !isHTMLSpace(s[j]) && s[j] != '>' {
						j++
					}
					val = s[k:j]
				}
				attrs[attr] = decodeHTMLEntities(val)
			}
			o := open{tag: name, typ: typ, start: pos}
			switch name {
			case "span":
				if attrs["class"] != "tg-spoiler" {
					return "", nil, fmt.Errorf("Tag \"span\" must have class \"tg-spoiler\" at byte offset %d", begin)
				}
			case "a":
				o.url = attrs["href"]
			case "code":
				if lang, ok := strings.CutPrefix(attrs["class"], "language-"); ok {
					o.lang = lang
				}
			case "blockquote":
				if _, ok := attrs["expandable"]; ok {
					o.typ = "expandable_blockquote"
				}
			case "tg-emoji":
				if attrs["emoji-id"] == "" {
					return "", nil, fmt.Errorf("Custom emoji entity must have a valid emoji-id")
				}
			}
			stack = append(stack, o)
			i = j
		default:
			r, n := utf8.DecodeRuneInString(s[i:])
			out.WriteString(s[i : i+n])
			pos += utf16Len(r)
			i += n
		}
	}
	if len(stack) > 0 {
		return "", nil, fmt.Errorf("Can't find end tag corresponding to start tag \"%s\"", stack[len(stack)-1].tag)
	}
	slices.SortStableFunc(entities, func(a, b tgEntity) int { return a.Offset - b.Offset })
	return out.String(), entities, nil
}

func isHTMLSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func isASCIIAlnum(c byte) bool {
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
}

func utf16Len(r rune) int {
	if r >= 0x10000 {
		return 2
	}
	return 1
}

// decodeHTMLEntity reads one entity at the start of s.
func decodeHTMLEntity(s string) (rune, int, bool) {
	end := strings.IndexByte(s, ';')
	if end < 2 || end > 10 {
		return 0, 0, false
	}
	name := s[1:end]
	switch name {
	case "lt":
		return '<', end + 1, true
	case "gt":
		return '>', end + 1, true
	case "amp":
		return '&', end + 1, true
	case "quot":
		return '"', end + 1, true
	}
	if num, ok := strings.CutPrefix(name, "#"); ok && num != "" {
		base := 10
		if h, ok := strings.CutPrefix(num, "x"); ok {
			num, base = h, 16
		}
		n, err := strconv.ParseUint(num, base, 32)
		if err != nil || n == 0 || n > utf8.MaxRune || (n >= 0xD800 && n <= 0xDFFF) {
			return 0, 0, false
		}
		return rune(n), end + 1, true
	}
	return 0, 0, false
}

func decodeHTMLEntities(s string) string {
	if !strings.Contains(s, "&") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		if s[i] == '&' {
			if r, n, ok := decodeHTMLEntity(s[i:]); ok {
				b.WriteRune(r)
				i += n
				continue
			}
		}
		b.WriteByte(s[i])
		i++
	}
	return b.String()
}
