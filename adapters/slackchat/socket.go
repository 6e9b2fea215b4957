package slackchat

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	slackgo "github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/gateway/chat"
	"github.com/gatehouse/gatehouse/internal/backoff"
)

// Connect holds the Socket Mode connection and hands every message event,
// button press and slash command to sink until ctx ends, then returns nil. In Events API
// mode there is no connection: it waits for ctx and returns nil (the
// gateway's periodic Probe is then the platform's evidence).
//
// It reports every round trip of the socket to sink.Health: nil on hello
// and on each delivery, the error when apps.connections.open or the
// socket fails, and when an open socket closed. A socket that closed is
// reopened by slack-go at once, so every apps.connections.open after a
// Connect's first waits Config.Reconnect's next step (openPacer). It
// returns the error when auth.test is refused or apps.connections.open
// or the dial fails: the gateway reconnects with its own backoff.
func (a *Adapter) Connect(ctx context.Context, sink chat.Sink) error {
	if a.mode != modeSocket {
		<-ctx.Done()
		return nil
	}
	botUserID, err := a.identifyWithRetry(ctx, sink)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}

	// slack-go's socketmode reconnects by itself, 100 ms doubling to 5
	// minutes without jitter, and with no pause at all after a socket
	// that closed; every reconnect starts with apps.connections.open, so
	// the socket's own client paces that call. socketmode.New copies the
	// client: every option is set here.
	pacer := &openPacer{next: a.cfg.HTTPClient, wait: a.cfg.Reconnect.New(), refused: refusedReconnect.New()}
	sockAPI := slackgo.New(a.cfg.BotToken, slackgo.OptionAPIURL(a.endpoint), slackgo.OptionHTTPClient(pacer),
		slackgo.OptionAppLevelToken(a.cfg.AppToken))
	client := socketmode.New(sockAPI)
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- client.RunContext(runCtx) }()

	for {
		select {
		case evt := <-client.Events:
			if evt.Type == socketmode.EventTypeConnectionError && ctx.Err() == nil {
				// apps.connections.open or the dial failed. slack-go
				// would retry by itself, 100 ms doubling to 5 minutes:
				// hand the retry to the gateway instead, whose backoff
				// has a 1m ceiling (30s–10m for a refused token) and
				// probes auth.test between tries.
				err := connectionError(evt)
				sink.Health(ctx, gh.PlatformSlack, err)
				cancel()
				for {
					select {
					case <-client.Events:
					case <-done:
						return err
					}
				}
			}
			a.handleSocketEvent(ctx, client, sink, botUserID, evt)
		case err := <-done:
			if ctx.Err() != nil {
				return nil
			}
			return classify(fmt.Errorf("slack: socket mode: %w", err))
		case <-ctx.Done():
			cancel()
			// slack-go stops emitting once its context is done, but keep
			// draining so no sender can block while it winds down.
			for {
				select {
				case <-client.Events:
				case <-done:
					return nil
				}
			}
		}
	}
}

// refusedReconnect spaces apps.connections.open once Slack refused the
// app token in a way slack-go retries (HTTP 401, not_allowed_token_type):
// no retry helps until an operator fixes it. The gateway's policy for a
// refused token is the same.
var refusedReconnect = backoff.Policy{Floor: 30 * time.Second, Ceiling: 10 * time.Minute}

// stableAfter is how long apps.connections.open must have gone uncalled
// (a socket held that long) for the next reconnect to start again at
// the policy's floor, as the gateway does after a Connect of a minute.
const stableAfter = time.Minute

// httpDoer is what slack-go sends its requests with.
type httpDoer interface {
	Do(*http.Request) (*http.Response, error)
}

// openPacer is the socket client's HTTP client: every
// apps.connections.open after the first waits its backoff's next step
// (the refused one's after a refused token), so no reconnect of slack-go's
// comes sooner than the policy allows, whatever the server answers.
type openPacer struct {
	next httpDoer

	mu            sync.Mutex
	wait, refused *backoff.Backoff
	opened        int
	lastDone      time.Time
	lastRefused   bool
}

func (p *openPacer) Do(req *http.Request) (*http.Response, error) {
	if !strings.HasSuffix(req.URL.Path, "/apps.connections.open") {
		return p.next.Do(req)
	}
	p.mu.Lock()
	var d time.Duration
	if p.opened > 0 {
		if time.Since(p.lastDone) >= stableAfter {
			p.wait.Reset()
		}
		if p.lastRefused {
			d = p.refused.Next()
		} else {
			p.refused.Reset()
			d = p.wait.Next()
		}
	}
	p.opened++
	p.mu.Unlock()
	if !backoff.Sleep(req.Context(), d) {
		return nil, fmt.Errorf("slack: apps.connections.open: %w", req.Context().Err())
	}
	resp, err := p.next.Do(req)
	refused := false
	if err == nil {
		refused = resp.StatusCode == http.StatusUnauthorized || openRefused(resp)
	}
	p.mu.Lock()
	p.lastDone, p.lastRefused = time.Now(), refused
	p.mu.Unlock()
	return resp, err
}

// openRefused reads an apps.connections.open answer for a refused token
// ("ok": false, "error": "invalid_auth" and the like) and puts the body
// back for slack-go.
func openRefused(resp *http.Response) bool {
	if resp.StatusCode != http.StatusOK {
		return false
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		return false
	}
	var r struct {
		OK    bool   `json:"ok"`
		Error string `json:"error"`
	}
	return json.Unmarshal(body, &r) == nil && !r.OK && refusedToken[r.Error]
}

// connectionError is the failure a ConnectionError event carries.
func connectionError(evt socketmode.Event) error {
	if c, ok := evt.Data.(*slackgo.ConnectionErrorEvent); ok && c.ErrorObj != nil {
		return classify(fmt.Errorf("slack: socket mode: %w", c.ErrorObj))
	}
	return errors.New("slack: socket mode: connection failed")
}

// errSocketClosed is the socket's round trip failing: the connection
// ended (Slack refreshing it says so too: its reconnect is a short gap).
var errSocketClosed = errors.New("slack: the Socket Mode connection closed; reconnecting")

// identifyWithRetry calls auth.test until it answers, with
// Config.Reconnect between tries, reporting each failure to sink. An
// answer that refuses (the token, or anything Slack says) ends it: the
// gateway decides when to try again.
func (a *Adapter) identifyWithRetry(ctx context.Context, sink chat.Sink) (string, error) {
	b := a.cfg.Reconnect.New()
	for {
		id, err := a.identify(ctx)
		if err == nil {
			return id, nil
		}
		err = classify(fmt.Errorf("slack: auth.test: %w", err))
		var se slackgo.SlackErrorResponse
		if errors.As(err, &se) || chat.IsTokenRefused(err) || ctx.Err() != nil {
			return "", err
		}
		sink.Health(ctx, gh.PlatformSlack, err)
		d := b.Next()
		a.log.Warn("auth.test failed; retrying", "err", err, "in", d)
		if !backoff.Sleep(ctx, d) {
			return "", ctx.Err()
		}
	}
}

func (a *Adapter) handleSocketEvent(ctx context.Context, client *socketmode.Client, sink chat.Sink, botUserID string, evt socketmode.Event) {
	switch evt.Type {
	case socketmode.EventTypeHello:
		sink.Health(ctx, gh.PlatformSlack, nil)
	case socketmode.EventTypeConnecting:
		// A reconnect after a connection was held: that socket ended.
		// (Failed attempts of the same reconnect report themselves.)
		if c, ok := evt.Data.(*slackgo.ConnectingEvent); ok && c.ConnectionCount > 0 && c.Attempt == 1 && ctx.Err() == nil {
			sink.Health(ctx, gh.PlatformSlack, errSocketClosed)
		}
	case socketmode.EventTypeEventsAPI, socketmode.EventTypeInteractive, socketmode.EventTypeSlashCommand:
		// A delivery is the socket answering.
		sink.Health(ctx, gh.PlatformSlack, nil)
		if evt.Request != nil {
			a.handleRequest(ctx, client, sink, botUserID, *evt.Request)
		}
	case socketmode.EventTypeErrorBadMessage:
		// slack-go could not parse the envelope (slackevents refuses inner
		// event types it does not know, and some field shapes): read it
		// ourselves, so that it is acknowledged rather than resent.
		bad, _ := evt.Data.(*socketmode.ErrorBadMessage)
		var req socketmode.Request
		if bad == nil || json.Unmarshal(bad.Message, &req) != nil || req.EnvelopeID == "" {
			a.log.Warn("unreadable socket mode message", "data", evt.Data)
			return
		}
		a.handleRequest(ctx, client, sink, botUserID, req)
	case socketmode.EventTypeInvalidAuth, socketmode.EventTypeIncomingError, socketmode.EventTypeErrorWriteFailed:
		if ctx.Err() == nil {
			a.log.Warn("socket mode trouble", "event", string(evt.Type), "data", evt.Data)
		}
	}
}

// handleRequest answers one envelope. An events_api envelope is
// acknowledged only once the sink has committed its event; left
// unacknowledged, Slack resends it within seconds under the same event_id.
// A slash command is acknowledged with its answer (see answerCommand).
// Everything else is acknowledged at once.
func (a *Adapter) handleRequest(ctx context.Context, client *socketmode.Client, sink chat.Sink, botUserID string, req socketmode.Request) {
	ack := func() {
		// AckCtx, not Ack: between two connections nobody drains the
		// response queue, and a shutdown must not wait on it.
		if err := client.AckCtx(ctx, req.EnvelopeID, nil); err != nil && ctx.Err() == nil {
			a.log.Warn("socket mode ack failed", "envelope", req.EnvelopeID, "err", err)
		}
	}
	switch req.Type {
	case socketmode.RequestTypeEventsAPI:
		in, ok, err := parseEvent(req.Payload, botUserID, a.now())
		if err != nil {
			a.log.Warn("unreadable event; acknowledged and dropped", "envelope", req.EnvelopeID, "err", err)
			ack()
			return
		}
		if !ok {
			ack()
			return
		}
		if err := a.receiveMessage(ctx, sink, in, botUserID); err != nil {
			if ctx.Err() == nil {
				a.log.Warn("event not committed; Slack will resend it", "event", in.UpdateID, "retry", req.RetryAttempt, "err", err)
			}
			return
		}
		ack()
	case socketmode.RequestTypeInteractive:
		ack()
		a.handlePress(ctx, sink, req.Payload)
	case socketmode.RequestTypeSlashCommands:
		// Slack never resends a slash command: the acknowledgement carries
		// the answer, whatever became of it.
		var resp *commandResponse
		if cmd, err := readSocketCommand(req.Payload); err != nil {
			a.log.Warn("unreadable slash command", "envelope", req.EnvelopeID, "err", err)
			resp = ephemeralResponse("This command could not be read.", nil)
		} else {
			resp = a.answerCommand(ctx, sink, cmd)
		}
		var payload any
		if resp != nil {
			payload = resp
		}
		if err := client.AckCtx(ctx, req.EnvelopeID, payload); err != nil && ctx.Err() == nil {
			a.log.Warn("socket mode ack of a slash command failed", "envelope", req.EnvelopeID, "err", err)
		}
	default:
		ack()
	}
}
