package adaptertest

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"mime"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/gorilla/websocket"

	slackad "github.com/gatehouse/gatehouse/adapters/slack"
	"github.com/gatehouse/gatehouse/gateway"
)

// SlackFake is a fake Slack: the Web API under /api/ (auth.test,
// apps.connections.open, chat.postMessage, chat.update,
// chat.postEphemeral), a Socket Mode WebSocket, and an Events API client
// that posts signed requests to an adapter's handler. It refuses what Slack
// refuses (a wrong token, an unknown channel, a message without text, bad
// Block Kit, an update of a message that does not exist, an envelope
// acknowledged twice) and lists each refusal in Errors.
//
// Users and chats are named by handles. A chat handle starting with "dm"
// is a direct message (D…, channel_type im), one starting with "mpim" or
// "group" a multi-person one (G…, mpim); any other is a public channel
// (C…). Every chat exists as soon as it is named, and the bot is in all
// of them.
//
// Deliveries follow Slack: an events_api envelope (or an Events API POST)
// not acknowledged in time is resent up to three times with the retry
// number raised and the same event_id. Button presses are not resent.
// Over Socket Mode everything goes, in order, to the newest connection
// (queued until there is one); over the Events API one channel's events
// are posted one after another, which is stricter than Slack and keeps
// suites deterministic.
type SlackFake struct {
	// URL is the fake's base URL: the adapter's Config.APIURL.
	URL string
	// Tokens and secret the fake accepts.
	BotToken, AppToken, SigningSecret string
	// Ids of the workspace, the app and its bot.
	TeamID, AppID, BotUserID, BotID string

	t    TB
	opts slackOptions
	srv  *httptest.Server
	// ctx ends when the fake closes; outgoing Events API requests use it.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu         sync.Mutex
	closed     bool
	seq        int
	tsSeq      int64
	tsBase     int64
	users      map[string]string // handle → U…
	handles    map[string]string // U… → handle
	bots       map[string]string // handle of another bot → B…
	chats      map[string]*slackChat
	chatsByID  map[string]*slackChat
	deliveries map[string]*slackDelivery
	envelopes  map[string]*slackEnvelope
	conns      []*slackConn
	tickets    map[string]bool
	queue      []slackQueued
	waiters    []*slackWaiter
	ephemerals []slackEphemeral
	lastPost   map[string]time.Time
	eventsURL  string
	postQueues map[string]*slackPostQueue
	errs       []string
	throttled  []string
}

// SlackOption configures a SlackFake.
type SlackOption func(*slackOptions)

type slackOptions struct {
	ackTimeout time.Duration
	retryDelay time.Duration
	maxRetries int
	pingEvery  time.Duration
	perChannel time.Duration
	echoBot    bool
}

// SlackAckTimeout sets how long an envelope may go unacknowledged before
// it is resent, and how long a press waits for its answer. Slack's is 3 s,
// the default.
func SlackAckTimeout(d time.Duration) SlackOption {
	return func(o *slackOptions) { o.ackTimeout = d }
}

// SlackRetryDelay sets how long the fake waits before resending an Events
// API request its handler refused. Slack waits about a minute; the
// default is 200 ms.
func SlackRetryDelay(d time.Duration) SlackOption {
	return func(o *slackOptions) { o.retryDelay = d }
}

// SlackPingEvery sets how often the fake pings each socket. slack-go
// reconnects after 30 s without one; the default is 10 s.
func SlackPingEvery(d time.Duration) SlackOption {
	return func(o *slackOptions) { o.pingEvery = d }
}

// SlackRateLimit makes chat.postMessage allow one message per perChannel
// in each channel (Slack: about 1/s), answering HTTP 429 with Retry-After
// in whole seconds, as Slack does. Refusals are listed in Throttled, not
// in Errors: a 429 is the platform's pace, not a wrong request.
func SlackRateLimit(perChannel time.Duration) SlackOption {
	return func(o *slackOptions) { o.perChannel = perChannel }
}

// SlackEchoBotMessages makes every message the bot posts come back as a
// message event carrying the bot's user id and bot_id, as Slack sends them
// to an app subscribed to message events. Off by default so that suites
// count only the updates they made.
func SlackEchoBotMessages() SlackOption {
	return func(o *slackOptions) { o.echoBot = true }
}

type slackChat struct {
	handle, id, typ string
	msgs            []*slackMsg
	byTS            map[string]*slackMsg
}

type slackMsg struct {
	ts, threadTS, text string
	user, botID        string
	// ours: posted by the app through the Web API.
	ours   bool
	blocks []slackBlock
	edited bool
	// shown are all the buttons the message ever had: a client that has
	// not caught up with an edit still shows (and presses) old ones.
	shown []slackShown
}

type slackShown struct {
	btn     slackButton
	blockID string
}

// show remembers the buttons of blocks as shown on m.
func (m *slackMsg) show(blocks []slackBlock) {
	for _, b := range blocks {
		for _, e := range b.Buttons {
			if e.Type == "button" {
				m.shown = append(m.shown, slackShown{e, b.BlockID})
			}
		}
	}
}

type slackBlock struct {
	Type    string        `json:"type"`
	BlockID string        `json:"block_id,omitempty"`
	Text    *slackText    `json:"text,omitempty"`
	Buttons []slackButton `json:"elements,omitempty"`
	raw     json.RawMessage
}

type slackText struct {
	Type  string `json:"type"`
	Text  string `json:"text"`
	Emoji *bool  `json:"emoji,omitempty"`
}

type slackButton struct {
	Type     string     `json:"type"`
	ActionID string     `json:"action_id,omitempty"`
	Text     *slackText `json:"text,omitempty"`
	Value    string     `json:"value,omitempty"`
	Style    string     `json:"style,omitempty"`
	URL      string     `json:"url,omitempty"`
}

// slackDelivery is one event (or press) and every attempt to deliver it.
type slackDelivery struct {
	id       string
	chat     string // channel id of an event; "" for a press
	kind     string // "events_api" or "interactive"
	payload  []byte
	sends    int
	acked    bool
	ackCh    chan struct{}
	statuses []int
	timer    *time.Timer
}

type slackEnvelope struct {
	id    string
	d     *slackDelivery
	acked bool
}

type slackQueued struct {
	env *slackEnvelope
	msg []byte
}

type slackConn struct {
	ws       *websocket.Conn
	wmu      sync.Mutex
	done     chan struct{}
	draining bool
}

func (c *slackConn) write(msg []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_ = c.ws.SetWriteDeadline(time.Now().Add(5 * time.Second))
	return c.ws.WriteMessage(websocket.TextMessage, msg)
}

type slackWaiter struct {
	channel, user, ts string
	ch                chan string
}

type slackEphemeral struct {
	channel, user, threadTS, text string
}

// SlackPost is a message the bot posted, in full.
type SlackPost struct {
	TS, ThreadTS, Text string
	// Sections are the texts of the message's section blocks.
	Sections []string
	Buttons  []SlackButton
	Edited   bool
}

// SlackButton is a button of a posted message.
type SlackButton struct {
	ActionID, Label, Value, Style string
}

// NewSlack starts a fake Slack on loopback; it stops when the test ends.
func NewSlack(t TB, opts ...SlackOption) *SlackFake {
	t.Helper()
	o := slackOptions{
		ackTimeout: 3 * time.Second,
		retryDelay: 200 * time.Millisecond,
		maxRetries: 3,
		pingEvery:  10 * time.Second,
	}
	for _, opt := range opts {
		opt(&o)
	}
	ctx, cancel := context.WithCancel(context.Background())
	f := &SlackFake{
		BotToken:      "xoxb-1000-2000-fakebottoken",
		AppToken:      "xapp-1-A0FAKEAPP1-3000-fakeapptoken",
		SigningSecret: "8f742231b10e8888abcd99yyyzzz85a5",
		TeamID:        "T0FAKETEAM",
		AppID:         "A0FAKEAPP1",
		BotUserID:     "U0FAKEBOT1",
		BotID:         "B0FAKEBOT1",
		t:             t,
		opts:          o,
		ctx:           ctx,
		cancel:        cancel,
		tsBase:        time.Now().Unix(),
		users:         map[string]string{},
		handles:       map[string]string{},
		bots:          map[string]string{},
		chats:         map[string]*slackChat{},
		chatsByID:     map[string]*slackChat{},
		deliveries:    map[string]*slackDelivery{},
		envelopes:     map[string]*slackEnvelope{},
		tickets:       map[string]bool{},
		lastPost:      map[string]time.Time{},
		postQueues:    map[string]*slackPostQueue{},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/api/", f.serveAPI)
	mux.HandleFunc("/link", f.serveLink)
	f.srv = httptest.NewServer(mux)
	f.URL = f.srv.URL
	t.Cleanup(f.Close)
	return f
}

// SocketConfig is an adapter configuration in Socket Mode aimed at f.
func (f *SlackFake) SocketConfig() slackad.Config {
	return slackad.Config{
		BotToken: f.BotToken,
		AppToken: f.AppToken,
		APIURL:   f.URL,
		Logger:   slog.New(slog.DiscardHandler),
	}
}

// EventsConfig is an adapter configuration in Events API mode aimed at f;
// call SetEventsURL with the URL its Handler is served at.
func (f *SlackFake) EventsConfig() slackad.Config {
	return slackad.Config{
		BotToken:      f.BotToken,
		SigningSecret: f.SigningSecret,
		APIURL:        f.URL,
		Logger:        slog.New(slog.DiscardHandler),
	}
}

// SlackFactory is the shared suite's Factory for Slack in Socket Mode.
func SlackFactory(t TB) (gateway.Adapter, Fake) {
	t.Helper()
	f := NewSlack(t)
	a, err := slackad.New(slackSuiteConfig(t, f.SocketConfig()))
	if err != nil {
		t.Fatalf("slack adapter: %v", err)
	}
	return a, f
}

// SlackEventsFactory is the shared suite's Factory for Slack in Events API
// mode: the adapter serves its own Handler on loopback while Connect runs
// (the gateway calls Connect once it holds the platform's lease), and the
// fake delivers there.
func SlackEventsFactory(t TB) (gateway.Adapter, Fake) {
	t.Helper()
	// Slack retries a refused event only three times: give the gateway
	// time to take its lease between them.
	f := NewSlack(t, SlackRetryDelay(time.Second))
	a, err := slackad.New(slackSuiteConfig(t, f.EventsConfig()))
	if err != nil {
		t.Fatalf("slack adapter: %v", err)
	}
	w := &slackEvents{Adapter: a, ready: make(chan struct{})}
	srv := httptest.NewServer(http.HandlerFunc(w.serve))
	t.Cleanup(srv.Close)
	f.SetEventsURL(srv.URL)
	return w, f
}

// slackSuiteConfig logs the adapter's warnings to the test.
func slackSuiteConfig(t TB, cfg slackad.Config) slackad.Config {
	cfg.Logger = slog.New(slog.NewTextHandler(tbWriter(t), &slog.HandlerOptions{Level: slog.LevelWarn}))
	return cfg
}

// slackEvents is an Events API adapter that serves its Handler, with the
// gateway as sink, while Connect runs. Between Connects it answers 503 and
// the fake resends.
type slackEvents struct {
	*slackad.Adapter
	mu    sync.Mutex
	h     http.Handler
	ready chan struct{} // closed on the first Connect
	once  sync.Once
}

func (w *slackEvents) Connect(ctx context.Context, sink gateway.Sink) error {
	w.mu.Lock()
	w.h = w.Adapter.Handler(sink)
	w.mu.Unlock()
	w.once.Do(func() { close(w.ready) })
	defer func() {
		w.mu.Lock()
		w.h = nil
		w.mu.Unlock()
	}()
	return w.Adapter.Connect(ctx, sink)
}

func (w *slackEvents) serve(rw http.ResponseWriter, r *http.Request) {
	// A delivery may beat the gateway's first Connect by a moment.
	select {
	case <-w.ready:
	case <-time.After(2 * time.Second):
	case <-r.Context().Done():
	}
	w.mu.Lock()
	h := w.h
	w.mu.Unlock()
	if h == nil {
		http.Error(rw, "not connected", http.StatusServiceUnavailable)
		return
	}
	h.ServeHTTP(rw, r)
}

// SlackEventsPair starts a fake Slack and an Events API mode adapter whose
// Handler(sink) is served on loopback, and aims the fake's deliveries at
// it: for tests that drive the handler without a gateway.
func SlackEventsPair(t TB, sink gateway.Sink, opts ...SlackOption) (*slackad.Adapter, *SlackFake) {
	t.Helper()
	f := NewSlack(t, opts...)
	a, err := slackad.New(f.EventsConfig())
	if err != nil {
		t.Fatalf("slack adapter: %v", err)
	}
	srv := httptest.NewServer(a.Handler(sink))
	t.Cleanup(srv.Close)
	f.SetEventsURL(srv.URL)
	return a, f
}

// SetEventsURL switches the fake to the Events API: events and presses are
// POSTed, signed, to url instead of going over Socket Mode.
func (f *SlackFake) SetEventsURL(u string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.eventsURL = u
}

// EventsURL is where Events API deliveries go ("" in Socket Mode).
func (f *SlackFake) EventsURL() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.eventsURL
}

// Close stops the fake: sockets, timers, requests in flight.
func (f *SlackFake) Close() {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return
	}
	f.closed = true
	for _, d := range f.deliveries {
		if d.timer != nil {
			d.timer.Stop()
		}
	}
	conns := f.conns
	f.mu.Unlock()
	f.cancel()
	for _, c := range conns {
		_ = c.ws.Close()
	}
	f.srv.Close()
	f.wg.Wait()
}

// SlackSignature is Slack's v0 request signature of body sent at ts.
func SlackSignature(secret string, ts int64, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(m, "v0:%d:", ts)
	m.Write(body)
	return "v0=" + hex.EncodeToString(m.Sum(nil))
}

// ---- handles and ids ----

// UserID is the U… id of the user with this handle.
func (f *SlackFake) UserID(handle string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.userLocked(handle)
}

// ChatID is the C…, D… or G… id of the chat with this handle.
func (f *SlackFake) ChatID(handle string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.chatLocked(handle).id
}

func (f *SlackFake) userLocked(handle string) string {
	if id, ok := f.users[handle]; ok {
		return id
	}
	f.seq++
	id := fmt.Sprintf("U%08d", f.seq)
	f.users[handle] = id
	f.handles[id] = handle
	return id
}

func (f *SlackFake) chatLocked(handle string) *slackChat {
	if c, ok := f.chats[handle]; ok {
		return c
	}
	if c, ok := f.chatsByID[handle]; ok {
		return c
	}
	prefix, typ := "C", "channel"
	switch {
	case strings.HasPrefix(handle, "dm"):
		prefix, typ = "D", "im"
	case strings.HasPrefix(handle, "mpim"), strings.HasPrefix(handle, "group"):
		prefix, typ = "G", "mpim"
	}
	f.seq++
	c := &slackChat{handle: handle, id: fmt.Sprintf("%s%08d", prefix, f.seq), typ: typ, byTS: map[string]*slackMsg{}}
	f.chats[handle] = c
	f.chatsByID[c.id] = c
	return c
}

// tsLocked is a fresh message timestamp; Slack's ts are unique per
// channel and sort by time, and so do these.
func (f *SlackFake) tsLocked() string {
	f.tsSeq++
	return fmt.Sprintf("%d.%06d", f.tsBase+f.tsSeq/1000000, f.tsSeq%1000000)
}

func (f *SlackFake) refusalLocked(format string, args ...any) {
	f.errs = append(f.errs, fmt.Sprintf(format, args...))
}

// Errors lists the requests the fake refused.
func (f *SlackFake) Errors() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.errs...)
}

// Throttled lists the chat.postMessage calls refused with 429.
func (f *SlackFake) Throttled() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.throttled...)
}

// ---- what users do ----

// Say posts text in chat as user and delivers the message event; it
// returns the event_id. A bot's message is a bot_message with a bot_id.
func (f *SlackFake) Say(chat, user, text string, bot bool) string {
	return f.SayInThread(chat, "", user, text, bot)
}

// SayInThread is Say as a reply in the thread of threadTS ("" for none).
func (f *SlackFake) SayInThread(chat, threadTS, user, text string, bot bool) string {
	ev := map[string]any{"type": "message", "text": text}
	f.mu.Lock()
	if bot {
		id, ok := f.bots[user]
		if !ok {
			f.seq++
			id = fmt.Sprintf("B%08d", f.seq)
			f.bots[user] = id
		}
		ev["subtype"] = "bot_message"
		ev["bot_id"] = id
		ev["username"] = user
	} else {
		ev["user"] = f.userLocked(user)
		ev["client_msg_id"] = fmt.Sprintf("00000000-0000-4000-8000-%012d", f.seq)
	}
	if threadTS != "" {
		ev["thread_ts"] = threadTS
	}
	f.mu.Unlock()
	return f.SayEvent(chat, ev)
}

// SayUnsupported shares a file without a message in chat as user.
func (f *SlackFake) SayUnsupported(chat, user string) string {
	f.mu.Lock()
	uid := f.userLocked(user)
	f.seq++
	file := fmt.Sprintf("F%08d", f.seq)
	f.mu.Unlock()
	return f.SayEvent(chat, map[string]any{
		"type": "message", "subtype": "file_share", "user": uid, "text": "",
		"files": []map[string]any{{"id": file, "name": "photo.png", "mimetype": "image/png"}},
	})
}

// SayEvent delivers an inner event of any shape in chat (a
// message_changed, a channel_join, an app_mention) as an event_callback;
// channel, channel_type, ts and event_ts are filled in when missing. It
// returns the event_id.
func (f *SlackFake) SayEvent(chat string, ev map[string]any) string {
	f.mu.Lock()
	c := f.chatLocked(chat)
	d := f.eventLocked(c, ev)
	f.mu.Unlock()
	f.deliver(d, "")
	return d.id
}

func (f *SlackFake) eventLocked(c *slackChat, ev map[string]any) *slackDelivery {
	ts := f.tsLocked()
	if _, ok := ev["channel"]; !ok {
		ev["channel"] = c.id
	}
	if _, ok := ev["channel_type"]; !ok {
		ev["channel_type"] = c.typ
	}
	if _, ok := ev["ts"]; !ok {
		ev["ts"] = ts
	}
	ev["event_ts"] = ts
	if ev["type"] == "message" {
		if sub, _ := ev["subtype"].(string); sub == "" || sub == "bot_message" || sub == "file_share" || sub == "thread_broadcast" {
			// Keep people's messages too: the bot may reply in their
			// threads.
			text, _ := ev["text"].(string)
			thread, _ := ev["thread_ts"].(string)
			user, _ := ev["user"].(string)
			botID, _ := ev["bot_id"].(string)
			mts, _ := ev["ts"].(string)
			if _, dup := c.byTS[mts]; !dup && botID != f.BotID {
				m := &slackMsg{ts: mts, threadTS: thread, text: text, user: user, botID: botID}
				c.msgs = append(c.msgs, m)
				c.byTS[mts] = m
			}
		}
	}
	f.seq++
	id := fmt.Sprintf("Ev%08dFK", f.seq)
	payload, _ := json.Marshal(map[string]any{
		"token":                 "fakeverificationtoken",
		"team_id":               f.TeamID,
		"api_app_id":            f.AppID,
		"event":                 ev,
		"type":                  "event_callback",
		"event_id":              id,
		"event_time":            f.tsBase + f.tsSeq/1000000,
		"event_context":         "4-fake-" + id,
		"is_ext_shared_channel": false,
		"authorizations": []map[string]any{{
			"team_id": f.TeamID, "user_id": f.BotUserID, "is_bot": true, "is_enterprise_install": false,
		}},
	})
	d := &slackDelivery{id: id, chat: c.id, kind: "events_api", payload: payload, ackCh: make(chan struct{})}
	f.deliveries[id] = d
	return d
}

// Redeliver delivers the event (or press) with this id again, with the
// retry number raised, as Slack does when it was not acknowledged.
func (f *SlackFake) Redeliver(updateID string) {
	f.mu.Lock()
	d := f.deliveries[updateID]
	f.mu.Unlock()
	if d == nil {
		f.t.Fatalf("slack fake: Redeliver of unknown update %q", updateID)
		return
	}
	f.deliver(d, "timeout")
}

// Acked reports whether the event was acknowledged: an envelope_id sent
// back over the socket, or 200 from the Events API handler.
func (f *SlackFake) Acked(updateID string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	d := f.deliveries[updateID]
	return d != nil && d.acked
}

// Deliveries is how many times the event was sent (1 + resends).
func (f *SlackFake) Deliveries(updateID string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if d := f.deliveries[updateID]; d != nil {
		return d.sends
	}
	return 0
}

// Statuses are the HTTP statuses the Events API handler answered for the
// event, one per attempt (0: no answer in time).
func (f *SlackFake) Statuses(updateID string) []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if d := f.deliveries[updateID]; d != nil {
		return append([]int(nil), d.statuses...)
	}
	return nil
}

// Press presses the button with data on the bot's message msgID (its ts)
// in chat, as user — a button the message has or once had, as a client
// that has not caught up with an edit still shows it — and waits up to the ack timeout (3 s) for the app's
// answer: the ephemeral message posted to the presser, or the message's
// new text when the app updated the card instead. The interaction must be
// acknowledged in that time too.
func (f *SlackFake) Press(chat, msgID, data, user string) (string, error) {
	f.mu.Lock()
	c := f.chatLocked(chat)
	m := c.byTS[msgID]
	if m == nil || !m.ours {
		f.mu.Unlock()
		return "", fmt.Errorf("slack fake: no message of the bot with ts %q in %s", msgID, chat)
	}
	// The newest button with this value, current or once shown.
	var btn *slackButton
	var blockID string
	for i := range m.shown {
		if m.shown[i].btn.Value == data {
			btn, blockID = &m.shown[i].btn, m.shown[i].blockID
		}
	}
	if btn == nil {
		f.mu.Unlock()
		return "", fmt.Errorf("slack fake: message %s in %s has no button with value %q", msgID, chat, data)
	}
	uid := f.userLocked(user)
	f.seq++
	trigger := fmt.Sprintf("%d.%d.fake%08d", f.tsBase, f.seq, f.seq)
	container := map[string]any{"type": "message", "message_ts": m.ts, "channel_id": c.id, "is_ephemeral": false}
	message := map[string]any{"type": "message", "ts": m.ts, "text": m.text, "user": m.user, "bot_id": m.botID, "blocks": rawBlocks(m.blocks)}
	if m.threadTS != "" {
		container["thread_ts"] = m.threadTS
		message["thread_ts"] = m.threadTS
	}
	payload, _ := json.Marshal(map[string]any{
		"type":       "block_actions",
		"token":      "fakeverificationtoken",
		"api_app_id": f.AppID,
		"team":       map[string]any{"id": f.TeamID, "domain": "fake"},
		"user":       map[string]any{"id": uid, "username": user, "name": user, "team_id": f.TeamID},
		"container":  container,
		"trigger_id": trigger,
		"channel":    map[string]any{"id": c.id, "name": c.handle},
		"message":    message,
		"state":      map[string]any{"values": map[string]any{}},
		"actions": []map[string]any{{
			"type": "button", "action_id": btn.ActionID, "block_id": blockID, "text": btn.Text,
			"value": btn.Value, "style": btn.Style, "action_ts": f.tsLocked(),
		}},
	})
	w := &slackWaiter{channel: c.id, user: uid, ts: m.ts, ch: make(chan string, 1)}
	f.waiters = append(f.waiters, w)
	d := &slackDelivery{id: trigger, kind: "interactive", payload: payload, ackCh: make(chan struct{})}
	f.deliveries[trigger] = d
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		for i, x := range f.waiters {
			if x == w {
				f.waiters = append(f.waiters[:i], f.waiters[i+1:]...)
				break
			}
		}
		f.mu.Unlock()
	}()

	f.deliver(d, "")
	deadline := time.NewTimer(f.opts.ackTimeout)
	defer deadline.Stop()
	var reply string
	select {
	case reply = <-w.ch:
	case <-deadline.C:
		f.mu.Lock()
		f.refusalLocked("press %s on %s: no answer to the presser within %s", data, msgID, f.opts.ackTimeout)
		f.mu.Unlock()
		return "", fmt.Errorf("slack fake: press %s not answered within %s", trigger, f.opts.ackTimeout)
	}
	select {
	case <-d.ackCh:
	case <-deadline.C:
		f.mu.Lock()
		f.refusalLocked("press %s on %s: interaction not acknowledged within %s", data, msgID, f.opts.ackTimeout)
		f.mu.Unlock()
		return reply, fmt.Errorf("slack fake: press %s not acknowledged within %s", trigger, f.opts.ackTimeout)
	}
	return reply, nil
}

// Messages are the bot's messages in chat (thread replies included),
// oldest first, as they look now.
func (f *SlackFake) Messages(chat string) []Message {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Message
	for _, m := range f.chatLocked(chat).msgs {
		if !m.ours {
			continue
		}
		msg := Message{ID: m.ts, Text: m.text, Edited: m.edited}
		for _, b := range m.blocks {
			for _, e := range b.Buttons {
				if e.Type == "button" {
					msg.Buttons = append(msg.Buttons, e.Value)
				}
			}
		}
		out = append(out, msg)
	}
	return out
}

// Posts are the bot's messages in chat in full (thread, blocks).
func (f *SlackFake) Posts(chat string) []SlackPost {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []SlackPost
	for _, m := range f.chatLocked(chat).msgs {
		if !m.ours {
			continue
		}
		p := SlackPost{TS: m.ts, ThreadTS: m.threadTS, Text: m.text, Edited: m.edited}
		for _, b := range m.blocks {
			if b.Type == "section" && b.Text != nil {
				p.Sections = append(p.Sections, b.Text.Text)
			}
			for _, e := range b.Buttons {
				if e.Type != "button" {
					continue
				}
				sb := SlackButton{ActionID: e.ActionID, Value: e.Value, Style: e.Style}
				if e.Text != nil {
					sb.Label = e.Text.Text
				}
				p.Buttons = append(p.Buttons, sb)
			}
		}
		out = append(out, p)
	}
	return out
}

// Ephemerals are the texts of the ephemeral messages the bot showed user
// in chat, oldest first.
func (f *SlackFake) Ephemerals(chat, user string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, uid := f.chatLocked(chat), f.userLocked(user)
	var out []string
	for _, e := range f.ephemerals {
		if e.channel == c.id && e.user == uid {
			out = append(out, e.text)
		}
	}
	return out
}

// Connections is how many Socket Mode connections are open.
func (f *SlackFake) Connections() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.conns {
		if !c.draining {
			n++
		}
	}
	return n
}

// Disconnect asks every open socket to reconnect (Slack's "disconnect"
// message, sent before it refreshes a connection); until the app opens a
// new one, deliveries wait.
func (f *SlackFake) Disconnect() {
	f.mu.Lock()
	conns := append([]*slackConn(nil), f.conns...)
	for _, c := range conns {
		c.draining = true
	}
	f.mu.Unlock()
	msg := []byte(`{"type":"disconnect","reason":"refresh_requested","debug_info":{"host":"fake-applink"}}`)
	for _, c := range conns {
		_ = c.write(msg)
	}
}

// ---- delivery ----

// deliver sends one attempt of d: over the newest socket (queued until
// one is open), or as a signed POST in Events API mode.
func (f *SlackFake) deliver(d *slackDelivery, reason string) {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return
	}
	attempt := d.sends
	d.sends++
	if f.eventsURL != "" {
		// One channel's events go one after another, so a suite sees them
		// in the order they were said; channels and presses run side by
		// side.
		key := d.chat
		if d.kind == "interactive" {
			key = "press:" + d.id
		}
		q := f.postQueues[key]
		if q == nil {
			q = &slackPostQueue{}
			f.postQueues[key] = q
		}
		q.jobs = append(q.jobs, slackPostJob{d, f.eventsURL, attempt, reason})
		if !q.running {
			q.running = true
			f.wg.Add(1)
			go f.drain(key, q)
		}
		f.mu.Unlock()
		return
	}
	f.seq++
	env := &slackEnvelope{id: fmt.Sprintf("%08x-fake-4000-8000-%012d", f.seq, f.seq), d: d}
	f.envelopes[env.id] = env
	msg, _ := json.Marshal(map[string]any{
		"envelope_id":              env.id,
		"type":                     d.kind,
		"payload":                  json.RawMessage(d.payload),
		"accepts_response_payload": d.kind == "interactive",
		"retry_attempt":            attempt,
		"retry_reason":             reason,
	})
	c := f.liveConnLocked()
	if c == nil {
		f.queue = append(f.queue, slackQueued{env, msg})
		f.mu.Unlock()
		return
	}
	f.mu.Unlock()
	f.sendEnvelope(c, slackQueued{env, msg})
}

func (f *SlackFake) liveConnLocked() *slackConn {
	for i := len(f.conns) - 1; i >= 0; i-- {
		if !f.conns[i].draining {
			return f.conns[i]
		}
	}
	return nil
}

func (f *SlackFake) sendEnvelope(c *slackConn, q slackQueued) {
	if err := c.write(q.msg); err != nil {
		// The socket is going away: the next one gets it.
		f.mu.Lock()
		f.queue = append(f.queue, q)
		f.mu.Unlock()
		return
	}
	if q.env.d.kind == "events_api" {
		f.armResend(q.env.d, f.opts.ackTimeout, "timeout")
	}
}

// armResend resends d after wait unless it has been acknowledged by then
// or has used up its retries.
func (f *SlackFake) armResend(d *slackDelivery, wait time.Duration, reason string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return
	}
	if d.timer != nil {
		d.timer.Stop()
	}
	d.timer = time.AfterFunc(wait, func() {
		f.mu.Lock()
		again := !f.closed && !d.acked && d.sends <= f.opts.maxRetries
		f.mu.Unlock()
		if again {
			f.deliver(d, reason)
		}
	})
}

func (f *SlackFake) ackLocked(d *slackDelivery) {
	if !d.acked {
		d.acked = true
		close(d.ackCh)
	}
	if d.timer != nil {
		d.timer.Stop()
	}
}

type slackPostQueue struct {
	jobs    []slackPostJob
	running bool
}

type slackPostJob struct {
	d       *slackDelivery
	target  string
	attempt int
	reason  string
}

// drain posts q's jobs in order until it is empty.
func (f *SlackFake) drain(key string, q *slackPostQueue) {
	defer f.wg.Done()
	for {
		f.mu.Lock()
		if len(q.jobs) == 0 || f.closed {
			q.running = false
			delete(f.postQueues, key)
			f.mu.Unlock()
			return
		}
		j := q.jobs[0]
		q.jobs = q.jobs[1:]
		f.mu.Unlock()
		f.post(j.d, j.target, j.attempt, j.reason)
	}
}

// post delivers d to the Events API handler, signed, and records the
// answer; anything but 200 within the ack timeout is retried later.
func (f *SlackFake) post(d *slackDelivery, target string, attempt int, reason string) {
	body, ct := d.payload, "application/json"
	if d.kind == "interactive" {
		body, ct = []byte("payload="+url.QueryEscape(string(d.payload))), "application/x-www-form-urlencoded"
	}
	ctx, cancel := context.WithTimeout(f.ctx, f.opts.ackTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		f.t.Logf("slack fake: %v", err)
		return
	}
	ts := time.Now().Unix()
	req.Header.Set("Content-Type", ct)
	req.Header.Set("User-Agent", "Slackbot 1.0 (+https://api.slack.com/robots)")
	req.Header.Set("X-Slack-Request-Timestamp", strconv.FormatInt(ts, 10))
	req.Header.Set("X-Slack-Signature", SlackSignature(f.SigningSecret, ts, body))
	if attempt > 0 {
		req.Header.Set("X-Slack-Retry-Num", strconv.Itoa(attempt))
		req.Header.Set("X-Slack-Retry-Reason", reason)
	}
	status := 0
	resp, err := http.DefaultClient.Do(req)
	if err == nil {
		status = resp.StatusCode
		if d.kind != "interactive" {
			// An interaction's answer comes after the 200: do not wait
			// for the handler to finish.
			_, _ = io.Copy(io.Discard, resp.Body)
		}
		_ = resp.Body.Close()
	}
	f.mu.Lock()
	d.statuses = append(d.statuses, status)
	if status == http.StatusOK {
		f.ackLocked(d)
	}
	f.mu.Unlock()
	if status != http.StatusOK && d.kind == "events_api" {
		next := "http_error"
		if status == 0 {
			next = "http_timeout"
		}
		f.armResend(d, f.opts.retryDelay, next)
	}
}

// ---- Socket Mode ----

func (f *SlackFake) serveLink(w http.ResponseWriter, r *http.Request) {
	ticket := r.URL.Query().Get("ticket")
	f.mu.Lock()
	valid := f.tickets[ticket]
	delete(f.tickets, ticket)
	if !valid {
		f.refusalLocked("socket: connection with an unknown or used ticket %q", ticket)
	}
	f.mu.Unlock()
	if !valid {
		http.Error(w, "invalid ticket", http.StatusUnauthorized)
		return
	}
	// slack-go sends Origin: https://api.slack.com, which the default
	// check refuses.
	up := websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}
	ws, err := up.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	c := &slackConn{ws: ws, done: make(chan struct{})}
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		_ = ws.Close()
		return
	}
	n := len(f.conns) + 1
	f.wg.Add(2)
	f.mu.Unlock()
	hello, _ := json.Marshal(map[string]any{
		"type": "hello", "num_connections": n,
		"debug_info":      map[string]any{"host": "fake-applink", "build_number": 1, "approximate_connection_time": 18060},
		"connection_info": map[string]any{"app_id": f.AppID},
	})
	if err := c.write(hello); err != nil {
		f.wg.Add(-2)
		_ = ws.Close()
		return
	}
	// Deliveries start only after hello, as on Slack.
	f.mu.Lock()
	f.conns = append(f.conns, c)
	queued := f.queue
	f.queue = nil
	closed := f.closed
	f.mu.Unlock()
	if closed {
		_ = ws.Close()
	}
	go f.ping(c)
	for _, q := range queued {
		f.sendEnvelope(c, q)
	}
	f.readAcks(c)
}

func (f *SlackFake) ping(c *slackConn) {
	defer f.wg.Done()
	t := time.NewTicker(f.opts.pingEvery)
	defer t.Stop()
	for {
		select {
		case <-c.done:
			return
		case <-t.C:
			_ = c.ws.WriteControl(websocket.PingMessage, []byte("fake-ping"), time.Now().Add(time.Second))
		}
	}
}

// readAcks reads what the app sends back: acknowledgements.
func (f *SlackFake) readAcks(c *slackConn) {
	defer f.wg.Done()
	defer func() {
		close(c.done)
		_ = c.ws.Close()
		f.mu.Lock()
		for i, x := range f.conns {
			if x == c {
				f.conns = append(f.conns[:i], f.conns[i+1:]...)
				break
			}
		}
		f.mu.Unlock()
	}()
	for {
		_, data, err := c.ws.ReadMessage()
		if err != nil {
			return
		}
		var ack struct {
			EnvelopeID string `json:"envelope_id"`
		}
		f.mu.Lock()
		env := (*slackEnvelope)(nil)
		if json.Unmarshal(data, &ack) == nil {
			env = f.envelopes[ack.EnvelopeID]
		}
		switch {
		case env == nil:
			f.refusalLocked("socket: message that acknowledges no envelope: %s", data)
		case env.acked:
			f.refusalLocked("socket: envelope %s (%s) acknowledged twice", env.id, env.d.id)
		default:
			env.acked = true
			f.ackLocked(env.d)
		}
		f.mu.Unlock()
	}
}

// ---- Web API ----

func (f *SlackFake) serveAPI(w http.ResponseWriter, r *http.Request) {
	method := strings.TrimPrefix(r.URL.Path, "/api/")
	params, token, err := slackParams(r)
	f.mu.Lock()
	defer f.mu.Unlock()
	if err != nil {
		f.apiErrorLocked(w, method, "invalid_form_data", err.Error())
		return
	}
	if method == "apps.connections.open" {
		f.connectionsOpenLocked(w, token)
		return
	}
	switch {
	case token == "":
		f.apiErrorLocked(w, method, "not_authed", "no token")
		return
	case token == f.AppToken:
		f.apiErrorLocked(w, method, "not_allowed_token_type", "app-level token")
		return
	case token != f.BotToken:
		f.apiErrorLocked(w, method, "invalid_auth", "wrong token")
		return
	}
	switch method {
	case "auth.test":
		slackWriteJSON(w, http.StatusOK, map[string]any{
			"ok": true, "url": "https://fake-team.slack.com/", "team": "Fake Team", "user": "gatehouse",
			"team_id": f.TeamID, "user_id": f.BotUserID, "bot_id": f.BotID, "is_enterprise_install": false,
		})
	case "chat.postMessage":
		f.postMessageLocked(w, params)
	case "chat.update":
		f.updateLocked(w, params)
	case "chat.postEphemeral":
		f.postEphemeralLocked(w, params)
	default:
		f.apiErrorLocked(w, method, "unknown_method", "")
	}
}

func (f *SlackFake) connectionsOpenLocked(w http.ResponseWriter, token string) {
	switch {
	case token == "":
		f.apiErrorLocked(w, "apps.connections.open", "not_authed", "no token")
		return
	case token == f.BotToken:
		f.apiErrorLocked(w, "apps.connections.open", "not_allowed_token_type", "bot token")
		return
	case token != f.AppToken:
		f.apiErrorLocked(w, "apps.connections.open", "invalid_auth", "wrong app token")
		return
	}
	f.seq++
	ticket := fmt.Sprintf("fake-ticket-%d", f.seq)
	f.tickets[ticket] = true
	u := "ws" + strings.TrimPrefix(f.URL, "http") + "/link?ticket=" + ticket + "&app_id=" + f.AppID
	slackWriteJSON(w, http.StatusOK, map[string]any{"ok": true, "url": u})
}

var slackTSRe = regexp.MustCompile(`^\d+\.\d+$`)

func (f *SlackFake) postMessageLocked(w http.ResponseWriter, p map[string]string) {
	const method = "chat.postMessage"
	c := f.chatsByID[p["channel"]]
	if c == nil {
		f.apiErrorLocked(w, method, "channel_not_found", p["channel"])
		return
	}
	if f.opts.perChannel > 0 {
		now := time.Now()
		if last, ok := f.lastPost[c.id]; ok && now.Sub(last) < f.opts.perChannel {
			secs := int(math.Ceil((f.opts.perChannel - now.Sub(last)).Seconds()))
			w.Header().Set("Retry-After", strconv.Itoa(max(secs, 1)))
			f.throttled = append(f.throttled, c.handle)
			slackWriteJSON(w, http.StatusTooManyRequests, map[string]any{"ok": false, "error": "ratelimited"})
			return
		}
		f.lastPost[c.id] = now
	}
	text, blocks, ok := f.contentLocked(w, method, p)
	if !ok {
		return
	}
	thread := p["thread_ts"]
	if thread != "" {
		if !slackTSRe.MatchString(thread) {
			f.apiErrorLocked(w, method, "invalid_thread_ts", thread)
			return
		}
		switch parent := c.byTS[thread]; {
		case parent == nil:
			// Slack posts a reply to a message it cannot find into the
			// channel itself.
			thread = ""
		case parent.threadTS != "":
			thread = parent.threadTS
		}
	}
	m := &slackMsg{ts: f.tsLocked(), threadTS: thread, text: text, user: f.BotUserID, botID: f.BotID, ours: true, blocks: blocks}
	m.show(blocks)
	c.msgs = append(c.msgs, m)
	c.byTS[m.ts] = m
	message := map[string]any{"type": "message", "ts": m.ts, "text": m.text, "user": m.user, "bot_id": m.botID, "app_id": f.AppID}
	if thread != "" {
		message["thread_ts"] = thread
	}
	slackWriteJSON(w, http.StatusOK, map[string]any{"ok": true, "channel": c.id, "ts": m.ts, "message": message})
	if f.opts.echoBot {
		ev := map[string]any{"type": "message", "user": f.BotUserID, "bot_id": f.BotID, "app_id": f.AppID, "text": text, "ts": m.ts}
		if thread != "" {
			ev["thread_ts"] = thread
		}
		d := f.eventLocked(c, ev)
		if !f.closed {
			// deliver takes the lock: after this request is answered.
			f.wg.Add(1)
			go func() {
				defer f.wg.Done()
				f.deliver(d, "")
			}()
		}
	}
}

func (f *SlackFake) updateLocked(w http.ResponseWriter, p map[string]string) {
	const method = "chat.update"
	c := f.chatsByID[p["channel"]]
	if c == nil {
		f.apiErrorLocked(w, method, "channel_not_found", p["channel"])
		return
	}
	m := c.byTS[p["ts"]]
	if m == nil {
		f.apiErrorLocked(w, method, "message_not_found", p["ts"])
		return
	}
	if !m.ours {
		f.apiErrorLocked(w, method, "cant_update_message", p["ts"])
		return
	}
	text, blocks, ok := f.contentLocked(w, method, p)
	if !ok {
		return
	}
	m.text = text
	// Slack keeps a message's blocks when chat.update leaves them out.
	if _, sent := p["blocks"]; sent {
		m.blocks = blocks
		m.show(blocks)
	}
	m.edited = true
	for _, wt := range f.waiters {
		if wt.channel == c.id && wt.ts == m.ts {
			select {
			case wt.ch <- text:
			default:
			}
		}
	}
	slackWriteJSON(w, http.StatusOK, map[string]any{"ok": true, "channel": c.id, "ts": m.ts, "text": text})
}

func (f *SlackFake) postEphemeralLocked(w http.ResponseWriter, p map[string]string) {
	const method = "chat.postEphemeral"
	c := f.chatsByID[p["channel"]]
	if c == nil {
		f.apiErrorLocked(w, method, "channel_not_found", p["channel"])
		return
	}
	uid := p["user"]
	if _, ok := f.handles[uid]; !ok {
		f.apiErrorLocked(w, method, "user_not_in_channel", uid)
		return
	}
	text, _, ok := f.contentLocked(w, method, p)
	if !ok {
		return
	}
	if thread := p["thread_ts"]; thread != "" && !slackTSRe.MatchString(thread) {
		f.apiErrorLocked(w, method, "invalid_thread_ts", thread)
		return
	}
	f.ephemerals = append(f.ephemerals, slackEphemeral{channel: c.id, user: uid, threadTS: p["thread_ts"], text: text})
	for _, wt := range f.waiters {
		if wt.channel == c.id && wt.user == uid {
			select {
			case wt.ch <- text:
			default:
			}
		}
	}
	slackWriteJSON(w, http.StatusOK, map[string]any{"ok": true, "message_ts": f.tsLocked()})
}

// contentLocked checks a message's text and blocks as Slack does: one of
// them is required, text is at most 40,000 characters, blocks must be
// valid Block Kit.
func (f *SlackFake) contentLocked(w http.ResponseWriter, method string, p map[string]string) (string, []slackBlock, bool) {
	text := p["text"]
	blocks, problem := slackParseBlocks(p["blocks"])
	if problem != "" {
		f.apiErrorLocked(w, method, "invalid_blocks", problem)
		return "", nil, false
	}
	if strings.TrimSpace(text) == "" && len(blocks) == 0 {
		f.apiErrorLocked(w, method, "no_text", "")
		return "", nil, false
	}
	if utf8.RuneCountInString(text) > 40000 {
		f.apiErrorLocked(w, method, "msg_too_long", strconv.Itoa(utf8.RuneCountInString(text))+" characters")
		return "", nil, false
	}
	return text, blocks, true
}

func (f *SlackFake) apiErrorLocked(w http.ResponseWriter, method, code, detail string) {
	f.refusalLocked("%s: %s (%s)", method, code, detail)
	body := map[string]any{"ok": false, "error": code}
	if detail != "" {
		body["response_metadata"] = map[string]any{"messages": []string{"[ERROR] " + detail}}
	}
	// Slack answers refusals with HTTP 200 and "ok": false.
	slackWriteJSON(w, http.StatusOK, body)
}

func slackWriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// slackParams reads a Web API call's arguments the ways Slack takes them:
// a form (token as a field) or JSON (token only in Authorization).
func slackParams(r *http.Request) (map[string]string, string, error) {
	p := map[string]string{}
	for k, v := range r.URL.Query() {
		p[k] = v[0]
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 4<<20))
	if err != nil {
		return nil, "", err
	}
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	token := ""
	switch {
	case ct == "application/x-www-form-urlencoded":
		form, err := url.ParseQuery(string(body))
		if err != nil {
			return nil, "", err
		}
		for k, v := range form {
			p[k] = v[0]
		}
		token = p["token"]
	case ct == "application/json":
		if len(bytes.TrimSpace(body)) > 0 && string(bytes.TrimSpace(body)) != "null" {
			var m map[string]any
			if err := json.Unmarshal(body, &m); err != nil {
				return nil, "", fmt.Errorf("invalid JSON body: %w", err)
			}
			for k, v := range m {
				if s, ok := v.(string); ok {
					p[k] = s
				} else {
					b, _ := json.Marshal(v)
					p[k] = string(b)
				}
			}
		}
	case len(body) > 0:
		return nil, "", fmt.Errorf("unsupported content type %q", ct)
	default:
		token = p["token"]
	}
	delete(p, "token")
	if auth, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		token = auth
	}
	return p, token, nil
}

// slackParseBlocks checks Block Kit the way Slack refuses it with
// invalid_blocks, and returns the blocks ("" problem) or what is wrong.
func slackParseBlocks(raw string) ([]slackBlock, string) {
	if raw == "" {
		return nil, ""
	}
	var list []json.RawMessage
	if err := json.Unmarshal([]byte(raw), &list); err != nil {
		return nil, "blocks must be a JSON array"
	}
	if len(list) > 50 {
		return nil, fmt.Sprintf("%d blocks, at most 50", len(list))
	}
	var out []slackBlock
	ids := map[string]bool{}
	for i, rb := range list {
		var b struct {
			Type     string            `json:"type"`
			BlockID  string            `json:"block_id"`
			Text     json.RawMessage   `json:"text"`
			Fields   []json.RawMessage `json:"fields"`
			Elements []json.RawMessage `json:"elements"`
		}
		if err := json.Unmarshal(rb, &b); err != nil {
			return nil, fmt.Sprintf("block %d: %v", i, err)
		}
		if b.BlockID != "" {
			if len(b.BlockID) > 255 || ids[b.BlockID] {
				return nil, fmt.Sprintf("block %d: block_id %q too long or not unique", i, b.BlockID)
			}
			ids[b.BlockID] = true
		}
		blk := slackBlock{Type: b.Type, BlockID: b.BlockID, raw: rb}
		switch b.Type {
		case "section":
			if b.Text == nil && len(b.Fields) == 0 {
				return nil, fmt.Sprintf("block %d: section without text or fields", i)
			}
			if b.Text != nil {
				t, problem := slackCheckText(b.Text, 3000, "mrkdwn", "plain_text")
				if problem != "" {
					return nil, fmt.Sprintf("block %d: section text: %s", i, problem)
				}
				blk.Text = t
			}
			if len(b.Fields) > 10 {
				return nil, fmt.Sprintf("block %d: more than 10 fields", i)
			}
			for j, fr := range b.Fields {
				if _, problem := slackCheckText(fr, 2000, "mrkdwn", "plain_text"); problem != "" {
					return nil, fmt.Sprintf("block %d: field %d: %s", i, j, problem)
				}
			}
		case "actions":
			if len(b.Elements) == 0 || len(b.Elements) > 25 {
				return nil, fmt.Sprintf("block %d: actions need 1 to 25 elements, not %d", i, len(b.Elements))
			}
			actionIDs := map[string]bool{}
			for j, er := range b.Elements {
				var e slackButton
				if err := json.Unmarshal(er, &e); err != nil {
					return nil, fmt.Sprintf("block %d: element %d: %v", i, j, err)
				}
				if e.ActionID != "" {
					if len(e.ActionID) > 255 || actionIDs[e.ActionID] {
						return nil, fmt.Sprintf("block %d: element %d: action_id %q too long or not unique in its block", i, j, e.ActionID)
					}
					actionIDs[e.ActionID] = true
				}
				if e.Type == "button" {
					var be struct {
						Text json.RawMessage `json:"text"`
					}
					_ = json.Unmarshal(er, &be)
					if be.Text == nil {
						return nil, fmt.Sprintf("block %d: button %d without text", i, j)
					}
					if _, problem := slackCheckText(be.Text, 75, "plain_text"); problem != "" {
						return nil, fmt.Sprintf("block %d: button %d text: %s", i, j, problem)
					}
					if utf8.RuneCountInString(e.Value) > 2000 {
						return nil, fmt.Sprintf("block %d: button %d value over 2000 characters", i, j)
					}
					if e.Style != "" && e.Style != "primary" && e.Style != "danger" {
						return nil, fmt.Sprintf("block %d: button %d style %q", i, j, e.Style)
					}
				}
				blk.Buttons = append(blk.Buttons, e)
			}
		case "header":
			if _, problem := slackCheckText(b.Text, 150, "plain_text"); problem != "" {
				return nil, fmt.Sprintf("block %d: header text: %s", i, problem)
			}
		case "context":
			if len(b.Elements) == 0 || len(b.Elements) > 10 {
				return nil, fmt.Sprintf("block %d: context needs 1 to 10 elements", i)
			}
		case "divider", "image", "rich_text", "markdown", "file", "video", "input":
		default:
			return nil, fmt.Sprintf("block %d: unknown block type %q", i, b.Type)
		}
		out = append(out, blk)
	}
	return out, ""
}

// slackCheckText checks a text composition object.
func slackCheckText(raw json.RawMessage, maxLen int, types ...string) (*slackText, string) {
	if raw == nil {
		return nil, "missing"
	}
	var t slackText
	if err := json.Unmarshal(raw, &t); err != nil {
		return nil, err.Error()
	}
	typeOK := false
	for _, ty := range types {
		typeOK = typeOK || t.Type == ty
	}
	n := utf8.RuneCountInString(t.Text)
	switch {
	case !typeOK:
		return nil, fmt.Sprintf("type %q, want one of %v", t.Type, types)
	case t.Type == "mrkdwn" && t.Emoji != nil:
		return nil, "emoji is not allowed on mrkdwn"
	case n == 0:
		return nil, "empty text"
	case n > maxLen:
		return nil, fmt.Sprintf("%d characters, at most %d", n, maxLen)
	}
	return &t, ""
}

func rawBlocks(blocks []slackBlock) []json.RawMessage {
	out := []json.RawMessage{}
	for _, b := range blocks {
		out = append(out, b.raw)
	}
	return out
}

var _ Fake = (*SlackFake)(nil)
