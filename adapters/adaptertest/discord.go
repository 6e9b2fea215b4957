package adaptertest

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/gorilla/websocket"

	"github.com/gatehouse/gatehouse/adapters/discord"
	"github.com/gatehouse/gatehouse/gateway"
)

// DiscordFake is a fake Discord: the REST API under /api/v9 and the
// gateway websocket, on loopback, strict about what Discord refuses.
//
// Chats are channels: a chat handle starting with "dm" is a DM channel,
// any other handle a text channel of the one guild the bot is in. Users
// are handles with snowflake ids. The bot's own messages are dispatched
// back to the gateway as MESSAGE_CREATE, as Discord does, so an adapter
// that does not recognise itself loops.
//
// Events (Say, Redeliver, the echo of the bot's own messages) said
// while no client is connected are held and dispatched after the next
// READY, so a test need not wait for the adapter to connect; events of a
// session whose client dropped are replayed on RESUME, as Discord does.
//
// Acknowledgement: Discord's gateway has no per-event ack. The nearest
// thing on the wire is the heartbeat, which carries the last sequence
// number the client read; [DiscordFake.Acked] is true once a heartbeat
// (or a RESUME) covered the event's sequence number. The fake announces
// a short heartbeat interval so that happens within a second. (It
// does not ask for heartbeats with op 1 after each dispatch: discordgo
// answers op 1 through a socket field it reads without its lock, a race
// the real gateway, which seldom sends op 1, rarely provokes.) It says the client read the
// event, not that its Receive succeeded: nothing on Discord's wire can
// say that, and Discord never redelivers an event the client read (see
// [DiscordFake.RedeliversUnacked]).
type DiscordFake struct {
	t   TB
	srv *httptest.Server
	cfg discordConfig

	token   string
	guildID string
	appID   string
	bot     *discordUser
	started time.Time

	mu           sync.Mutex
	nextID       uint64
	users        map[string]*discordUser    // by handle
	channels     map[string]*discordChannel // by handle
	channelsByID map[string]*discordChannel
	sessions     map[string]*discordSession
	session      *discordSession // the newest identified session
	held         []*discordEvent // events from before any session
	lastEvent    map[string]*discordEvent
	interactions map[string]*discordInteraction
	ixOrder      []string
	conns        map[*discordConn]struct{}
	errs         []string
	rateLimited  int
	force429     time.Duration
	buckets      map[string]*discordBucket
	global       discordBucket
	closed       bool

	wg sync.WaitGroup // gateway connection goroutines
}

// DiscordOption configures a [DiscordFake].
type DiscordOption func(*discordConfig)

type discordConfig struct {
	heartbeat        time.Duration
	deadline         time.Duration
	perChannel       int
	window           time.Duration
	globalPerSecond  int
	withoutIntentMsg bool
}

// DiscordHeartbeat sets the heartbeat interval the fake announces in
// HELLO. Defaults to 1 s, so Acked follows a dispatch quickly
// (Discord says about 41 s). discordgo reconnects when five intervals
// pass without a heartbeat ACK.
func DiscordHeartbeat(d time.Duration) DiscordOption {
	return func(c *discordConfig) { c.heartbeat = d }
}

// DiscordInteractionDeadline sets how long an interaction may go
// unanswered before its token is refused. Defaults to Discord's 3 s;
// a shorter one lets a test see a late answer refused quickly.
func DiscordInteractionDeadline(d time.Duration) DiscordOption {
	return func(c *discordConfig) { c.deadline = d }
}

// DiscordRateLimits makes the fake enforce rate limits the way Discord
// does: perChannel message creates (and, separately, edits) per window in
// each channel's bucket, and globalPerSecond requests overall, answering
// X-RateLimit-* headers on every bucketed response and 429 with
// retry_after when a bucket is empty. Zero disables a limit; by default
// nothing is limited and no X-RateLimit headers are sent. Discord's
// message bucket is about 5 per 5 s per channel and 50/s overall.
func DiscordRateLimits(perChannel int, window time.Duration, globalPerSecond int) DiscordOption {
	return func(c *discordConfig) {
		c.perChannel, c.window, c.globalPerSecond = perChannel, window, globalPerSecond
	}
}

type discordUser struct {
	id, name string
}

type discordChannel struct {
	id, handle string
	guildID    string // "" for a DM
	msgs       []*discordMsg
}

type discordMsg struct {
	id         string
	channel    *discordChannel
	author     *discordUser
	authorBot  bool
	content    string
	rows       [][]discordButton
	shown      map[string]bool // every custom_id the message has shown
	kind       int             // 0 default, 19 reply
	refID      string
	allowed    *[]string // allowed_mentions.parse; nil when none was sent
	everyone   bool      // the message pinged @everyone/@here
	created    time.Time
	edited     *time.Time
	attachment bool
}

// show records the message's current buttons as shown.
func (m *discordMsg) show() {
	if m.shown == nil {
		m.shown = map[string]bool{}
	}
	for _, row := range m.rows {
		for _, b := range row {
			if b.CustomID != "" && !b.Disabled {
				m.shown[b.CustomID] = true
			}
		}
	}
}

type discordButton struct {
	Style    int               `json:"style"`
	Label    string            `json:"label,omitempty"`
	CustomID string            `json:"custom_id,omitempty"`
	URL      string            `json:"url,omitempty"`
	Emoji    map[string]string `json:"emoji,omitempty"`
	Disabled bool              `json:"disabled"`
}

type discordSession struct {
	id      string
	intents int // from IDENTIFY; a resume keeps them
	seq     int64
	acked   int64
	events  []*discordEvent
	conn    *discordConn
}

type discordEvent struct {
	seq       int64
	session   *discordSession
	t         string
	d         map[string]any
	msgID     string // MESSAGE_CREATE only
	guild     bool
	fromBot   bool
	delivered bool
}

type discordInteraction struct {
	DiscordInteraction
	token    string
	deadline time.Time
	created  time.Time
	msg      *discordMsg
	done     chan struct{} // closed when answered or given up on
	finished bool
}

// finish closes done once. f.mu held.
func (ix *discordInteraction) finish() {
	if !ix.finished {
		ix.finished = true
		close(ix.done)
	}
}

// DiscordInteraction is one button press and how the bot answered it.
type DiscordInteraction struct {
	ID       string
	CustomID string
	UserID   string
	Answered bool
	// Type is the response type (4 message, 5 deferred message, 6
	// deferred update, 7 update message); Flags its data.flags (64 is
	// ephemeral); Content what the presser saw (for type 7, the updated
	// message's content).
	Type    int
	Flags   int
	Content string
	// After is how long after the press the answer came.
	After time.Duration
}

// DiscordMessage is a message as the fake holds it, with what only the
// Discord tests look at.
type DiscordMessage struct {
	Message
	ChannelID string
	AuthorID  string
	// Type is 0 for a plain message and 19 for a reply; ReplyTo the
	// referenced message.
	Type    int
	ReplyTo string
	// AllowedMentions is allowed_mentions.parse as sent, nil when the
	// request had no allowed_mentions.
	AllowedMentions []string
	// PingedEveryone is true when the message notified @everyone/@here.
	PingedEveryone bool
	// Styles and Labels of the buttons, in order, like Buttons.
	Styles []int
	Labels []string
	// Rows is how many action rows the message has.
	Rows int
}

type discordBucket struct {
	start time.Time
	count int
}

type discordConn struct {
	ws      *websocket.Conn
	wmu     sync.Mutex
	session *discordSession
	ready   bool
}

const (
	discordIntentGuildMessages  = 1 << 9
	discordIntentDirectMessages = 1 << 12
	discordIntentMessageContent = 1 << 15
	discordEpochMS              = 1420070400000
	discordMaxContent           = 2000
)

var _ Fake = (*DiscordFake)(nil)

// NewDiscord starts a fake Discord; it stops when the test ends.
func NewDiscord(t TB, opts ...DiscordOption) *DiscordFake {
	t.Helper()
	cfg := discordConfig{heartbeat: time.Second, deadline: 3 * time.Second, window: 5 * time.Second}
	for _, o := range opts {
		o(&cfg)
	}
	f := &DiscordFake{
		t:            t,
		cfg:          cfg,
		token:        "fake-discord-bot-token",
		started:      time.Now(),
		users:        map[string]*discordUser{},
		channels:     map[string]*discordChannel{},
		channelsByID: map[string]*discordChannel{},
		sessions:     map[string]*discordSession{},
		lastEvent:    map[string]*discordEvent{},
		interactions: map[string]*discordInteraction{},
		conns:        map[*discordConn]struct{}{},
		buckets:      map[string]*discordBucket{},
	}
	f.guildID = f.snowflake()
	f.appID = f.snowflake()
	f.bot = &discordUser{id: f.appID, name: "gatehouse"}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.close)
	return f
}

// URL is the fake's base URL, to be given as the adapter's APIURL.
func (f *DiscordFake) URL() string { return f.srv.URL }

// Token is the bot token the fake accepts.
func (f *DiscordFake) Token() string { return f.token }

// BotID is the bot user's id (the READY user).
func (f *DiscordFake) BotID() string { return f.bot.id }

// RedeliversUnacked reports whether the platform redelivers an update
// whose Receive failed. Discord does not: an event the client read is
// gone (a resume replays only what the client did not read).
func (f *DiscordFake) RedeliversUnacked() bool { return false }

func (f *DiscordFake) close() {
	f.mu.Lock()
	f.closed = true
	for c := range f.conns {
		_ = c.ws.Close()
	}
	for _, ix := range f.interactions {
		ix.finish()
	}
	f.mu.Unlock()
	f.srv.Close()
	f.wg.Wait()
}

// snowflake makes an id of Discord's shape: milliseconds since 2015 in
// the high bits, a counter in the low ones. Callers hold f.mu or are
// the constructor.
func (f *DiscordFake) snowflake() string {
	f.nextID++
	ms := uint64(f.started.UnixMilli() - discordEpochMS)
	return strconv.FormatUint(ms<<22+f.nextID, 10)
}

func (f *DiscordFake) refuse(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	f.errs = append(f.errs, msg)
	f.t.Logf("discord fake refused: %s", msg)
}

// Errors lists what the fake refused, as Discord would have.
// Rate-limited requests are not errors (see RateLimited).
func (f *DiscordFake) Errors() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.errs)
}

// RateLimited counts the requests the fake answered with 429.
func (f *DiscordFake) RateLimited() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.rateLimited
}

// RateLimitNext makes the next message create or edit fail with 429
// and retry_after d, with the bucket headers Discord sends with it.
func (f *DiscordFake) RateLimitNext(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.force429 = d
}

func (f *DiscordFake) user(handle string) *discordUser {
	u, ok := f.users[handle]
	if !ok {
		u = &discordUser{id: f.snowflake(), name: handle}
		f.users[handle] = u
	}
	return u
}

func (f *DiscordFake) channel(handle string) *discordChannel {
	c, ok := f.channels[handle]
	if !ok {
		c = &discordChannel{id: f.snowflake(), handle: handle}
		if !strings.HasPrefix(handle, "dm") {
			c.guildID = f.guildID
		}
		f.channels[handle] = c
		f.channelsByID[c.id] = c
	}
	return c
}

// UserID is the snowflake of the user with this handle.
func (f *DiscordFake) UserID(handle string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.user(handle).id
}

// ChannelID is the snowflake of the chat with this handle, creating the
// channel if it does not exist yet.
func (f *DiscordFake) ChannelID(chat string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.channel(chat).id
}

// Say makes user post text in chat and dispatches MESSAGE_CREATE.
func (f *DiscordFake) Say(chat, user, text string, bot bool) string {
	return f.say(chat, user, text, bot, false)
}

// SayUnsupported makes user post an image with no text.
func (f *DiscordFake) SayUnsupported(chat, user string) string {
	return f.say(chat, user, "", false, true)
}

func (f *DiscordFake) say(chat, user, text string, bot, attachment bool) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	ch := f.channel(chat)
	m := &discordMsg{
		id: f.snowflake(), channel: ch, author: f.user(user), authorBot: bot,
		content: text, created: time.Now(), attachment: attachment,
	}
	ch.msgs = append(ch.msgs, m)
	f.emitMessage("MESSAGE_CREATE", m)
	return m.id
}

// Redeliver dispatches a message's MESSAGE_CREATE again, with the same
// message id, as Discord does when a session resumes from before it.
func (f *DiscordFake) Redeliver(updateID string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ev, ok := f.lastEvent[updateID]
	if !ok {
		f.t.Logf("discord fake: Redeliver of unknown message %s", updateID)
		return
	}
	f.emit(&discordEvent{t: ev.t, d: ev.d, msgID: ev.msgID, guild: ev.guild, fromBot: ev.fromBot})
}

// Acked reports whether a heartbeat covered the sequence number of the
// message's latest dispatch (see the type's comment).
func (f *DiscordFake) Acked(updateID string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	ev, ok := f.lastEvent[updateID]
	return ok && ev.delivered && ev.session != nil && ev.seq <= ev.session.acked
}

// Messages returns the bot's messages in chat, oldest first.
func (f *DiscordFake) Messages(chat string) []Message {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Message
	ch, ok := f.channels[chat]
	if !ok {
		return nil
	}
	for _, m := range ch.msgs {
		if m.author == f.bot {
			out = append(out, f.view(m).Message)
		}
	}
	return out
}

// Message returns one message in chat (the bot's or anyone's).
func (f *DiscordFake) Message(chat, id string) (DiscordMessage, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ch, ok := f.channels[chat]
	if !ok {
		return DiscordMessage{}, false
	}
	for _, m := range ch.msgs {
		if m.id == id {
			return f.view(m), true
		}
	}
	return DiscordMessage{}, false
}

func (f *DiscordFake) view(m *discordMsg) DiscordMessage {
	v := DiscordMessage{
		Message:   Message{ID: m.id, Text: m.content, Edited: m.edited != nil},
		ChannelID: m.channel.id, AuthorID: m.author.id, Type: m.kind, ReplyTo: m.refID,
		PingedEveryone: m.everyone, Rows: len(m.rows),
	}
	if m.allowed != nil {
		v.AllowedMentions = slices.Clone(*m.allowed)
		if v.AllowedMentions == nil {
			v.AllowedMentions = []string{}
		}
	}
	for _, row := range m.rows {
		for _, b := range row {
			v.Buttons = append(v.Buttons, b.CustomID)
			v.Styles = append(v.Styles, b.Style)
			v.Labels = append(v.Labels, b.Label)
		}
	}
	return v
}

// Interactions lists the presses so far and their answers.
func (f *DiscordFake) Interactions() []DiscordInteraction {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]DiscordInteraction, 0, len(f.ixOrder))
	for _, id := range f.ixOrder {
		out = append(out, f.interactions[id].DiscordInteraction)
	}
	return out
}

// Connected reports whether a gateway client is identified (or resumed)
// and receiving events.
func (f *DiscordFake) Connected() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.session != nil && f.session.conn != nil && f.session.conn.ready
}

// DropConnection cuts the gateway socket without a close frame, as a
// network failure does; the session stays resumable.
func (f *DiscordFake) DropConnection() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.session != nil && f.session.conn != nil {
		_ = f.session.conn.ws.UnderlyingConn().Close()
		f.session.conn = nil
	}
}

// Press presses the button with custom_id data on the bot's message
// msgID in chat, as user: it dispatches INTERACTION_CREATE and waits up
// to the interaction deadline (3 s) for the bot's callback. It returns
// what the presser saw: the response message's content (type 4) or the
// updated message's content (type 7).
func (f *DiscordFake) Press(chat, msgID, data, user string) (string, error) {
	f.mu.Lock()
	ix, err := f.press(chat, msgID, data, user)
	f.mu.Unlock()
	if err != nil {
		return "", err
	}
	timer := time.NewTimer(time.Until(ix.deadline) + 100*time.Millisecond)
	defer timer.Stop()
	select {
	case <-ix.done:
	case <-timer.C:
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !ix.Answered {
		f.refuse("interaction %s (%s) was not answered within %s: the user sees \"This interaction failed\"", ix.ID, data, f.cfg.deadline)
		ix.finish()
		return "", fmt.Errorf("discord fake: interaction %s not answered within %s", ix.ID, f.cfg.deadline)
	}
	return ix.Content, nil
}

func (f *DiscordFake) press(chat, msgID, data, user string) (*discordInteraction, error) {
	ch, ok := f.channels[chat]
	if !ok {
		return nil, fmt.Errorf("discord fake: no chat %q", chat)
	}
	var msg *discordMsg
	for _, m := range ch.msgs {
		if m.id == msgID {
			msg = m
		}
	}
	if msg == nil || msg.author != f.bot {
		return nil, fmt.Errorf("discord fake: no bot message %s in %q", msgID, chat)
	}
	if !msg.shown[data] {
		// A Discord client can only press a button the message showed;
		// one that has not caught up with an edit yet may still show a
		// button the message has lost since.
		return nil, fmt.Errorf("discord fake: message %s never had a button %q to press", msgID, data)
	}
	if f.session == nil || f.session.conn == nil || !f.session.conn.ready {
		return nil, errors.New("discord fake: no gateway client is connected to receive the interaction")
	}
	u := f.user(user)
	now := time.Now()
	ix := &discordInteraction{
		DiscordInteraction: DiscordInteraction{ID: f.snowflake(), CustomID: data, UserID: u.id},
		token:              "itok-" + f.snowflake(),
		created:            now,
		deadline:           now.Add(f.cfg.deadline),
		msg:                msg,
		done:               make(chan struct{}),
	}
	f.interactions[ix.ID] = ix
	f.ixOrder = append(f.ixOrder, ix.ID)
	d := map[string]any{
		"id":                             ix.ID,
		"application_id":                 f.appID,
		"type":                           3,
		"token":                          ix.token,
		"version":                        1,
		"channel_id":                     ch.id,
		"channel":                        map[string]any{"id": ch.id, "type": f.channelType(ch)},
		"message":                        f.messageJSON(msg),
		"data":                           map[string]any{"custom_id": data, "component_type": 2},
		"app_permissions":                "2248473465835073",
		"locale":                         "en-US",
		"entitlements":                   []any{},
		"authorizing_integration_owners": map[string]any{"0": f.guildID},
		"context":                        0,
	}
	if ch.guildID != "" {
		d["guild_id"] = ch.guildID
		d["guild_locale"] = "en-US"
		d["member"] = map[string]any{
			"user": f.userJSON(u, false), "roles": []any{}, "joined_at": f.started.UTC().Format(time.RFC3339Nano),
			"deaf": false, "mute": false, "flags": 0, "pending": false, "permissions": "2248473465835073",
		}
	} else {
		d["user"] = f.userJSON(u, false)
		d["context"] = 1
	}
	f.emit(&discordEvent{t: "INTERACTION_CREATE", d: d})
	return ix, nil
}

func (f *DiscordFake) channelType(ch *discordChannel) int {
	if ch.guildID == "" {
		return 1 // DM
	}
	return 0 // GUILD_TEXT
}

func (f *DiscordFake) userJSON(u *discordUser, bot bool) map[string]any {
	j := map[string]any{
		"id": u.id, "username": u.name, "discriminator": "0", "global_name": u.name,
		"avatar": nil, "public_flags": 0,
	}
	if bot || u == f.bot {
		j["bot"] = true
		j["global_name"] = nil
	}
	return j
}

func (f *DiscordFake) messageJSON(m *discordMsg) map[string]any {
	rows := make([]any, 0, len(m.rows))
	for _, r := range m.rows {
		bs := make([]any, 0, len(r))
		for _, b := range r {
			bj := map[string]any{"type": 2, "style": b.Style, "disabled": b.Disabled}
			if b.Label != "" {
				bj["label"] = b.Label
			}
			if b.CustomID != "" {
				bj["custom_id"] = b.CustomID
			}
			if b.URL != "" {
				bj["url"] = b.URL
			}
			if b.Emoji != nil {
				bj["emoji"] = b.Emoji
			}
			bs = append(bs, bj)
		}
		rows = append(rows, map[string]any{"type": 1, "components": bs})
	}
	j := map[string]any{
		"id": m.id, "channel_id": m.channel.id, "type": m.kind,
		"author": f.userJSON(m.author, m.authorBot), "content": m.content,
		"timestamp": m.created.UTC().Format(time.RFC3339Nano), "edited_timestamp": nil,
		"tts": false, "mention_everyone": m.everyone, "mentions": []any{}, "mention_roles": []any{},
		"attachments": []any{}, "embeds": []any{}, "pinned": false, "flags": 0, "components": rows,
	}
	if m.edited != nil {
		j["edited_timestamp"] = m.edited.UTC().Format(time.RFC3339Nano)
	}
	if m.attachment {
		j["attachments"] = []any{map[string]any{
			"id": m.id, "filename": "photo.png", "size": 1024, "content_type": "image/png",
			"url":       "https://cdn.discordapp.com/attachments/" + m.channel.id + "/" + m.id + "/photo.png",
			"proxy_url": "https://media.discordapp.net/attachments/" + m.channel.id + "/" + m.id + "/photo.png",
		}}
	}
	if m.refID != "" {
		j["message_reference"] = map[string]any{"type": 0, "message_id": m.refID, "channel_id": m.channel.id}
	}
	return j
}

// emitMessage dispatches a message event with the gateway-only fields
// (guild_id, member) that REST responses do not carry.
func (f *DiscordFake) emitMessage(t string, m *discordMsg) {
	d := f.messageJSON(m)
	if m.channel.guildID != "" {
		d["guild_id"] = m.channel.guildID
		d["member"] = map[string]any{
			"roles": []any{}, "joined_at": f.started.UTC().Format(time.RFC3339Nano),
			"deaf": false, "mute": false, "flags": 0, "pending": false,
		}
	}
	ev := &discordEvent{t: t, d: d, guild: m.channel.guildID != "", fromBot: m.author == f.bot}
	if t == "MESSAGE_CREATE" {
		ev.msgID = m.id
	}
	f.emit(ev)
}

// emit sequences an event in the current session and writes it to the
// session's client, or holds it until a client identifies. f.mu held.
func (f *DiscordFake) emit(ev *discordEvent) {
	if ev.msgID != "" {
		f.lastEvent[ev.msgID] = ev
	}
	if f.session == nil {
		f.held = append(f.held, ev)
		return
	}
	s := f.session
	s.seq++
	ev.seq, ev.session = s.seq, s
	s.events = append(s.events, ev)
	if s.conn != nil && s.conn.ready {
		f.deliver(s.conn, ev)
	}
}

// deliver writes one dispatch, shaped by the client's intents. f.mu held.
func (f *DiscordFake) deliver(c *discordConn, ev *discordEvent) {
	ev.delivered = true
	d := ev.d
	intents := c.session.intents
	if strings.HasPrefix(ev.t, "MESSAGE_") {
		if ev.guild && intents&discordIntentGuildMessages == 0 {
			return
		}
		if !ev.guild && intents&discordIntentDirectMessages == 0 {
			return
		}
		// Without the privileged Message Content intent Discord blanks
		// guild messages that are not the bot's own.
		if ev.guild && !ev.fromBot && intents&discordIntentMessageContent == 0 {
			d = make(map[string]any, len(ev.d))
			for k, v := range ev.d {
				d[k] = v
			}
			d["content"], d["embeds"], d["attachments"], d["components"] = "", []any{}, []any{}, []any{}
		}
	}
	if err := c.write(map[string]any{"op": 0, "t": ev.t, "s": ev.seq, "d": d}); err != nil {
		f.t.Logf("discord fake: writing %s to the gateway client: %v", ev.t, err)
		_ = c.ws.Close()
		if ev.session.conn == c {
			ev.session.conn = nil
		}
	}
}

func (c *discordConn) write(v any) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_ = c.ws.SetWriteDeadline(time.Now().Add(5 * time.Second))
	return c.ws.WriteJSON(v)
}

func (c *discordConn) closeWith(code int, text string) {
	c.wmu.Lock()
	_ = c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, text), time.Now().Add(time.Second))
	c.wmu.Unlock()
	_ = c.ws.Close()
}

// ---- HTTP ----

func (f *DiscordFake) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/gw" || r.URL.Path == "/gw/" {
		f.serveGateway(w, r)
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/api/v9/")
	if !ok {
		f.mu.Lock()
		f.refuse("%s %s: not under /api/v9", r.Method, r.URL.Path)
		f.mu.Unlock()
		discordJSON(w, http.StatusNotFound, map[string]any{"message": "404: Not Found", "code": 0})
		return
	}
	parts := strings.Split(strings.Trim(rest, "/"), "/")
	route := r.Method + " " + strings.Join(discordRouteShape(parts), "/")

	// Interaction callbacks are authorised by their token, not the bot's.
	if route == "POST interactions/:id/:token/callback" {
		if a := r.Header.Get("Authorization"); a != "" && a != "Bot "+f.token {
			f.unauthorized(w, r)
			return
		}
		f.callback(w, r, parts[1], parts[2])
		return
	}
	if route == "GET gateway" {
		discordJSON(w, http.StatusOK, map[string]any{"url": f.wsURL()})
		return
	}
	if r.Header.Get("Authorization") != "Bot "+f.token {
		f.unauthorized(w, r)
		return
	}
	switch route {
	case "GET gateway/bot":
		discordJSON(w, http.StatusOK, map[string]any{
			"url": f.wsURL(), "shards": 1,
			"session_start_limit": map[string]any{"total": 1000, "remaining": 999, "reset_after": 14400000, "max_concurrency": 1},
		})
	case "GET users/@me":
		f.mu.Lock()
		u := f.userJSON(f.bot, true)
		f.mu.Unlock()
		discordJSON(w, http.StatusOK, u)
	case "POST channels/:id/messages":
		f.createMessage(w, r, parts[1])
	case "PATCH channels/:id/messages/:id":
		f.editMessage(w, r, parts[1], parts[3])
	default:
		f.mu.Lock()
		f.refuse("%s %s: no such route", r.Method, r.URL.Path)
		f.mu.Unlock()
		discordJSON(w, http.StatusNotFound, map[string]any{"message": "404: Not Found", "code": 0})
	}
}

// discordRouteShape replaces ids in a path with ":id" (and the token
// of an interaction callback with ":token") to match routes.
func discordRouteShape(parts []string) []string {
	out := slices.Clone(parts)
	for i, p := range out {
		switch {
		case len(parts) == 4 && parts[0] == "interactions" && i == 2:
			out[i] = ":token"
		case p != "" && strings.Trim(p, "0123456789") == "":
			out[i] = ":id"
		case len(parts) == 4 && parts[0] == "interactions" && i == 1:
			out[i] = ":id"
		}
	}
	return out
}

func (f *DiscordFake) wsURL() string {
	return "ws" + strings.TrimPrefix(f.srv.URL, "http") + "/gw"
}

func (f *DiscordFake) unauthorized(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.refuse("%s %s: wrong or missing Authorization (want \"Bot <token>\")", r.Method, r.URL.Path)
	f.mu.Unlock()
	discordJSON(w, http.StatusUnauthorized, map[string]any{"message": "401: Unauthorized", "code": 0})
}

func discordJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// discordFormError is Discord's 50035 "Invalid Form Body" with the
// offending field's path ("components.0.components.1.custom_id").
func discordFormError(w http.ResponseWriter, path, code, message string) {
	var leaf any = map[string]any{"_errors": []any{map[string]any{"code": code, "message": message}}}
	keys := strings.Split(path, ".")
	for i := len(keys) - 1; i >= 0; i-- {
		leaf = map[string]any{keys[i]: leaf}
	}
	discordJSON(w, http.StatusBadRequest, map[string]any{"message": "Invalid Form Body", "code": 50035, "errors": leaf})
}

func (f *DiscordFake) readJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err == nil && !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		err = fmt.Errorf("content type %q", r.Header.Get("Content-Type"))
	}
	if err == nil {
		err = json.Unmarshal(body, v)
	}
	if err != nil {
		f.mu.Lock()
		f.refuse("%s %s: body is not JSON: %v", r.Method, r.URL.Path, err)
		f.mu.Unlock()
		discordJSON(w, http.StatusBadRequest, map[string]any{"message": "The request body contains invalid JSON.", "code": 50109})
		return false
	}
	return true
}

type discordComponentReq struct {
	Type       int                   `json:"type"`
	Components []discordComponentReq `json:"components"`
	Style      int                   `json:"style"`
	Label      *string               `json:"label"`
	CustomID   *string               `json:"custom_id"`
	URL        string                `json:"url"`
	Emoji      map[string]string     `json:"emoji"`
	Disabled   bool                  `json:"disabled"`
	SKUID      string                `json:"sku_id"`
}

type discordMessageReq struct {
	Content         *string                `json:"content"`
	Components      *[]discordComponentReq `json:"components"`
	Embeds          []json.RawMessage      `json:"embeds"`
	StickerIDs      []string               `json:"sticker_ids"`
	Flags           int                    `json:"flags"`
	AllowedMentions *struct {
		Parse []string `json:"parse"`
	} `json:"allowed_mentions"`
	MessageReference *struct {
		MessageID       string `json:"message_id"`
		ChannelID       string `json:"channel_id"`
		FailIfNotExists *bool  `json:"fail_if_not_exists"`
	} `json:"message_reference"`
}

// checkComponents validates a message's components as Discord does for
// messages without the components-v2 flag: up to 5 action rows, each
// of 1–5 buttons, custom_id 1–100 characters and unique, label at most
// 80. It returns the rows or writes the 400. f.mu held.
func (f *DiscordFake) checkComponents(w http.ResponseWriter, r *http.Request, comps []discordComponentReq) ([][]discordButton, bool) {
	bad := func(path, code, msg string) ([][]discordButton, bool) {
		f.refuse("%s %s: %s: %s", r.Method, r.URL.Path, path, msg)
		discordFormError(w, path, code, msg)
		return nil, false
	}
	if len(comps) > 5 {
		return bad("components", "BASE_TYPE_BAD_LENGTH", "Must be between 0 and 5 in length.")
	}
	seen := map[string]bool{}
	rows := make([][]discordButton, 0, len(comps))
	for i, row := range comps {
		p := "components." + strconv.Itoa(i)
		if row.Type != 1 {
			return bad(p+".type", "UNION_TYPE_CHOICES", "Value of field \"type\" must be one of (1,).")
		}
		if len(row.Components) < 1 || len(row.Components) > 5 {
			return bad(p+".components", "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 5 in length.")
		}
		var bs []discordButton
		for j, c := range row.Components {
			q := p + ".components." + strconv.Itoa(j)
			if c.Type != 2 {
				return bad(q+".type", "COMPONENT_TYPE_INVALID", "This component type is not supported here (the fake knows buttons).")
			}
			label := ""
			if c.Label != nil {
				label = *c.Label
			}
			if utf8.RuneCountInString(label) > 80 {
				return bad(q+".label", "BASE_TYPE_MAX_LENGTH", "Must be 80 or fewer in length.")
			}
			if label == "" && c.Emoji == nil {
				return bad(q+".label", "BUTTON_COMPONENT_LABEL_OR_EMOJI_REQUIRED", "A button needs a label or an emoji.")
			}
			b := discordButton{Style: c.Style, Label: label, URL: c.URL, Emoji: c.Emoji, Disabled: c.Disabled}
			switch {
			case c.Style >= 1 && c.Style <= 4:
				if c.CustomID == nil || *c.CustomID == "" {
					return bad(q+".custom_id", "BASE_TYPE_REQUIRED", "This field is required")
				}
				if utf8.RuneCountInString(*c.CustomID) > 100 {
					return bad(q+".custom_id", "BASE_TYPE_MAX_LENGTH", "Must be 100 or fewer in length.")
				}
				if c.URL != "" {
					return bad(q+".url", "BUTTON_COMPONENT_URL_NOT_ALLOWED", "A button with a custom_id cannot have a url.")
				}
				if seen[*c.CustomID] {
					return bad(q+".custom_id", "COMPONENT_CUSTOM_ID_DUPLICATED", "Component custom id cannot be duplicated")
				}
				seen[*c.CustomID] = true
				b.CustomID = *c.CustomID
			case c.Style == 5:
				if c.URL == "" || c.CustomID != nil {
					return bad(q+".url", "BUTTON_COMPONENT_URL_REQUIRED", "A link button needs a url and no custom_id.")
				}
			default:
				return bad(q+".style", "BASE_TYPE_CHOICES", "Value must be one of {1, 2, 3, 4, 5}.")
			}
			bs = append(bs, b)
		}
		rows = append(rows, bs)
	}
	return rows, true
}

// checkBody validates content, mentions and components common to
// creates, edits and interaction responses. f.mu held.
func (f *DiscordFake) checkBody(w http.ResponseWriter, r *http.Request, req *discordMessageReq) (rows [][]discordButton, ok bool) {
	if req.Content != nil && utf8.RuneCountInString(*req.Content) > discordMaxContent {
		f.refuse("%s %s: content is %d characters, over Discord's %d", r.Method, r.URL.Path, utf8.RuneCountInString(*req.Content), discordMaxContent)
		discordFormError(w, "content", "BASE_TYPE_MAX_LENGTH", "Must be 2000 or fewer in length.")
		return nil, false
	}
	if req.AllowedMentions != nil {
		for i, p := range req.AllowedMentions.Parse {
			if p != "roles" && p != "users" && p != "everyone" {
				f.refuse("%s %s: allowed_mentions.parse has %q", r.Method, r.URL.Path, p)
				discordFormError(w, "allowed_mentions.parse."+strconv.Itoa(i), "BASE_TYPE_CHOICES", "Value must be one of ('roles', 'users', 'everyone').")
				return nil, false
			}
		}
	}
	if req.Components != nil {
		return f.checkComponents(w, r, *req.Components)
	}
	return nil, true
}

func (f *DiscordFake) emptyMessage(w http.ResponseWriter, r *http.Request) {
	f.refuse("%s %s: empty message (no content, components or embeds)", r.Method, r.URL.Path)
	discordJSON(w, http.StatusBadRequest, map[string]any{"message": "Cannot send an empty message", "code": 50006})
}

func (f *DiscordFake) unknownChannel(w http.ResponseWriter, r *http.Request) {
	f.refuse("%s %s: unknown channel", r.Method, r.URL.Path)
	discordJSON(w, http.StatusNotFound, map[string]any{"message": "Unknown Channel", "code": 10003})
}

// pings reports whether content notifies everyone, given allowed_mentions.
func discordPings(content string, allowed *[]string) bool {
	if !strings.Contains(content, "@everyone") && !strings.Contains(content, "@here") {
		return false
	}
	return allowed == nil || slices.Contains(*allowed, "everyone")
}

func (f *DiscordFake) createMessage(w http.ResponseWriter, r *http.Request, channelID string) {
	var req discordMessageReq
	if !f.readJSON(w, r, &req) {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	rows, ok := f.checkBody(w, r, &req)
	if !ok {
		return
	}
	content := ""
	if req.Content != nil {
		content = *req.Content
	}
	if content == "" && len(rows) == 0 && len(req.Embeds) == 0 && len(req.StickerIDs) == 0 {
		f.emptyMessage(w, r)
		return
	}
	ch, ok := f.channelsByID[channelID]
	if !ok {
		f.unknownChannel(w, r)
		return
	}
	if !f.rateLimit(w, "create:"+channelID) {
		return
	}
	m := &discordMsg{id: f.snowflake(), channel: ch, author: f.bot, content: content, rows: rows, created: time.Now()}
	m.show()
	if ref := req.MessageReference; ref != nil {
		exists := false
		for _, old := range ch.msgs {
			exists = exists || old.id == ref.MessageID
		}
		switch {
		case ref.ChannelID != "" && ref.ChannelID != channelID:
			f.refuse("%s %s: message_reference.channel_id %s is not this channel", r.Method, r.URL.Path, ref.ChannelID)
			discordFormError(w, "message_reference", "MESSAGE_REFERENCE_UNKNOWN_MESSAGE", "Unknown message")
			return
		case exists:
			m.kind, m.refID = 19, ref.MessageID
		case ref.FailIfNotExists == nil || *ref.FailIfNotExists:
			f.refuse("%s %s: message_reference to unknown message %s", r.Method, r.URL.Path, ref.MessageID)
			discordFormError(w, "message_reference", "MESSAGE_REFERENCE_UNKNOWN_MESSAGE", "Unknown message")
			return
		}
	}
	if req.AllowedMentions != nil {
		p := slices.Clone(req.AllowedMentions.Parse)
		m.allowed = &p
	}
	m.everyone = discordPings(content, m.allowed)
	ch.msgs = append(ch.msgs, m)
	f.emitMessage("MESSAGE_CREATE", m)
	discordJSON(w, http.StatusOK, f.messageJSON(m))
}

func (f *DiscordFake) editMessage(w http.ResponseWriter, r *http.Request, channelID, msgID string) {
	var req discordMessageReq
	if !f.readJSON(w, r, &req) {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	rows, ok := f.checkBody(w, r, &req)
	if !ok {
		return
	}
	ch, ok := f.channelsByID[channelID]
	if !ok {
		f.unknownChannel(w, r)
		return
	}
	var m *discordMsg
	for _, old := range ch.msgs {
		if old.id == msgID {
			m = old
		}
	}
	if m == nil {
		f.refuse("%s %s: unknown message", r.Method, r.URL.Path)
		discordJSON(w, http.StatusNotFound, map[string]any{"message": "Unknown Message", "code": 10008})
		return
	}
	if m.author != f.bot {
		f.refuse("%s %s: message is not the bot's", r.Method, r.URL.Path)
		discordJSON(w, http.StatusForbidden, map[string]any{"message": "Cannot edit a message authored by another user", "code": 50005})
		return
	}
	if !f.rateLimit(w, "edit:"+channelID) {
		return
	}
	if !f.applyEdit(w, r, m, &req, rows) {
		return
	}
	discordJSON(w, http.StatusOK, f.messageJSON(m))
}

// applyEdit changes the fields an edit carries (absent or null fields
// stay) and dispatches MESSAGE_UPDATE. f.mu held.
func (f *DiscordFake) applyEdit(w http.ResponseWriter, r *http.Request, m *discordMsg, req *discordMessageReq, rows [][]discordButton) bool {
	content, newRows := m.content, m.rows
	if req.Content != nil {
		content = *req.Content
	}
	if req.Components != nil {
		newRows = rows
	}
	if content == "" && len(newRows) == 0 {
		f.refuse("%s %s: edit would leave an empty message", r.Method, r.URL.Path)
		discordJSON(w, http.StatusBadRequest, map[string]any{"message": "Cannot send an empty message", "code": 50006})
		return false
	}
	now := time.Now()
	m.content, m.rows, m.edited = content, newRows, &now
	m.show()
	f.emitMessage("MESSAGE_UPDATE", m)
	return true
}

// rateLimit applies the global and the bucket's limits (and a forced
// 429), setting X-RateLimit-* headers. It writes the 429 and returns
// false when the request is over a limit. f.mu held.
func (f *DiscordFake) rateLimit(w http.ResponseWriter, bucket string) bool {
	now := time.Now()
	h := w.Header()
	tooMany := func(retry time.Duration, global bool) bool {
		f.rateLimited++
		secs := math.Ceil(retry.Seconds()*1000) / 1000
		h.Set("Retry-After", strconv.Itoa(int(math.Ceil(retry.Seconds()))))
		h.Set("X-RateLimit-Reset-After", strconv.FormatFloat(secs, 'f', 3, 64))
		h.Set("X-RateLimit-Reset", strconv.FormatFloat(float64(now.Add(retry).UnixMilli())/1000, 'f', 3, 64))
		if global {
			h.Set("X-RateLimit-Global", "true")
			h.Set("X-RateLimit-Scope", "global")
		} else {
			h.Set("X-RateLimit-Scope", "user")
			h.Set("X-RateLimit-Remaining", "0")
		}
		discordJSON(w, http.StatusTooManyRequests, map[string]any{"message": "You are being rate limited.", "retry_after": secs, "global": global})
		return false
	}
	if f.force429 > 0 {
		d := f.force429
		f.force429 = 0
		h.Set("X-RateLimit-Bucket", discordBucketHash(bucket))
		h.Set("X-RateLimit-Limit", "5")
		return tooMany(d, false)
	}
	if n := f.cfg.globalPerSecond; n > 0 {
		if now.Sub(f.global.start) >= time.Second {
			f.global = discordBucket{start: now}
		}
		if f.global.count >= n {
			return tooMany(f.global.start.Add(time.Second).Sub(now), true)
		}
		f.global.count++
	}
	n := f.cfg.perChannel
	if n <= 0 {
		return true
	}
	b, ok := f.buckets[bucket]
	if !ok || now.Sub(b.start) >= f.cfg.window {
		b = &discordBucket{start: now}
		f.buckets[bucket] = b
	}
	reset := b.start.Add(f.cfg.window)
	h.Set("X-RateLimit-Bucket", discordBucketHash(bucket))
	h.Set("X-RateLimit-Limit", strconv.Itoa(n))
	if b.count >= n {
		return tooMany(reset.Sub(now), false)
	}
	b.count++
	h.Set("X-RateLimit-Remaining", strconv.Itoa(n-b.count))
	h.Set("X-RateLimit-Reset", strconv.FormatFloat(float64(reset.UnixMilli())/1000, 'f', 3, 64))
	h.Set("X-RateLimit-Reset-After", strconv.FormatFloat(reset.Sub(now).Seconds(), 'f', 3, 64))
	return true
}

func discordBucketHash(bucket string) string {
	h := fnv.New64a()
	_, _ = h.Write([]byte(strings.SplitN(bucket, ":", 2)[0]))
	return strconv.FormatUint(h.Sum64(), 16)
}

// callback answers POST /interactions/{id}/{token}/callback.
func (f *DiscordFake) callback(w http.ResponseWriter, r *http.Request, id, token string) {
	var req struct {
		Type int                `json:"type"`
		Data *discordMessageReq `json:"data"`
	}
	if !f.readJSON(w, r, &req) {
		return
	}
	unknown := func(why string) {
		f.refuse("interaction callback %s: %s", id, why)
		discordJSON(w, http.StatusNotFound, map[string]any{"message": "Unknown interaction", "code": 10062})
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	ix, ok := f.interactions[id]
	switch {
	case !ok || ix.token != token:
		unknown("no such interaction or wrong token")
		return
	case ix.Answered:
		f.refuse("interaction callback %s: answered twice", id)
		discordJSON(w, http.StatusBadRequest, map[string]any{"message": "Interaction has already been acknowledged.", "code": 40060})
		return
	case time.Now().After(ix.deadline):
		unknown(fmt.Sprintf("answered %s after the press, over the %s deadline", time.Since(ix.created).Round(time.Millisecond), f.cfg.deadline))
		return
	}
	var data discordMessageReq
	if req.Data != nil {
		data = *req.Data
	}
	rows, ok := f.checkBody(w, r, &data)
	if !ok {
		return
	}
	content := ""
	if data.Content != nil {
		content = *data.Content
	}
	switch req.Type {
	case 4: // CHANNEL_MESSAGE_WITH_SOURCE
		if req.Data == nil || (content == "" && len(rows) == 0 && len(data.Embeds) == 0) {
			f.refuse("interaction callback %s: type 4 with an empty message", id)
			discordJSON(w, http.StatusBadRequest, map[string]any{"message": "Cannot send an empty message", "code": 50006})
			return
		}
		if data.Flags&^(64|4) != 0 {
			f.refuse("interaction callback %s: flags %d (only 64 ephemeral and 4 suppress embeds)", id, data.Flags)
			discordFormError(w, "data.flags", "MESSAGE_FLAGS_INVALID", "Invalid flags")
			return
		}
		if data.Flags&64 == 0 {
			m := &discordMsg{id: f.snowflake(), channel: ix.msg.channel, author: f.bot, content: content, rows: rows, created: time.Now()}
			m.show()
			if data.AllowedMentions != nil {
				p := slices.Clone(data.AllowedMentions.Parse)
				m.allowed = &p
			}
			m.everyone = discordPings(content, m.allowed)
			ix.msg.channel.msgs = append(ix.msg.channel.msgs, m)
			f.emitMessage("MESSAGE_CREATE", m)
		}
		ix.Content, ix.Flags = content, data.Flags
	case 5, 6: // deferred: the presser sees nothing yet
	case 7: // UPDATE_MESSAGE
		if !f.applyEdit(w, r, ix.msg, &data, rows) {
			return
		}
		ix.Content = ix.msg.content
	default:
		f.refuse("interaction callback %s: response type %d is not valid for a component interaction", id, req.Type)
		discordFormError(w, "type", "INTERACTION_RESPONSE_TYPE_INVALID", "Interaction response type is invalid")
		return
	}
	ix.Type, ix.Answered, ix.After = req.Type, true, time.Since(ix.created)
	ix.finish()
	w.WriteHeader(http.StatusNoContent)
}

// ---- gateway ----

func (f *DiscordFake) serveGateway(w http.ResponseWriter, r *http.Request) {
	up := websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}
	ws, err := up.Upgrade(w, r, nil)
	if err != nil {
		return // the upgrader answered the HTTP error
	}
	c := &discordConn{ws: ws}
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		_ = ws.Close()
		return
	}
	f.conns[c] = struct{}{}
	f.wg.Add(1)
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		delete(f.conns, c)
		if c.session != nil && c.session.conn == c {
			c.session.conn = nil
		}
		f.mu.Unlock()
		_ = ws.Close()
		f.wg.Done()
	}()
	if v := r.URL.Query().Get("v"); v != "9" && v != "10" {
		f.mu.Lock()
		f.refuse("gateway: API version %q (want 9 or 10)", v)
		f.mu.Unlock()
		c.closeWith(4012, "Invalid API version.")
		return
	}
	if e := r.URL.Query().Get("encoding"); e != "" && e != "json" {
		f.mu.Lock()
		f.refuse("gateway: encoding %q (the fake speaks json)", e)
		f.mu.Unlock()
		c.closeWith(4002, "Error while decoding payload.")
		return
	}
	if err := c.write(map[string]any{"op": 10, "s": nil, "t": nil, "d": map[string]any{"heartbeat_interval": f.cfg.heartbeat.Milliseconds()}}); err != nil {
		return
	}
	_ = ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		_, raw, err := ws.ReadMessage()
		if err != nil {
			return
		}
		var p struct {
			Op int             `json:"op"`
			D  json.RawMessage `json:"d"`
		}
		if err := json.Unmarshal(raw, &p); err != nil {
			f.mu.Lock()
			f.refuse("gateway: frame is not JSON: %v", err)
			f.mu.Unlock()
			c.closeWith(4002, "Error while decoding payload.")
			return
		}
		if !f.gatewayOp(c, p.Op, p.D) {
			return
		}
		// Discord closes a session whose client stops heartbeating.
		_ = ws.SetReadDeadline(time.Now().Add(3*f.cfg.heartbeat + 10*time.Second))
	}
}

// gatewayOp handles one client frame; false ends the connection.
func (f *DiscordFake) gatewayOp(c *discordConn, op int, d json.RawMessage) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	fail := func(code int, text, why string) bool {
		f.refuse("gateway: %s", why)
		c.closeWith(code, text)
		return false
	}
	switch op {
	case 1: // heartbeat
		var seq *int64
		_ = json.Unmarshal(d, &seq)
		if c.session != nil && seq != nil && *seq > c.session.acked && *seq <= c.session.seq {
			c.session.acked = *seq
		}
		return c.write(map[string]any{"op": 11}) == nil
	case 2: // identify
		if c.session != nil {
			return fail(4005, "Already authenticated.", "IDENTIFY on an identified connection")
		}
		var id struct {
			Token      string `json:"token"`
			Intents    *int   `json:"intents"`
			Properties *struct {
				OS      string `json:"os"`
				Browser string `json:"browser"`
				Device  string `json:"device"`
			} `json:"properties"`
		}
		if err := json.Unmarshal(d, &id); err != nil || id.Properties == nil {
			return fail(4002, "Error while decoding payload.", "IDENTIFY without token/properties")
		}
		if id.Token != f.token && id.Token != "Bot "+f.token {
			return fail(4004, "Authentication failed.", "IDENTIFY with a wrong token")
		}
		if id.Intents == nil {
			return fail(4013, "Invalid intent(s).", "IDENTIFY without intents")
		}
		f.identify(c, *id.Intents)
		return true
	case 6: // resume
		var rs struct {
			Token     string `json:"token"`
			SessionID string `json:"session_id"`
			Seq       int64  `json:"seq"`
		}
		if err := json.Unmarshal(d, &rs); err != nil {
			return fail(4002, "Error while decoding payload.", "RESUME is not JSON")
		}
		if rs.Token != f.token && rs.Token != "Bot "+f.token {
			return fail(4004, "Authentication failed.", "RESUME with a wrong token")
		}
		s, ok := f.sessions[rs.SessionID]
		if !ok {
			// Not a refusal of a bad request: Discord answers a session it
			// no longer has with op 9, and the client identifies anew.
			return c.write(map[string]any{"op": 9, "d": false}) == nil
		}
		f.resume(c, s, rs.Seq)
		return true
	case 3, 4, 8: // presence, voice state, request guild members
		return c.session != nil || fail(4003, "Not authenticated.", fmt.Sprintf("op %d before IDENTIFY", op))
	default:
		return fail(4001, "Unknown opcode.", fmt.Sprintf("unknown op %d", op))
	}
}

// identify starts a new session on c: READY, then the events no client
// has read yet (held ones, and undelivered ones of older sessions).
func (f *DiscordFake) identify(c *discordConn, intents int) {
	s := &discordSession{id: "sess-" + f.snowflake(), intents: intents}
	pending := f.held
	f.held = nil
	if old := f.session; old != nil {
		for _, ev := range old.events {
			if !ev.delivered && ev.t != "READY" && ev.t != "RESUMED" {
				pending = append(pending, ev)
			}
		}
		if old.conn != nil && old.conn != c {
			old.conn.closeWith(4000, "Another session took over.")
			old.conn = nil
		}
	}
	f.sessions[s.id] = s
	f.session = s
	c.session = s
	s.conn = c
	s.seq++
	ready := map[string]any{
		"v": 9, "session_id": s.id, "session_type": "normal",
		"resume_gateway_url": f.wsURL(),
		"user":               f.userJSON(f.bot, true),
		"guilds":             []any{map[string]any{"id": f.guildID, "unavailable": true}},
		"private_channels":   []any{},
		"application":        map[string]any{"id": f.appID, "flags": 0},
		"shard":              []int{0, 1},
	}
	if err := c.write(map[string]any{"op": 0, "t": "READY", "s": s.seq, "d": ready}); err != nil {
		return
	}
	c.ready = true
	for _, ev := range pending {
		f.emit(&discordEvent{t: ev.t, d: ev.d, msgID: ev.msgID, guild: ev.guild, fromBot: ev.fromBot})
	}
}

// resume replays what the client missed after seq, then RESUMED.
func (f *DiscordFake) resume(c *discordConn, s *discordSession, seq int64) {
	if s.conn != nil && s.conn != c {
		s.conn.closeWith(4000, "Session resumed elsewhere.")
	}
	s.conn, c.session = c, s
	// The client says what it read: everything up to seq.
	if seq > s.acked && seq <= s.seq {
		s.acked = seq
	}
	f.session = s
	c.ready = true
	for _, ev := range s.events {
		if ev.seq > seq {
			f.deliver(c, ev)
		}
	}
	s.seq++
	_ = c.write(map[string]any{"op": 0, "t": "RESUMED", "s": s.seq, "d": map[string]any{}})
}

// ---- factory ----

// DiscordFactory starts a fake Discord and an adapter aimed at it.
func DiscordFactory(t TB) (gateway.Adapter, Fake) {
	t.Helper()
	f := NewDiscord(t)
	a, err := discord.New(discord.Config{
		Token:  f.Token(),
		APIURL: f.URL(),
		Logger: slog.New(slog.NewTextHandler(NewDiscordLogWriter(t), &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	if err != nil {
		t.Fatalf("discord adapter: %v", err)
	}
	return a, f
}

// NewDiscordLogWriter is an io.Writer into t.Logf that goes quiet when
// the test ends, so a goroutine logging late cannot panic the test.
func NewDiscordLogWriter(t TB) io.Writer {
	w := &discordLogWriter{t: t}
	t.Cleanup(func() {
		w.mu.Lock()
		w.done = true
		w.mu.Unlock()
	})
	return w
}

type discordLogWriter struct {
	mu   sync.Mutex
	t    TB
	done bool
}

func (w *discordLogWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Logf("%s", strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}
