package discord

import (
	"crypto/ed25519"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bwmarrin/discordgo"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/gateway/chat"
	"github.com/gatehouse/gatehouse/internal/inflight"
)

// DefaultAPIURL is where Discord's REST API lives.
const DefaultAPIURL = "https://discord.com"

// DefaultIntents are the gateway intents the adapter asks for: guild
// messages, direct messages and the privileged message content intent,
// which must be enabled for the bot in Discord's developer portal or
// guild messages arrive without text.
const DefaultIntents = discordgo.IntentsGuildMessages | discordgo.IntentsDirectMessages | discordgo.IntentsMessageContent

// Discord's limits.
const (
	maxText          = 2000
	maxCustomID      = 100
	maxLabel         = 80
	buttonsPerRow    = 5
	maxRows          = 5
	interactionLimit = 3 * time.Second
)

// Config configures an [Adapter].
type Config struct {
	// Token is the bot token (required), with or without the "Bot "
	// prefix.
	Token string
	// APIURL is Discord's base URL. Defaults to "https://discord.com";
	// a trailing "/", "/api" or "/api/v<n>" is accepted and dropped, and
	// anything else with a path, query or fragment is refused by New
	// (baseurl.go). Any other host (a fake on loopback) makes the HTTP
	// client rewrite the scheme and host of every request discordgo makes
	// to discord.com; the gateway's URL comes from GET /api/v9/gateway.
	APIURL string
	// HTTPClient makes the REST calls. Defaults to a client with a 20 s
	// timeout. It is copied, not changed. The gateway websocket is dialled
	// separately, through the proxy named by the environment (as Go's
	// default transport does) and closed when Connect's context ends.
	HTTPClient *http.Client
	// Logger gets what the adapter cannot return: lost messages, failed
	// interaction answers, reconnects. Defaults to slog.Default().
	Logger *slog.Logger
	// Intents are the gateway intents. Defaults to [DefaultIntents].
	Intents discordgo.Intent
	// PressTimeout is how long sink.Press may take before the press is
	// answered with an error, within Discord's 3 s for an answer.
	// Defaults to 2 s.
	PressTimeout time.Duration
	// ReceiveAttempts is how many times a message is handed to
	// sink.Receive before it is logged as lost (Discord never sends it
	// again). Defaults to 3.
	ReceiveAttempts int
	// ReceiveBackoff is the wait before the second attempt, doubled for
	// each further one. Defaults to 250 ms.
	ReceiveBackoff time.Duration
	// ShutdownGrace is how long messages already read from the socket are
	// still handed to Receive after Connect's context ends. Defaults to
	// 5 s.
	ShutdownGrace time.Duration
	// ReconnectMaxWait caps the wait between attempts to reconnect the
	// gateway after it failed or dropped, and between retries of the
	// slash command registration: the first wait is 1 s (less up to 20%
	// jitter), doubling up to this ceiling. Defaults to 1 minute.
	ReconnectMaxWait time.Duration
	// PublicKey is the application's public key from Discord's developer
	// portal (64 hex characters, DISCORD_PUBLIC_KEY). When set, Handler
	// serves Discord's HTTP interactions endpoint, whose requests are
	// signed with it (see interactions.go); empty leaves Handler nil.
	PublicKey string
	// DeferAfter is how long the interactions endpoint waits for a press
	// or command to be decided before answering "deferred" and sending the
	// answer later through the interaction's webhook. Defaults to 2 s,
	// within Discord's 3 s.
	DeferAfter time.Duration
	// DeferredTimeout is how long a press or command that arrived over
	// HTTP may take in all, its answer deferred; the interaction's token
	// lasts 15 minutes. Defaults to 10 s.
	DeferredTimeout time.Duration
	// Now is the clock a signed interaction's X-Signature-Timestamp is
	// held against (interactions.go). Defaults to time.Now.
	Now func() time.Time
}

// Adapter is the Discord adapter; it implements [chat.Adapter].
type Adapter struct {
	cfg Config
	// deferred counts the HTTP interactions' work that outlives the
	// request (Drain waits for it).
	deferred inflight.Group
	token    string // "Bot <token>"
	client   *http.Client
	log      *slog.Logger
	// rest makes every REST call, so that one discordgo rate limiter
	// sees all of them; gateway sessions are made per Connect.
	rest *discordgo.Session

	// publicKey verifies the signed HTTP interactions; nil without
	// Config.PublicKey.
	publicKey ed25519.PublicKey

	connected   atomic.Bool
	warnContent sync.Once
}

var _ chat.Adapter = (*Adapter)(nil)

// New checks cfg, fills in its defaults and makes an adapter. It does
// not connect to anything.
func New(cfg Config) (*Adapter, error) {
	token := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(cfg.Token), "Bot "))
	if token == "" {
		return nil, errors.New("discord: Config.Token is required")
	}
	target, err := normalizeAPIURL(cfg.APIURL)
	if err != nil {
		return nil, err
	}
	cfg.APIURL = target.String()
	publicKey, err := parsePublicKey(cfg.PublicKey)
	if err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Intents == 0 {
		cfg.Intents = DefaultIntents
	}
	if cfg.PressTimeout <= 0 {
		cfg.PressTimeout = 2 * time.Second
	}
	if cfg.ReceiveAttempts <= 0 {
		cfg.ReceiveAttempts = 3
	}
	if cfg.ReceiveBackoff <= 0 {
		cfg.ReceiveBackoff = 250 * time.Millisecond
	}
	if cfg.ShutdownGrace <= 0 {
		cfg.ShutdownGrace = 5 * time.Second
	}
	if cfg.ReconnectMaxWait <= 0 {
		cfg.ReconnectMaxWait = time.Minute
	}
	if cfg.DeferAfter <= 0 {
		cfg.DeferAfter = 2 * time.Second
	}
	if cfg.DeferredTimeout <= 0 {
		cfg.DeferredTimeout = 10 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	client := &http.Client{Timeout: 20 * time.Second}
	if cfg.HTTPClient != nil {
		c := *cfg.HTTPClient
		client = &c
	}
	if cfg.APIURL != DefaultAPIURL {
		base := client.Transport
		if base == nil {
			base = http.DefaultTransport
		}
		client.Transport = &rewriteTransport{base: base, target: target}
	}
	a := &Adapter{cfg: cfg, token: "Bot " + token, client: client, log: cfg.Logger.With("platform", gh.PlatformDiscord), publicKey: publicKey}
	a.rest = a.newSession()
	return a, nil
}

// newSession makes a discordgo session configured for Gatehouse: no
// sleeping retries (the dispatcher reschedules), no reconnect loop of
// its own (Connect reconnects, bounded by its context), events handled
// on the reading goroutine (so Connect knows when they are done), and
// discordgo's own logging off (the adapter logs what matters).
func (a *Adapter) newSession() *discordgo.Session {
	s, _ := discordgo.New(a.token) // New never fails
	s.Client = a.client
	s.MaxRestRetries = 0
	s.ShouldRetryOnRateLimit = false
	s.ShouldReconnectOnError = false
	s.ShouldReconnectVoiceOnSessionError = false
	s.SyncEvents = true
	s.StateEnabled = false
	s.LogLevel = -1
	s.Identify.Intents = a.cfg.Intents
	return s
}

// rewriteTransport sends requests for discord.com to another base URL.
type rewriteTransport struct {
	base   http.RoundTripper
	target *url.URL
}

func (t *rewriteTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Host != "discord.com" {
		return t.base.RoundTrip(r)
	}
	r2 := r.Clone(r.Context())
	r2.URL.Scheme = t.target.Scheme
	r2.URL.Host = t.target.Host
	r2.URL.Path = strings.TrimRight(t.target.Path, "/") + r.URL.Path
	r2.URL.RawPath = ""
	r2.Host = ""
	return t.base.RoundTrip(r2)
}

// Platform is "discord".
func (a *Adapter) Platform() string { return gh.PlatformDiscord }

// Limits are Discord's: 2000 characters, 50 requests/s per bot, and
// 200 ms between sends to a channel; the per-channel bucket (about 5
// per 5 s) comes from Discord's headers (see the package doc).
func (a *Adapter) Limits() chat.Limits {
	return chat.Limits{MaxText: maxText, PerChat: 200 * time.Millisecond, PerSecond: 50}
}

var mentionEscaper = strings.NewReplacer("@everyone", "@\u200beveryone", "@here", "@\u200bhere")

// Format keeps Markdown (Discord renders it, and answers are Markdown)
// and neutralises @everyone and @here (see the package doc).
func (a *Adapter) Format(text string) string { return mentionEscaper.Replace(text) }

// AsksReasons is true: a card has a "Deny with reason…" button, whose
// press is answered with a modal asking for the reason; its submission is
// the denial.
func (a *Adapter) AsksReasons() bool { return true }
