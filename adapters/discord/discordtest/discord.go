package discordtest

import (
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gatehouse/gatehouse/adapters/adaptertest"
	"github.com/gatehouse/gatehouse/adapters/discord"
	"github.com/gatehouse/gatehouse/adapters/discord/discordtest/cdn"
	"github.com/gatehouse/gatehouse/adapters/discord/discordtest/formbody"
	"github.com/gatehouse/gatehouse/adapters/discord/discordtest/ratelimit"
	"github.com/gatehouse/gatehouse/adapters/discord/discordtest/wire"
	"github.com/gatehouse/gatehouse/adapters/internal/platformfake"
	"github.com/gatehouse/gatehouse/gateway/chat"
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
	t   adaptertest.TB
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
	// ephemeral holds the ephemeral messages interactions were answered
	// with (flags 64), by id: only their user sees them, in no channel's
	// history, and no gateway event tells of them.
	ephemeral   map[string]*discordMsg
	commands    []*discordCommand // the global application commands, as registered
	commandPuts int
	failPuts    int // bulk overwrites still to fail with a 500
	conns       map[*discordConn]struct{}
	refusals    platformfake.Refusals
	limits      ratelimit.Limiter
	closed      bool
	// ixURL is the application's interactions endpoint ("" sends
	// interactions over the gateway); signKey signs what goes there.
	ixURL   string
	signKey ed25519.PrivateKey

	wg  sync.WaitGroup // gateway connection goroutines
	cdn cdn.Store      // the bytes of attachments (SayWithFile)

	// calls counts REST requests by route ("GET gateway", "POST
	// channels/:id/messages"), refused and failed ones too; sockets
	// counts gateway websocket connection attempts.
	calls   map[string]int
	sockets int
	// failing is FailAll: every REST call is answered 502 and every
	// gateway socket refused, as when Discord (or the proxy before it)
	// is down. failSockets is FailSockets: only the gateway socket is
	// closed at once.
	failing, failSockets bool
	// revoked refuses the token, as after it was reset in the developer
	// portal.
	revoked bool
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
	files      []wire.File
	// viewer is set for an ephemeral message: the one user who sees it.
	viewer *discordUser
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

// discordButton is a message button as the fake keeps it.
type discordButton = formbody.Button

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
	msg      *discordMsg     // the message of a component or modal interaction; nil for a command
	channel  *discordChannel // where the interaction happened
	user     *discordUser
	// reply is the message a type 4 answer made (ephemeral or not).
	reply    *discordMsg
	done     chan struct{} // closed when answered or given up on
	finished bool
	// settled is closed when the user sees the answer: at once for an
	// answer that shows one, after the follow-up for a deferred one.
	settled   chan struct{}
	isSettled bool
	// modalSubmit marks a MODAL_SUBMIT (type 5) interaction.
	modalSubmit bool
	// payload is the interaction as sent to the endpoint (HTTP only).
	payload []byte
}

// finish closes done once. f.mu held.
func (ix *discordInteraction) finish() {
	if !ix.finished {
		ix.finished = true
		close(ix.done)
	}
}

// settle closes settled once. f.mu held.
func (ix *discordInteraction) settle() {
	if !ix.isSettled {
		ix.isSettled = true
		close(ix.settled)
	}
}

// DiscordInteraction is one button press and how the bot answered it.
type DiscordInteraction struct {
	ID       string
	CustomID string
	// Command is the application command's name for a slash command
	// (type 2, APPLICATION_COMMAND); CustomID is then empty.
	Command  string
	UserID   string
	Answered bool
	// Type is the response type (4 message, 5 deferred message, 6
	// deferred update, 7 update message); Flags its data.flags (64 is
	// ephemeral); Content what the presser saw (for type 7, the updated
	// message's content; after a deferral, the edited original's or the
	// follow-up's).
	Type    int
	Flags   int
	Content string
	// HTTP is true for an interaction sent to the interactions endpoint
	// rather than over the gateway.
	HTTP bool
	// FollowUps counts the messages made through the interaction's
	// webhook, and Edits the edits of its original.
	FollowUps, Edits int
	// After is how long after the press the answer came.
	After time.Duration
	// Modal is the modal the bot answered with (type 9), nil otherwise.
	Modal *DiscordModal
}

// DiscordMessage is a message as the fake holds it, with what only the
// Discord tests look at.
type DiscordMessage = wire.View

type discordConn struct {
	platformfake.WSConn
	session *discordSession
	ready   bool
}

const discordEpochMS = 1420070400000

var _ adaptertest.Fake = (*DiscordFake)(nil)

// NewDiscord starts a fake Discord; it stops when the test ends.
func NewDiscord(t adaptertest.TB, opts ...DiscordOption) *DiscordFake {
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
		ephemeral:    map[string]*discordMsg{},
		calls:        map[string]int{},
	}
	_, f.signKey, _ = ed25519.GenerateKey(rand.Reader)
	f.limits = ratelimit.Limiter{PerBucket: cfg.perChannel, Window: cfg.window, GlobalPerSecond: cfg.globalPerSecond}
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
		_ = c.WS.Close()
	}
	for _, ix := range f.interactions {
		ix.finish()
		ix.settle()
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
	f.refusals.Refusef("%s", msg)
	f.t.Logf("discord fake refused: %s", msg)
}

// Errors lists what the fake refused, as Discord would have.
// Rate-limited requests are not errors (see RateLimited).
func (f *DiscordFake) Errors() []string { return f.refusals.Errors() }

// RateLimited counts the requests the fake answered with 429.
func (f *DiscordFake) RateLimited() int { return f.refusals.ThrottledCount() }

// RateLimitNext makes the next message create or edit fail with 429
// and retry_after d, with the bucket headers Discord sends with it.
func (f *DiscordFake) RateLimitNext(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.limits.Force429 = d
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

// ChatID is ChannelID, as the shared suite names it.
func (f *DiscordFake) ChatID(chat string) string { return f.ChannelID(chat) }

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
func (f *DiscordFake) Messages(chat string) []adaptertest.Message {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []adaptertest.Message
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
	if m, ok := f.ephemeral[id]; ok && m.channel == ch {
		return f.view(m), true
	}
	return DiscordMessage{}, false
}

func (f *DiscordFake) view(m *discordMsg) DiscordMessage {
	return f.wireMessage(m).View(m.author.id, m.allowed)
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
		_ = f.session.conn.WS.UnderlyingConn().Close()
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
	return f.await(ix)
}

// await waits up to the interaction deadline for the bot's callback to ix
// and returns what the user saw.
func (f *DiscordFake) await(ix *discordInteraction) (string, error) {
	timer := time.NewTimer(time.Until(ix.deadline) + 100*time.Millisecond)
	defer timer.Stop()
	select {
	case <-ix.done:
	case <-timer.C:
	}
	f.mu.Lock()
	what := ix.CustomID
	if ix.Command != "" {
		what = "/" + ix.Command
	}
	if !ix.Answered {
		f.refuse("interaction %s (%s) was not answered within %s: the user sees \"This interaction failed\"", ix.ID, what, f.cfg.deadline)
		ix.finish()
		f.mu.Unlock()
		return "", fmt.Errorf("discord fake: interaction %s not answered within %s", ix.ID, f.cfg.deadline)
	}
	f.mu.Unlock()
	// A deferred answer shows nothing until its follow-up.
	followed := time.NewTimer(followUpWait)
	defer followed.Stop()
	select {
	case <-ix.settled:
	case <-followed.C:
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !ix.isSettled {
		f.refuse("interaction %s (%s) was deferred (type %d) and never followed up within %s", ix.ID, what, ix.Type, followUpWait)
		return "", fmt.Errorf("discord fake: deferred interaction %s never followed up", ix.ID)
	}
	return ix.Content, nil
}

// followUpWait is how long a test waits for a deferred answer's
// follow-up (Discord keeps the token 15 minutes).
const followUpWait = 15 * time.Second

func (f *DiscordFake) press(chat, msgID, data, user string) (*discordInteraction, error) {
	msg, err := f.pressable(chat, msgID, data, user)
	if err != nil {
		return nil, err
	}
	if err := f.canInteract(); err != nil {
		return nil, err
	}
	return f.interact(msg.channel, msg, f.user(user), 3, data, map[string]any{"custom_id": data, "component_type": 2}), nil
}

// pressable is the bot's message msgID in chat when user can press its
// button data. f.mu held.
func (f *DiscordFake) pressable(chat, msgID, data, user string) (*discordMsg, error) {
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
	if m, ok := f.ephemeral[msgID]; ok && m.channel == ch {
		// Only its user sees an ephemeral message, so only they can
		// press its buttons.
		if m.viewer != f.user(user) {
			return nil, fmt.Errorf("discord fake: %s cannot see the ephemeral message %s of %s", user, msgID, m.viewer.name)
		}
		msg = m
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
	return msg, nil
}

// interact dispatches an INTERACTION_CREATE of type typ (2 a slash
// command, 3 a component, 5 a modal submission) by u on the bot's
// message msg in ch (nil for a command), with data, and returns it to
// wait for. f.mu held.
func (f *DiscordFake) interact(ch *discordChannel, msg *discordMsg, u *discordUser, typ int, customID string, data map[string]any) *discordInteraction {
	now := time.Now()
	ix := &discordInteraction{
		DiscordInteraction: DiscordInteraction{ID: f.snowflake(), CustomID: customID, UserID: u.id},
		token:              "itok-" + f.snowflake(),
		created:            now,
		deadline:           now.Add(f.cfg.deadline),
		msg:                msg,
		channel:            ch,
		user:               u,
		done:               make(chan struct{}),
		settled:            make(chan struct{}),
		modalSubmit:        typ == 5,
	}
	if typ == 2 {
		ix.CustomID, ix.Command = "", customID
	}
	f.interactions[ix.ID] = ix
	f.ixOrder = append(f.ixOrder, ix.ID)
	f.dispatchInteraction(ix, f.interactionJSON(ix, typ, data))
	return ix
}

// interactionJSON is ix as Discord sends it (an INTERACTION_CREATE's d,
// or the body POSTed to the endpoint). f.mu held.
func (f *DiscordFake) interactionJSON(ix *discordInteraction, typ int, data map[string]any) map[string]any {
	w := wire.Interaction{ID: ix.ID, AppID: f.appID, Token: ix.token, Type: typ, ChannelID: ix.channel.id,
		GuildID: ix.channel.guildID, User: f.userJSON(ix.user, false), Data: data, JoinedAt: f.started}
	if ix.msg != nil {
		w.Message = f.messageJSON(ix.msg)
	}
	return w.JSON()
}

func (f *DiscordFake) userJSON(u *discordUser, bot bool) map[string]any {
	return wire.User(u.id, u.name, bot || u == f.bot)
}

// wireMessage is what m is written from. f.mu held.
func (f *DiscordFake) wireMessage(m *discordMsg) wire.Message {
	return wire.Message{ID: m.id, ChannelID: m.channel.id, Kind: m.kind, Author: f.userJSON(m.author, m.authorBot),
		Content: m.content, Rows: m.rows, Everyone: m.everyone, Ephemeral: m.viewer != nil, Attachment: m.attachment,
		Files: m.files, RefID: m.refID, Created: m.created, Edited: m.edited}
}

func (f *DiscordFake) messageJSON(m *discordMsg) map[string]any { return f.wireMessage(m).JSON() }

// emitMessage dispatches a message event with the gateway-only fields
// (guild_id, member) that REST responses do not carry.
func (f *DiscordFake) emitMessage(t string, m *discordMsg) {
	d := f.messageJSON(m)
	if m.channel.guildID != "" {
		d["guild_id"] = m.channel.guildID
		d["member"] = wire.Member(f.started)
	}
	for _, ref := range m.channel.msgs {
		if m.refID != "" && ref.id == m.refID && t == "MESSAGE_CREATE" {
			d["referenced_message"] = f.messageJSON(ref)
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
	d, ok := wire.ForIntents(ev.t, ev.d, ev.guild, ev.fromBot, c.session.intents)
	if !ok {
		return
	}
	if err := c.WriteJSON(map[string]any{"op": 0, "t": ev.t, "s": ev.seq, "d": d}); err != nil {
		f.t.Logf("discord fake: writing %s to the gateway client: %v", ev.t, err)
		_ = c.WS.Close()
		if ev.session.conn == c {
			ev.session.conn = nil
		}
	}
}

// ---- factory ----

// DiscordFactory starts a fake Discord and an adapter aimed at it.
func DiscordFactory(t adaptertest.TB) (chat.Adapter, adaptertest.Fake) {
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
// the test ends, so a goroutine logging late cannot panic the test: it is
// adaptertest.LogWriter, under the name Discord's tests know.
func NewDiscordLogWriter(t adaptertest.TB) io.Writer { return adaptertest.LogWriter(t) }

// ---- misbehaving ----

// FailAll makes every later request fail until FailAll(false), as when
// Discord or a proxy in front of it is down: REST calls are answered
// 502 Bad Gateway at once, gateway websocket upgrades are refused with a
// 502, and the sockets open now are cut without a close frame (their
// sessions stay resumable). Calls and Sockets still count them. A
// failure is not a refusal the bot could have avoided, so Errors does
// not list it.
func (f *DiscordFake) FailAll(on bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failing = on
	if on {
		f.cutSockets()
	}
}

// FailSockets makes every later gateway socket close at once after the
// upgrade, before HELLO, while REST keeps answering, until
// FailSockets(false): a gateway behind a proxy that drops websockets.
// The sockets open now are cut.
func (f *DiscordFake) FailSockets(on bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failSockets = on
	if on {
		f.cutSockets()
	}
}

// cutSockets closes every gateway socket without a close frame. f.mu
// held.
func (f *DiscordFake) cutSockets() {
	for c := range f.conns {
		_ = c.WS.UnderlyingConn().Close()
	}
}

// RevokeToken makes the fake refuse Token from now on, as after the
// token was reset in the developer portal: REST calls get Discord's 401
// and IDENTIFY or RESUME gets close code 4004 (Authentication failed).
// The sockets open now are closed with 4004 too. RestoreToken accepts it
// again.
func (f *DiscordFake) RevokeToken() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.revoked = true
	for c := range f.conns {
		c.CloseWith(4004, "Authentication failed.")
	}
}

// RestoreToken undoes RevokeToken.
func (f *DiscordFake) RestoreToken() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.revoked = false
}

// tokenOK reports whether auth carries the bot token and it is not
// revoked. f.mu held.
func (f *DiscordFake) tokenOK(token string) bool {
	return !f.revoked && (token == f.token || token == "Bot "+f.token)
}

// Calls is how many REST requests the fake has had for route, a method
// and a path under /api/v9 with ids as ":id" ("GET gateway", "GET
// users/@me", "POST channels/:id/messages"): answered, refused or
// failed.
func (f *DiscordFake) Calls(route string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[route]
}

// Sockets is how many gateway websocket connections the fake has been
// asked for, refused and failed ones too.
func (f *DiscordFake) Sockets() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sockets
}

// badGateway answers as a proxy in front of a Discord that is down.
func badGateway(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/html")
	w.WriteHeader(http.StatusBadGateway)
	_, _ = io.WriteString(w, "<html><head><title>502 Bad Gateway</title></head><body><center><h1>502 Bad Gateway</h1></center></body></html>\n")
}
