package slackchat

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"time"

	slackgo "github.com/slack-go/slack"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/gateway/chat"
	"github.com/gatehouse/gatehouse/internal/backoff"
)

// Config configures an [Adapter].
type Config struct {
	// BotToken is the bot user OAuth token (xoxb-…). Required.
	BotToken string
	// AppToken is the app-level token (xapp-…) with connections:write.
	// When set, the adapter runs in Socket Mode: Connect holds the
	// WebSocket and Handler is nil. Socket Mode wins when both AppToken
	// and SigningSecret are set.
	AppToken string
	// SigningSecret is the app's signing secret. When set and AppToken is
	// empty, the adapter runs in Events API mode: Handler serves Slack's
	// HTTP requests and Connect only waits for its context to end.
	SigningSecret string
	// APIURL is where Slack's Web API lives. Slack's own host in any form
	// ("slack.com", "https://slack.com", "https://slack.com/",
	// "https://slack.com/api/") is "https://slack.com/api/"; on any other
	// host a URL whose path is "/api/" or "/" is slack-go's APIURL as
	// given (slack-go's slacktest.GetAPIURL() works unchanged), and no
	// path or "/api" means ".../api/". Defaults to "https://slack.com";
	// New refuses anything else (baseurl.go has the whole table). Tests
	// aim it at a fake.
	APIURL string
	// Reconnect spaces the Socket Mode connection's attempts within one
	// Connect: every apps.connections.open after the first (a socket that
	// closed, at once or after hours; a connections.open that failed)
	// waits the policy's next step, and so does an auth.test retried
	// before the socket opens. A refused token waits 30s–10m instead.
	// The zero value is backoff's defaults: 1s floor, 1m ceiling, 0.2
	// jitter. Tests may shorten it.
	Reconnect backoff.Policy
	// HTTPClient makes the Web API calls. Defaults to a client with a
	// 30 s timeout.
	HTTPClient *http.Client
	// Logger receives what the adapter cannot hand on (unreadable
	// payloads, failed press answers, lost connections). Defaults to
	// slog.Default().
	Logger *slog.Logger
	// Now stamps gh.Inbound.ReceivedAt. Defaults to time.Now.
	Now func() time.Time
}

type mode int

const (
	modeSocket mode = iota
	modeEvents
)

// Adapter is a Slack client for the gateway. It is safe for concurrent
// use.
type Adapter struct {
	cfg  Config
	mode mode
	api  *slackgo.Client
	// endpoint is the Web API endpoint, for the socket's own client.
	endpoint string
	log      *slog.Logger
	now      func() time.Time

	// idMu guards the bot's own user id, learnt from auth.test, by which
	// our own messages are recognised when Slack echoes them back.
	idMu      sync.Mutex
	botUserID string
	idTried   time.Time
}

// New checks cfg and builds an adapter. It does no I/O.
func New(cfg Config) (*Adapter, error) {
	if cfg.BotToken == "" {
		return nil, errors.New("slack: BotToken is required")
	}
	m := modeSocket
	switch {
	case cfg.AppToken != "":
	case cfg.SigningSecret != "":
		m = modeEvents
	default:
		return nil, errors.New("slack: set AppToken (Socket Mode) or SigningSecret (Events API over HTTP)")
	}
	endpoint, err := apiEndpoint(cfg.APIURL)
	if err != nil {
		return nil, err
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: 30 * time.Second}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	// slack-go joins the method name straight onto the endpoint, which
	// apiEndpoint ends in "/".
	opts := []slackgo.Option{
		slackgo.OptionAPIURL(endpoint),
		slackgo.OptionHTTPClient(cfg.HTTPClient),
		// No slackgo.OptionRetry: a 429 must reach the dispatcher, which
		// owns waiting and retrying.
	}
	if cfg.AppToken != "" {
		opts = append(opts, slackgo.OptionAppLevelToken(cfg.AppToken))
	}
	return &Adapter{
		cfg:      cfg,
		mode:     m,
		api:      slackgo.New(cfg.BotToken, opts...),
		endpoint: endpoint,
		log:      cfg.Logger.With("platform", gh.PlatformSlack),
		now:      cfg.Now,
	}, nil
}

// AsksReasons is true: a card has a "Deny with reason…" button, whose
// press opens a modal (views.open) asking for the reason; its submission
// (view_submission) is the denial.
func (a *Adapter) AsksReasons() bool { return true }

// Platform is gh.PlatformSlack.
func (a *Adapter) Platform() string { return gh.PlatformSlack }

// Limits are Slack's: chat.postMessage allows about one message a second
// per channel, and "several hundred messages per minute" across a
// workspace, read conservatively as 5/s. Slack truncates text over 40,000
// characters but recommends at most 4,000.
func (a *Adapter) Limits() chat.Limits {
	return chat.Limits{
		MaxText:   4000,
		PerChat:   time.Second,
		PerSecond: 5,
	}
}

var boldRe = regexp.MustCompile(`\*\*([^*\n]+)\*\*`)

// Format escapes text for Slack's mrkdwn. Slack reads only &, < and > as
// control characters: escaping them means a model's "<!channel>" or
// "<@U123>" can never ping anyone and "<http://x|y>" can never disguise a
// link. Markdown's **bold** becomes mrkdwn's *bold*.
func (a *Adapter) Format(text string) string { return Format(text) }

// Format is [Adapter.Format] without an adapter.
func Format(text string) string {
	s := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(text)
	return boldRe.ReplaceAllString(s, "*$1*")
}

// Send posts m with chat.postMessage, into the session's thread when the
// address has one, and returns the message's ts.
func (a *Adapter) Send(ctx context.Context, m chat.Outgoing) (string, error) {
	text := m.Text
	var opts []slackgo.MsgOption
	if m.Card != nil {
		if text == "" {
			text = m.Card.Text
		}
		opts = append(opts, slackgo.MsgOptionBlocks(cardBlocks(*m.Card, text)...))
	}
	opts = append(opts, slackgo.MsgOptionText(text, false))
	if m.Address.ThreadID != "" {
		opts = append(opts, slackgo.MsgOptionTS(m.Address.ThreadID))
	}
	_, ts, err := a.api.PostMessageContext(ctx, m.Address.ChatID, opts...)
	if err != nil {
		return "", sendError("chat.postMessage", err)
	}
	return ts, nil
}

// EditCard rewrites the card message (channel from addr, ts messageID) to
// card. Slack keeps a message's blocks when chat.update omits them, so the
// blocks are always sent: without card.Buttons there is no actions block
// and the buttons are gone.
func (a *Adapter) EditCard(ctx context.Context, addr gh.Address, messageID string, card chat.Card) error {
	_, _, _, err := a.api.UpdateMessageContext(ctx, addr.ChatID, messageID,
		slackgo.MsgOptionText(card.Text, false),
		slackgo.MsgOptionBlocks(cardBlocks(card, card.Text)...))
	if err != nil {
		return sendError("chat.update", err)
	}
	return nil
}

// sendError turns what slack-go returned into what the dispatcher acts on.
func sendError(method string, err error) error {
	wrapped := fmt.Errorf("slack %s: %w", method, err)
	var rl *slackgo.RateLimitedError
	if errors.As(err, &rl) {
		return &chat.SendError{Status: http.StatusTooManyRequests, RetryAfter: rl.RetryAfter, Err: wrapped}
	}
	var sc slackgo.StatusCodeError
	if errors.As(err, &sc) {
		// A 4xx other than a timeout or a 429 is the request's fault and
		// will be refused again; a 5xx is Slack's and may pass later.
		perm := sc.Code >= 400 && sc.Code < 500 && sc.Code != http.StatusRequestTimeout && sc.Code != http.StatusTooManyRequests
		return &chat.SendError{Status: sc.Code, Permanent: perm, Err: wrapped}
	}
	var se slackgo.SlackErrorResponse
	if errors.As(err, &se) {
		status, perm := errorStatus(se.Err)
		return &chat.SendError{Status: status, Permanent: perm, Err: wrapped}
	}
	// Transport errors (refused connection, cancelled context) are
	// returned as they are: the dispatcher retries them.
	return wrapped
}

// errorStatus maps a Slack error code (answered with HTTP 200 and
// "ok":false) to the HTTP status it amounts to and whether a retry could
// help. Slack's error codes are almost all about the request itself, so an
// unknown code counts as a permanent 400; only the codes below are
// transient.
func errorStatus(code string) (status int, permanent bool) {
	switch code {
	case "ratelimited", "rate_limited":
		return http.StatusTooManyRequests, false
	case "fatal_error", "internal_error", "service_unavailable", "request_timeout", "team_added_to_org":
		return http.StatusServiceUnavailable, false
	case "invalid_auth", "not_authed", "account_inactive", "token_revoked", "token_expired":
		return http.StatusUnauthorized, true
	case "not_in_channel", "is_archived", "missing_scope", "restricted_action",
		"restricted_action_read_only_channel", "restricted_action_thread_only_channel",
		"restricted_action_non_threadable_channel", "cant_update_message", "edit_window_closed",
		"not_allowed_token_type", "access_denied", "ekm_access_denied", "team_access_not_granted",
		"user_not_in_channel", "channel_is_archived":
		return http.StatusForbidden, true
	case "channel_not_found", "message_not_found", "user_not_found", "thread_not_found":
		return http.StatusNotFound, true
	}
	return http.StatusBadRequest, true
}
