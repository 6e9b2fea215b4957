package discord

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/bwmarrin/discordgo"
	"github.com/gorilla/websocket"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/gateway/chat"
	"github.com/gatehouse/gatehouse/internal/backoff"
)

// Close codes after which Discord will not take the same IDENTIFY
// again: retrying cannot help, so Connect returns.
var fatalCloseCodes = []int{
	closeAuthFailed, // authentication failed (classify: a refused token)
	4010,            // invalid shard
	4011,            // sharding required
	4012,            // invalid API version
	4013,            // invalid intents
	4014,            // disallowed intents (message content not enabled in the portal)
}

// connection is one Connect call's state.
type connection struct {
	a    *Adapter
	sink chat.Sink
	// ctx ends with Connect's context; grace ends ShutdownGrace later and
	// bounds the work on events already read (see the package doc).
	ctx   context.Context
	grace context.Context
	self  atomic.Value // string: the bot's user id, from READY

	msgs         chan *discordgo.Message
	closed       chan struct{} // no more msgs will come
	disconnected chan struct{}
	wg           sync.WaitGroup // the message worker, press answers and command registration
	register     sync.Once      // the slash commands are registered once per Connect
}

// Connect holds the gateway session until ctx ends: HELLO, IDENTIFY,
// READY and heartbeats are discordgo's; Connect reconnects (resuming the
// session, so Discord replays what was missed) with backoff when the
// socket fails, and returns an error only when Discord refuses the bot
// for good (a wrong token, intents not enabled). It returns nil when ctx
// ends, after the session is closed and every event already read has
// been handed on; closing the session takes discordgo one second.
func (a *Adapter) Connect(ctx context.Context, sink chat.Sink) error {
	if !a.connected.CompareAndSwap(false, true) {
		return errors.New("discord: Connect is already running for this adapter")
	}
	defer a.connected.Store(false)

	grace, cancelGrace := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelGrace()
	stopGrace := context.AfterFunc(ctx, func() { time.AfterFunc(a.cfg.ShutdownGrace, cancelGrace) })
	defer stopGrace()

	c := &connection{
		a: a, sink: sink, ctx: ctx, grace: grace,
		msgs:         make(chan *discordgo.Message, 64),
		closed:       make(chan struct{}),
		disconnected: make(chan struct{}, 1),
	}
	c.self.Store("")
	s := a.newSession()
	s.Dialer = ctxDialer(ctx)
	s.Client = ctxClient(ctx, a.client)
	removers := []func(){
		s.AddHandler(func(_ *discordgo.Session, r *discordgo.Ready) {
			if r.User != nil {
				c.self.Store(r.User.ID)
			}
			sink.Health(ctx, gh.PlatformDiscord, nil)
			c.registerCommands(r)
		}),
		s.AddHandler(func(_ *discordgo.Session, _ *discordgo.Resumed) { sink.Health(ctx, gh.PlatformDiscord, nil) }),
		s.AddHandler(func(_ *discordgo.Session, m *discordgo.MessageCreate) { c.enqueue(m.Message) }),
		s.AddHandler(func(_ *discordgo.Session, i *discordgo.InteractionCreate) { c.interaction(i.Interaction) }),
		s.AddHandler(func(_ *discordgo.Session, _ *discordgo.Disconnect) {
			select {
			case c.disconnected <- struct{}{}:
			default:
			}
		}),
	}
	c.wg.Add(1)
	go c.work()

	err := c.hold(s)

	// Closing sends a close frame and then sleeps a second (discordgo);
	// removing the handlers waits for one still running, after which no
	// more events arrive and the worker can drain what was read.
	_ = s.Close()
	for _, remove := range removers {
		remove()
	}
	close(c.closed)
	c.wg.Wait()
	return err
}

// reconnectPolicy spaces attempts to open the gateway socket after one
// failed or dropped: from a second up to Config.ReconnectMaxWait (a
// minute by default), with jitter, so a gateway or proxy that refuses
// or closes sockets at once is not hammered. discordgo's own reconnect
// loop is off (newSession); this is the only one.
var reconnectPolicy = backoff.Policy{Floor: time.Second, Ceiling: time.Minute}

// livedLong is how long a socket must have stayed up for its loss to
// start the backoff over: a flapping gateway keeps slowing down.
const livedLong = time.Minute

// hold opens the session and reopens it when it drops, until ctx ends.
//
// Every attempt's outcome goes to sink.Health: READY, RESUMED and each
// heartbeat ACK are round trips that succeeded (see the handlers in
// Connect and watchAcks), a failed Open or a socket that closed is a
// failure with its cause, and a refused token (close code 4004, a 401)
// is marked so with chat.TokenRefused and ends Connect: retrying cannot
// help until an operator fixes the token, and the gateway then spaces
// its checks by its refused-token policy.
func (c *connection) hold(s *discordgo.Session) error {
	log := c.a.log
	p := reconnectPolicy
	p.Ceiling = c.a.cfg.ReconnectMaxWait
	wait := p.New()
	var lastCause string
	for {
		// A disconnect reported before this Open is about the old socket.
		select {
		case <-c.disconnected:
		default:
		}
		err := s.Open()
		if c.ctx.Err() != nil {
			return nil
		}
		if err != nil && !errors.Is(err, discordgo.ErrWSAlreadyOpen) {
			err = classify(fmt.Errorf("discord: gateway connect: %w", err))
			if fatalOpenError(err) {
				err = fmt.Errorf("discord: gateway refused the bot: %w", err)
				c.sink.Health(c.ctx, gh.PlatformDiscord, err)
				log.Error("discord gateway refused the bot", "err", err, "token_refused", chat.IsTokenRefused(err))
				return err
			}
			c.sink.Health(c.ctx, gh.PlatformDiscord, err)
			d := wait.Next()
			// The first failure of a kind is a warning; its repeats are in
			// the platform's state, and would only flood the log.
			if cause := err.Error(); cause != lastCause {
				lastCause = cause
				log.Warn("discord gateway connect failed", "err", err, "retry_in", d)
			} else {
				log.Debug("discord gateway connect failed again", "err", err, "retry_in", d)
			}
			if !backoff.Sleep(c.ctx, d) {
				return nil
			}
			continue
		}
		opened := time.Now()
		lastCause = ""
		log.Info("discord gateway connected", "bot_id", c.self.Load())
		if !c.watchAcks(s) {
			return nil
		}
		lived := time.Since(opened).Round(time.Millisecond)
		c.sink.Health(c.ctx, gh.PlatformDiscord, fmt.Errorf("discord: gateway socket closed after %s", lived))
		// A connection that lived a while starts the backoff over; a
		// flapping one slows down.
		if lived > livedLong {
			wait.Reset()
		}
		d := wait.Next()
		log.Warn("discord gateway connection lost; resuming", "lived", lived, "retry_in", d)
		if !backoff.Sleep(c.ctx, d) {
			return nil
		}
	}
}

// ackPoll is how often watchAcks looks for a new heartbeat ACK: well
// under Discord's heartbeat interval (about 41 s), so each ACK is
// reported soon after it came.
const ackPoll = 500 * time.Millisecond

// watchAcks reports each heartbeat ACK on the open socket to
// sink.Health as a round trip that succeeded, until the socket drops
// (true) or ctx ends (false). discordgo notes an ACK only in
// Session.LastHeartbeatAck (no event), so it is read; when ACKs stop
// coming discordgo closes the socket itself after five intervals, and
// the loss is reported by hold.
func (c *connection) watchAcks(s *discordgo.Session) bool {
	last := lastAck(s)
	t := time.NewTicker(ackPoll)
	defer t.Stop()
	for {
		select {
		case <-c.ctx.Done():
			return false
		case <-c.disconnected:
			return true
		case <-t.C:
			if ack := lastAck(s); ack.After(last) {
				last = ack
				c.sink.Health(c.ctx, gh.PlatformDiscord, nil)
			}
		}
	}
}

// lastAck reads LastHeartbeatAck under the session's lock, which
// discordgo holds when it writes it.
func lastAck(s *discordgo.Session) time.Time {
	s.RLock()
	defer s.RUnlock()
	return s.LastHeartbeatAck
}

func fatalOpenError(err error) bool {
	if chat.IsTokenRefused(err) {
		return true
	}
	var ce *websocket.CloseError
	if errors.As(err, &ce) {
		for _, code := range fatalCloseCodes {
			if ce.Code == code {
				return true
			}
		}
	}
	var re *discordgo.RESTError
	return errors.As(err, &re) && re.Response != nil && re.Response.StatusCode == http.StatusUnauthorized
}

// sleep waits d or until ctx ends; false when ctx ended.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// ctxDialer dials gateway sockets that close when ctx ends, so no read
// of discordgo's (which take no context) outlives Connect.
func ctxDialer(ctx context.Context) *websocket.Dialer {
	return &websocket.Dialer{
		Proxy:            http.ProxyFromEnvironment,
		HandshakeTimeout: 45 * time.Second,
		NetDialContext: func(dctx context.Context, network, addr string) (net.Conn, error) {
			var d net.Dialer
			nc, err := d.DialContext(dctx, network, addr)
			if err != nil {
				return nil, err
			}
			stop := context.AfterFunc(ctx, func() { _ = nc.Close() })
			return &ctxConn{Conn: nc, stop: stop}, nil
		},
	}
}

// ctxClient is client with every request also cancelled when ctx
// ends: discordgo's Open looks the gateway URL up without a context.
func ctxClient(ctx context.Context, client *http.Client) *http.Client {
	c := *client
	base := c.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	c.Transport = &ctxTransport{base: base, ctx: ctx}
	return &c
}

type ctxTransport struct {
	base http.RoundTripper
	ctx  context.Context
}

func (t *ctxTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancel(r.Context())
	stop := context.AfterFunc(t.ctx, cancel)
	done := func() { stop(); cancel() }
	resp, err := t.base.RoundTrip(r.WithContext(ctx))
	if err != nil {
		done()
		return nil, err
	}
	resp.Body = &doneBody{ReadCloser: resp.Body, done: done}
	return resp, nil
}

// doneBody releases the request's context when the body is closed.
type doneBody struct {
	io.ReadCloser
	done func()
}

func (b *doneBody) Close() error {
	err := b.ReadCloser.Close()
	b.done()
	return err
}

type ctxConn struct {
	net.Conn
	stop func() bool
}

func (c *ctxConn) Close() error {
	c.stop()
	return c.Conn.Close()
}

// enqueue runs on discordgo's reading goroutine: it only queues, so
// heartbeats and presses are not held up by a slow Receive.
func (c *connection) enqueue(m *discordgo.Message) {
	// Waiting on grace, not ctx: a message read while the session closes
	// still has ShutdownGrace to reach Receive (Discord will not resend
	// it), and a select on an ended ctx would drop it half the time even
	// with room in the queue.
	select {
	case c.msgs <- m:
	case <-c.grace.Done():
		if m != nil {
			c.a.log.Warn("discord message dropped: Connect is stopping", "message_id", m.ID)
		}
	}
}

// work hands messages to Receive one at a time, in order.
func (c *connection) work() {
	defer c.wg.Done()
	for {
		select {
		case m := <-c.msgs:
			c.receive(m)
		case <-c.closed:
			for {
				select {
				case m := <-c.msgs:
					c.receive(m)
				default:
					return
				}
			}
		}
	}
}

// receive hands one message to the sink, retrying on errors: Discord
// will not send it again (see the package doc).
func (c *connection) receive(m *discordgo.Message) {
	in, ok := inboundFromMessage(m, c.self.Load().(string), time.Now())
	if !ok {
		c.a.log.Warn("discord message without id, channel or author ignored")
		return
	}
	if in.Text == "" && in.Unsupported == "" && in.ChatType != gh.ChatDM && !in.IsBot {
		c.a.warnContent.Do(func() {
			c.a.log.Warn("discord guild message arrived without content: is the Message Content intent enabled for the bot?", "message_id", in.MessageID)
		})
	}
	hand := c.handOn(m, in)
	wait := c.a.cfg.ReceiveBackoff
	for attempt := 1; ; attempt++ {
		err := hand()
		if err == nil {
			return
		}
		if attempt >= c.a.cfg.ReceiveAttempts || c.grace.Err() != nil {
			c.a.log.Error("discord message lost: Receive failed and Discord does not redeliver",
				"message_id", in.MessageID, "channel_id", in.ChatID, "attempts", attempt, "err", err)
			return
		}
		c.a.log.Warn("discord Receive failed; retrying", "message_id", in.MessageID, "attempt", attempt, "err", err)
		if !sleep(c.grace, wait) {
			c.a.log.Error("discord message lost: Connect stopped while retrying Receive", "message_id", in.MessageID)
			return
		}
		wait *= 2
	}
}

// interaction runs on discordgo's reading goroutine and answers each
// interaction on a goroutine of its own, within Discord's 3 s.
func (c *connection) interaction(i *discordgo.Interaction) {
	if i == nil || i.ID == "" || i.Token == "" {
		return
	}
	received := time.Now()
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		resp := c.a.answer(c.grace, c.sink, i, c.a.cfg.PressTimeout)
		if resp == nil {
			return
		}
		// The answer is due even while Connect stops; Discord's deadline
		// bounds it.
		ctx, cancel := context.WithDeadline(context.WithoutCancel(c.ctx), received.Add(interactionLimit))
		defer cancel()
		if err := c.a.rest.InteractionRespond(i, resp, discordgo.WithContext(ctx)); err != nil {
			c.a.log.Error("discord interaction answer failed", "interaction_id", i.ID, "err", err)
		}
	}()
}

// Answers the presser sees when there is nothing better to say.
const (
	notOurs     = "This button is not from Gatehouse."
	pressFailed = "Gatehouse could not record your choice. Please try again."
	pressNoted  = "Noted."
)

// answer decides the answer to an interaction, whichever transport
// brought it (the gateway socket or the HTTP endpoint): a press, a
// reason modal's submission or a slash command, handed to sink with
// timeout. nil means none is due (a ping or autocomplete, which never
// reach a bot like this, or a command already answered).
func (a *Adapter) answer(ctx context.Context, sink chat.Sink, i *discordgo.Interaction, timeout time.Duration) *discordgo.InteractionResponse {
	var p gh.Press
	var ok bool
	switch i.Type {
	case discordgo.InteractionMessageComponent:
		p, ok = pressFromInteraction(i)
	case discordgo.InteractionModalSubmit:
		// The modal asking for a denial's reason, submitted.
		p, ok = pressFromModal(i)
	case discordgo.InteractionApplicationCommand:
		return a.commandResponse(ctx, sink, i, timeout)
	default:
		return nil
	}
	if !ok {
		data, _ := customID(i)
		a.log.Info("discord press of a button that is not ours", "interaction_id", i.ID, "custom_id", data)
		return ephemeral(notOurs)
	}
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res, err := sink.Press(pctx, p)
	if err != nil {
		a.log.Error("discord press not recorded", "interaction_id", i.ID, "gate_id", p.GateID, "err", err)
		return ephemeral(pressFailed)
	}
	if res.AskReason && i.Type == discordgo.InteractionMessageComponent {
		return reasonModal(p.GateID, res.Gate.Tool)
	}
	if res.Won && res.Card.Text != "" && utf8.RuneCountInString(res.Card.Text) <= maxText {
		rows, err := buttonRows(res.Card.Buttons)
		if err == nil {
			return &discordgo.InteractionResponse{
				Type: discordgo.InteractionResponseUpdateMessage,
				Data: &discordgo.InteractionResponseData{
					Content:         res.Card.Text,
					Components:      rows,
					AllowedMentions: noMentions(),
				},
			}
		}
		a.log.Error("discord decided card cannot be shown; answering with text", "gate_id", p.GateID, "err", err)
	}
	text := res.Text
	if text == "" {
		text = pressNoted
	}
	return ephemeral(text)
}

// reasonInput is the custom_id of the reason modal's text input.
const reasonInput = "reason"

// reasonModal answers a press of "Deny with reason…" with a modal (type
// 9) asking why. Its custom_id is the deny button's data, so its
// submission (type 5, MODAL_SUBMIT) is a deny press of the same card, with
// the reason (pressFromModal).
func reasonModal(gateID, tool string) *discordgo.InteractionResponse {
	return &discordgo.InteractionResponse{
		Type: discordgo.InteractionResponseModal,
		Data: &discordgo.InteractionResponseData{
			CustomID: chat.ButtonData(gateID, chat.ChoiceDeny),
			Title:    "Deny with a reason",
			Components: []discordgo.MessageComponent{discordgo.ActionsRow{Components: []discordgo.MessageComponent{
				discordgo.TextInput{
					CustomID:    reasonInput,
					Label:       "Why deny it?",
					Style:       discordgo.TextInputParagraph,
					Placeholder: truncateRunes("Shown on the card and given to the agent. ("+tool+")", 100),
					Required:    true,
					MinLength:   1,
					MaxLength:   chat.MaxReason,
				},
			}}},
		},
	}
}

// truncateRunes cuts s to at most n characters, marking a cut.
func truncateRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

// ephemeral is a type 4 answer only the presser sees.
func ephemeral(text string) *discordgo.InteractionResponse {
	return &discordgo.InteractionResponse{
		Type: discordgo.InteractionResponseChannelMessageWithSource,
		Data: &discordgo.InteractionResponseData{
			Content:         text,
			Flags:           discordgo.MessageFlagsEphemeral,
			AllowedMentions: noMentions(),
		},
	}
}
