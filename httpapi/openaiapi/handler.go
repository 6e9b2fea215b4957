package openaiapi

import (
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/httpapi/reqbody"
	"github.com/gatehouse/gatehouse/kernel"
)

// SessionHeader names the session a request's conversation maps to.
const SessionHeader = "X-Gatehouse-Session"

// ModelID is the model the endpoint lists first: the agent, on whatever
// model the gateway is configured with.
const ModelID = "gatehouse"

// Config configures the handler.
type Config struct {
	// Kernel commits the input and reads the log. Required.
	Kernel *kernel.Kernel
	// Tenant is the tenant whose sessions the endpoint serves. Defaults
	// to gatehouse.DefaultTenant.
	Tenant string
	// PublicURL is the web UI's address as people reach it
	// (GATEHOUSE_PUBLIC_URL): an approval reply links to the card under
	// it. Defaults to empty: the reply says to open the web chat's /admin.
	PublicURL string
	// Selections are model selections ("provider:model") offered besides
	// ModelID by GET /v1/models; a request naming one commits it as the
	// input's selection. Defaults to none.
	Selections []string
	// MaxWait bounds the wait for a turn's outcome; then the reply says
	// what is known and how to go on. Defaults to 5 minutes.
	MaxWait time.Duration
	// MaxBodyBytes bounds a request body. Defaults to 1 MiB (httpapi's).
	MaxBodyBytes int64
	// ReadTimeout is the read deadline the server set on a body, named
	// when a body is cut there. Defaults to 30s (httpapi's).
	ReadTimeout time.Duration
	// WriteTimeout bounds each write of a response, which may come long
	// after the request. Defaults to 60s (httpapi's).
	WriteTimeout time.Duration
	// Heartbeat is how often a stream that waits sends a comment, so
	// proxies keep it open. Defaults to 15s.
	Heartbeat time.Duration
	// Poll is how often a wait re-reads the log without a signal (another
	// replica's commits). Defaults to 2s; 15 × Poll when the kernel relays
	// other replicas' commits (kernel.Follow).
	Poll time.Duration
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.Tenant == "" {
		c.Tenant = gh.DefaultTenant
	}
	if c.MaxWait <= 0 {
		c.MaxWait = 5 * time.Minute
	}
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = 1 << 20
	}
	if c.ReadTimeout <= 0 {
		c.ReadTimeout = 30 * time.Second
	}
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = 60 * time.Second
	}
	if c.Heartbeat <= 0 {
		c.Heartbeat = 15 * time.Second
	}
	if c.Poll <= 0 {
		c.Poll = 2 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Handler serves POST /v1/chat/completions, GET /v1/models and
// GET /v1/models/{id}. It expects the caller to have checked the token.
type Handler struct {
	cfg  Config
	k    *kernel.Kernel
	log  *slog.Logger
	body reqbody.Limits

	// draining is closed by Drain: waits end with what they know.
	drainOnce sync.Once
	draining  chan struct{}

	// delivered is, per session, the final answer this process last
	// answered a request with (its generation id): the same request
	// again after it is a regenerate even when the log alone cannot tell
	// (see isRegenerate). Cleared when it reaches maxDelivered sessions.
	mu        sync.Mutex
	delivered map[string]string
}

// maxDelivered bounds Handler.delivered: forgetting only makes a later
// same-again after an approval or a long wait answer as it is.
const maxDelivered = 10000

// New builds the handler.
func New(cfg Config) *Handler {
	if cfg.Kernel == nil {
		panic("openaiapi: New needs a Kernel")
	}
	cfg = cfg.withDefaults()
	return &Handler{cfg: cfg, k: cfg.Kernel, log: cfg.Logger, draining: make(chan struct{}), delivered: map[string]string{},
		body: reqbody.Limits{MaxBytes: cfg.MaxBodyBytes, ReadTimeout: cfg.ReadTimeout}}
}

// Drain ends every wait in progress, each answered with what it knows and
// how to go on, and makes later ones answer at once: the server's drain
// then does not wait MaxWait for them. The committed input is not lost.
func (h *Handler) Drain() { h.drainOnce.Do(func() { close(h.draining) }) }

// Refuse answers a request the token check refused, in OpenAI's shape.
func (h *Handler) Refuse(w http.ResponseWriter, r *http.Request, err error) {
	h.writeError(w, r, err)
}

// ServeHTTP routes by path and method; a wrong method is 405.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimSuffix(r.URL.Path, "/")
	switch {
	case path == "/v1/chat/completions":
		if h.allow(w, r, http.MethodPost) {
			h.completions(w, r)
		}
	case path == "/v1/models":
		if h.allow(w, r, http.MethodGet, http.MethodHead) {
			h.listModels(w, r)
		}
	case strings.HasPrefix(path, "/v1/models/"):
		if h.allow(w, r, http.MethodGet, http.MethodHead) {
			h.getModel(w, r, strings.TrimPrefix(path, "/v1/models/"))
		}
	default:
		h.writeError(w, r, gh.Errorf(gh.CodeNotFound, "no route %s %s", r.Method, r.URL.Path))
	}
}

// allow reports whether r's method is one of methods, answering 405 when
// it is not.
func (h *Handler) allow(w http.ResponseWriter, r *http.Request, methods ...string) bool {
	if slices.Contains(methods, r.Method) {
		return true
	}
	list := strings.Join(methods, ", ")
	w.Header().Set("Allow", list)
	h.writeStatus(w, r, http.StatusMethodNotAllowed, gh.Errorf(gh.CodeInvalid, "method %s not allowed on %s; allowed: %s", r.Method, r.URL.Path, list))
	return false
}

// deliver records that session's request was answered with the final
// answer gen.
func (h *Handler) deliver(session, gen string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.delivered) >= maxDelivered {
		clear(h.delivered)
	}
	h.delivered[session] = gen
}

// wasDelivered reports whether this process answered a request of session
// with the final answer gen.
func (h *Handler) wasDelivered(session, gen string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return gen != "" && h.delivered[session] == gen
}
