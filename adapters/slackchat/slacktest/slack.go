package slacktest

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	"github.com/gatehouse/gatehouse/adapters/adaptertest"
	"github.com/gatehouse/gatehouse/adapters/internal/platformfake"
	"github.com/gatehouse/gatehouse/adapters/slackchat"
	"github.com/gatehouse/gatehouse/adapters/slackchat/slacktest/blockkit"
	"github.com/gatehouse/gatehouse/gateway/chat"
)

// SlackFake is a fake Slack: the Web API under /api/ (auth.test,
// apps.connections.open, chat.postMessage, chat.update,
// chat.postEphemeral, views.open), a Socket Mode WebSocket, and an Events API client
// that posts signed requests to an adapter's handler. It refuses what Slack
// refuses (a wrong token, an unknown channel, a message without text, bad
// Block Kit, an update of a message that does not exist, an envelope
// acknowledged twice) and lists each refusal in Errors. It can also be
// down (outage.go): every call failing at once (FailCalls), one method
// failing (FailMethod), every socket closing after its hello
// (DropSockets); Calls and SocketDials say when each attempt came, so
// a reconnect loop's pace can be counted.
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

	t    adaptertest.TB
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
	// triggers are the trigger_ids of presses, for views.open; views are
	// the modals opened, by view id.
	triggers   map[string]*slackTrigger
	views      map[string]*SlackView
	lastPost   map[string]time.Time
	eventsURL  string
	postQueues map[string]*slackPostQueue
	refusals   platformfake.Refusals
	// commandTriggers are the trigger_ids of the slash commands typed.
	commandTriggers []string
	// files are the bytes of the files users shared, by file id.
	files map[string][]byte
	// failing are the HTTP statuses Web API methods answer at once (the
	// key "" is every method and the socket); dropSockets closes every
	// socket right after its hello (outage.go).
	failing     map[string]int
	dropSockets bool
	// calls are when each Web API method was called, sockets when each
	// socket handshake arrived: what a reconnect loop's pace is read
	// from.
	calls   map[string][]time.Time
	sockets []time.Time
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
	// commands are the app's slash commands, as its manifest declares
	// them ("/grants").
	commands []string
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
	// ephemeral are the app's ephemeral messages (slash command
	// answers), by ts: seen by one user, pressable by them, never in
	// the channel's history.
	ephemeral map[string]*slackMsg
}

type slackMsg struct {
	ts, threadTS, text string
	user, botID        string
	// ours: posted by the app through the Web API.
	ours bool
	// to is the user an ephemeral message is shown to.
	to     string
	blocks []blockkit.Block
	edited bool
	// shown are all the buttons the message ever had: a client that has
	// not caught up with an edit still shows (and presses) old ones.
	shown []slackShown
}

type slackShown struct {
	btn     blockkit.Button
	blockID string
}

// show remembers the buttons of blocks as shown on m.
func (m *slackMsg) show(blocks []blockkit.Block) {
	for _, b := range blocks {
		for _, e := range b.Buttons {
			if e.Type == "button" {
				m.shown = append(m.shown, slackShown{e, b.BlockID})
			}
		}
	}
}

// slackDelivery is one event (or press) and every attempt to deliver it.
type slackDelivery struct {
	id      string
	chat    string // channel id of an event; "" for a press
	kind    string // "events_api", "interactive" or "slash_commands"
	payload []byte
	// response is the payload of a slash command's acknowledgement: the
	// message that answers it.
	response json.RawMessage
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
	platformfake.WSConn
	done     chan struct{}
	draining bool
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
func NewSlack(t adaptertest.TB, opts ...SlackOption) *SlackFake {
	t.Helper()
	o := slackOptions{
		ackTimeout: 3 * time.Second,
		retryDelay: 200 * time.Millisecond,
		maxRetries: 3,
		pingEvery:  10 * time.Second,
		commands:   append([]string(nil), ManifestSlashCommands...),
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
		triggers:      map[string]*slackTrigger{},
		views:         map[string]*SlackView{},
		lastPost:      map[string]time.Time{},
		postQueues:    map[string]*slackPostQueue{},
		files:         map[string][]byte{},
		failing:       map[string]int{},
		calls:         map[string][]time.Time{},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/api/", f.serveAPI)
	mux.HandleFunc("/link", f.serveLink)
	mux.HandleFunc("/files-pri/", f.serveFile)
	f.srv = httptest.NewServer(mux)
	f.URL = f.srv.URL
	t.Cleanup(f.Close)
	return f
}

// SocketConfig is an adapter configuration in Socket Mode aimed at f.
func (f *SlackFake) SocketConfig() slackchat.Config {
	return slackchat.Config{
		BotToken: f.BotToken,
		AppToken: f.AppToken,
		APIURL:   f.URL,
		Logger:   slog.New(slog.DiscardHandler),
	}
}

// EventsConfig is an adapter configuration in Events API mode aimed at f;
// call SetEventsURL with the URL its Handler is served at.
func (f *SlackFake) EventsConfig() slackchat.Config {
	return slackchat.Config{
		BotToken:      f.BotToken,
		SigningSecret: f.SigningSecret,
		APIURL:        f.URL,
		Logger:        slog.New(slog.DiscardHandler),
	}
}

// SlackFactory is the shared suite's Factory for Slack in Socket Mode.
func SlackFactory(t adaptertest.TB) (chat.Adapter, adaptertest.Fake) {
	t.Helper()
	f := NewSlack(t)
	a, err := slackchat.New(slackSuiteConfig(t, f.SocketConfig()))
	if err != nil {
		t.Fatalf("slack adapter: %v", err)
	}
	return a, f
}

// SlackEventsFactory is the shared suite's Factory for Slack in Events API
// mode: the adapter serves its own Handler on loopback while Connect runs
// (the gateway calls Connect once it holds the platform's lease), and the
// fake delivers there.
func SlackEventsFactory(t adaptertest.TB) (chat.Adapter, adaptertest.Fake) {
	t.Helper()
	// Slack retries a refused event only three times: give the gateway
	// time to take its lease between them.
	f := NewSlack(t, SlackRetryDelay(time.Second))
	a, err := slackchat.New(slackSuiteConfig(t, f.EventsConfig()))
	if err != nil {
		t.Fatalf("slack adapter: %v", err)
	}
	w := &slackEvents{Adapter: a, mount: platformfake.Mount{FirstWait: 2 * time.Second}}
	srv := httptest.NewServer(&w.mount)
	t.Cleanup(srv.Close)
	f.SetEventsURL(srv.URL)
	return w, f
}

// slackSuiteConfig logs the adapter's warnings to the test.
func slackSuiteConfig(t adaptertest.TB, cfg slackchat.Config) slackchat.Config {
	cfg.Logger = slog.New(slog.NewTextHandler(adaptertest.LogWriter(t), &slog.HandlerOptions{Level: slog.LevelWarn}))
	return cfg
}

// slackEvents is an Events API adapter that serves its Handler, with the
// gateway as sink, while Connect runs. Between Connects it answers 503 and
// the fake resends; a delivery may beat the first Connect by up to 2 s.
type slackEvents struct {
	*slackchat.Adapter
	mount platformfake.Mount
}

func (w *slackEvents) Connect(ctx context.Context, sink chat.Sink) error {
	return w.mount.While(w.Adapter.Handler(sink), func() error { return w.Adapter.Connect(ctx, sink) })
}

// SlackEventsPair starts a fake Slack and an Events API mode adapter whose
// Handler(sink) is served on loopback, and aims the fake's deliveries at
// it: for tests that drive the handler without a gateway.
func SlackEventsPair(t adaptertest.TB, sink chat.Sink, opts ...SlackOption) (*slackchat.Adapter, *SlackFake) {
	t.Helper()
	f := NewSlack(t, opts...)
	a, err := slackchat.New(f.EventsConfig())
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
		_ = c.WS.Close()
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
	c := &slackChat{handle: handle, id: fmt.Sprintf("%s%08d", prefix, f.seq), typ: typ, byTS: map[string]*slackMsg{}, ephemeral: map[string]*slackMsg{}}
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
	f.refusals.Refusef(format, args...)
}

// Errors lists the requests the fake refused.
func (f *SlackFake) Errors() []string { return f.refusals.Errors() }

// Throttled lists the chat.postMessage calls refused with 429.
func (f *SlackFake) Throttled() []string { return f.refusals.Throttled() }

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
// answer: the ephemeral message posted to the presser, the message's
// new text when the app updated the card instead, or "modal: <title>"
// when the app opened a modal with the press's trigger_id. The
// interaction must be acknowledged in that time too.
func (f *SlackFake) Press(chat, msgID, data, user string) (string, error) {
	f.mu.Lock()
	c := f.chatLocked(chat)
	uid := f.userLocked(user)
	m := c.byTS[msgID]
	if e := c.ephemeral[msgID]; m == nil && e != nil {
		if e.to != uid {
			f.mu.Unlock()
			return "", fmt.Errorf("slack fake: the ephemeral message %s in %s is shown to %s only, not to %s", msgID, chat, f.handles[e.to], user)
		}
		m = e
	}
	if m == nil || !m.ours {
		f.mu.Unlock()
		return "", fmt.Errorf("slack fake: no message of the bot with ts %q in %s", msgID, chat)
	}
	// The newest button with this value, current or once shown.
	var btn *blockkit.Button
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
	f.seq++
	trigger := fmt.Sprintf("%d.%d.fake%08d", f.tsBase, f.seq, f.seq)
	container := map[string]any{"type": "message", "message_ts": m.ts, "channel_id": c.id, "is_ephemeral": m.to != ""}
	message := map[string]any{"type": "message", "ts": m.ts, "text": m.text, "user": m.user, "bot_id": m.botID, "blocks": blockkit.Raws(m.blocks)}
	if m.threadTS != "" {
		container["thread_ts"] = m.threadTS
		message["thread_ts"] = m.threadTS
	}
	body := map[string]any{
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
	}
	if m.to != "" {
		// Slack keeps no copy of an ephemeral message: the payload has
		// the container only, and a response_url to answer through.
		delete(body, "message")
		body["response_url"] = f.URL + "/actions/" + trigger
	}
	payload, _ := json.Marshal(body)
	w := &slackWaiter{channel: c.id, user: uid, ts: m.ts, ch: make(chan string, 1)}
	f.waiters = append(f.waiters, w)
	f.triggers[trigger] = &slackTrigger{user: uid, channel: c.id, at: time.Now()}
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
func (f *SlackFake) Messages(chat string) []adaptertest.Message {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []adaptertest.Message
	for _, m := range f.chatLocked(chat).msgs {
		if !m.ours {
			continue
		}
		out = append(out, adaptertest.Message{ID: m.ts, Text: m.text, Edited: m.edited, Buttons: blockkit.Values(m.blocks)})
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
		_ = c.WriteText(msg)
	}
}
