package httpapi

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/kernel"
)

// Pinger reports whether a dependency answers; the store is one.
type Pinger interface {
	Ping(ctx context.Context) error
}

// Config configures the HTTP server.
type Config struct {
	// Addr is the listen address. Defaults to 127.0.0.1:8080.
	Addr string
	// Ready lists what /readyz checks (the store, later Redis).
	Ready []Pinger
	// Logger defaults to slog.Default().
	Logger *slog.Logger

	// Kernel serves the /v1 API. Required for /v1: without it only the
	// probes (and Web) are served and /v1 answers 404.
	Kernel *kernel.Kernel
	// APIToken, when set, is required on every /v1 request as
	// "Authorization: Bearer <token>" (or the access_token query parameter,
	// for browsers' EventSource, which cannot set headers). Defaults to
	// empty: no authentication. cmd refuses to bind a non-loopback address
	// without one.
	APIToken string
	// MaxBodyBytes bounds a request body. Defaults to 1 MiB.
	MaxBodyBytes int64
	// Heartbeat is how often an idle SSE stream sends a ": ping" comment,
	// so proxies keep it open and clients notice a dead one. Defaults to 15s.
	Heartbeat time.Duration
	// Poll is how often an SSE stream re-reads the log without a signal:
	// commits made by another replica are not signalled in this process.
	// Defaults to 2s.
	Poll time.Duration
	// Tenant is the tenant whose sessions the API serves. Defaults to
	// gatehouse.DefaultTenant.
	Tenant string
	// CheckSelection validates an input's model selection before it is
	// committed. Defaults to nil: any selection is committed.
	CheckSelection func(selection string) error
	// Memory lets people see and remove what is kept about them
	// (GET /v1/memory, DELETE /v1/memory/{id}). Defaults to nil: 503.
	Memory MemoryKeeper
	// Gates decides approval gates (POST /v1/gates/{id}/decision).
	// Defaults to nil: decisions answer 503 unavailable.
	Gates GateDecider
	// Model is the configured model selection, shown by GET /v1/info.
	// Defaults to empty: no model configured.
	Model string
	// ModelHint tells how to configure a model; GET /v1/info returns it
	// when Model is empty, and the web chat shows it. Defaults to empty.
	ModelHint string
	// Version is reported by GET /v1/info. Defaults to "dev".
	Version string
	// Admin serves the gateway's admin endpoints (/v1/receive-log,
	// /v1/adapters, /v1/outbox). Defaults to nil: no chat platform, and
	// those endpoints say so.
	Admin Admin
	// Hooks are platform webhooks by platform name, served at
	// POST /hooks/<platform> without the API token (each checks its
	// platform's own secret). Defaults to none.
	Hooks map[string]http.Handler
	// Metrics, when set, serves GET /metrics (Prometheus text format).
	// Like the probes it needs no token: it holds counts, not content.
	// Defaults to nil: 404.
	Metrics http.Handler
	// Web, when set, serves GET / and GET /assets/ (the embedded web chat,
	// httpapi/web.Handler()). It receives the full request path. Defaults
	// to nil: no web chat.
	Web http.Handler
}

func (c Config) withDefaults() Config {
	if c.Addr == "" {
		c.Addr = "127.0.0.1:8080"
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = 1 << 20
	}
	if c.Heartbeat <= 0 {
		c.Heartbeat = 15 * time.Second
	}
	if c.Poll <= 0 {
		c.Poll = 2 * time.Second
	}
	if c.Tenant == "" {
		c.Tenant = gh.DefaultTenant
	}
	if c.Version == "" {
		c.Version = "dev"
	}
	return c
}

// Server is the HTTP surface. Start it, Stop it to drain.
type Server struct {
	cfg      Config
	log      *slog.Logger
	k        *kernel.Kernel
	srv      *http.Server
	ln       net.Listener
	draining atomic.Bool
	done     chan error

	// streams holds the cancel functions of open SSE streams: Stop ends
	// them, since a stream never finishes by itself and Shutdown would
	// wait for it until its deadline.
	mu       sync.Mutex
	streams  map[*int]context.CancelFunc
	stopping bool
}

// New builds a server; nothing listens until Start.
func New(cfg Config) *Server {
	cfg = cfg.withDefaults()
	s := &Server{cfg: cfg, log: cfg.Logger, k: cfg.Kernel, streams: map[*int]context.CancelFunc{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", s.healthz)
	mux.HandleFunc("GET /readyz", s.readyz)
	if s.k != nil {
		s.routeV1(mux)
	}
	s.hooks(mux)
	if cfg.Metrics != nil {
		mux.Handle("GET /metrics", cfg.Metrics)
	}
	if cfg.Web != nil {
		mux.Handle("GET /admin", cfg.Web)
		mux.Handle("GET /{$}", cfg.Web)
		mux.Handle("GET /assets/", cfg.Web)
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, r, s.log, gh.Errorf(gh.CodeNotFound, "no route %s %s", r.Method, r.URL.Path))
	})
	s.srv = &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelWarn),
	}
	return s
}

// routeV1 registers the /v1 API. Every path also gets a method-less
// pattern answering 405, so a wrong method is not mistaken for an unknown
// route.
func (s *Server) routeV1(mux *http.ServeMux) {
	routes := []struct {
		method, path string
		h            http.HandlerFunc
	}{
		{"POST", "/v1/sessions", s.createSession},
		{"GET", "/v1/sessions", s.listSessions},
		{"GET", "/v1/sessions/{id}", s.getSession},
		{"POST", "/v1/sessions/{id}/input", s.input},
		{"GET", "/v1/sessions/{id}/events", s.events},
		{"GET", "/v1/sessions/{id}/stream", s.stream},
		{"POST", "/v1/sessions/{id}/cancel", s.cancel},
		{"GET", "/v1/info", s.info},
		{"GET", "/v1/usage", s.usage},
		{"GET", "/v1/memory", s.listMemory},
		{"DELETE", "/v1/memory/{id}", s.forgetMemory},
		{"GET", "/v1/gates", s.listGates},
		{"GET", "/v1/gates/{id}", s.getGate},
		{"POST", "/v1/gates/{id}/decision", s.decide},
		{"GET", "/v1/receive-log", s.receiveLog},
		{"GET", "/v1/adapters", s.adapters},
		{"GET", "/v1/outbox", s.outbox},
	}
	allow := map[string][]string{}
	var paths []string
	for _, rt := range routes {
		mux.Handle(rt.method+" "+rt.path, s.auth(rt.h))
		if _, ok := allow[rt.path]; !ok {
			paths = append(paths, rt.path)
		}
		allow[rt.path] = append(allow[rt.path], rt.method)
		if rt.method == "GET" {
			allow[rt.path] = append(allow[rt.path], "HEAD")
		}
	}
	for _, p := range paths {
		methods := allow[p]
		slices.Sort(methods)
		list := strings.Join(methods, ", ")
		mux.Handle(p, s.auth(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Allow", list)
			writeError(w, r, s.log, gh.Wrap(gh.CodeInvalid, errMethodNotAllowed, "method %s not allowed on %s; allowed: %s", r.Method, r.URL.Path, list))
		}))
	}
}

// Handler returns the routes, for tests that serve them themselves.
func (s *Server) Handler() http.Handler { return s.srv.Handler }

// Start listens and serves in the background. It returns once the address
// is bound, so a failure to bind is reported here.
func (s *Server) Start(ctx context.Context) error {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", s.cfg.Addr)
	if err != nil {
		return gh.Wrap(gh.CodeUnavailable, err, "listen on %s", s.cfg.Addr)
	}
	s.ln = ln
	s.done = make(chan error, 1)
	s.log.Info("listening", "addr", ln.Addr().String())
	go func() {
		err := s.srv.Serve(ln)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		s.done <- err
	}()
	return nil
}

// Addr is the bound address after Start.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Done reports the server's end: nil after Stop, an error if serving failed.
func (s *Server) Done() <-chan error { return s.done }

// Stop drains: /readyz turns 503 so load balancers stop sending, open SSE
// streams end (clients reconnect elsewhere with Last-Event-ID), new
// connections are refused, and requests in flight finish until ctx ends.
func (s *Server) Stop(ctx context.Context) error {
	s.draining.Store(true)
	s.mu.Lock()
	s.stopping = true
	for _, cancel := range s.streams {
		cancel()
	}
	s.mu.Unlock()
	return s.srv.Shutdown(ctx)
}

// trackStream returns a context for a stream that Stop cancels, and the
// function that releases it. ok is false once Stop began.
func (s *Server) trackStream(parent context.Context) (ctx context.Context, release func(), ok bool) {
	ctx, cancel := context.WithCancel(parent)
	key := new(int)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopping {
		cancel()
		return ctx, func() {}, false
	}
	s.streams[key] = cancel
	return ctx, func() {
		s.mu.Lock()
		delete(s.streams, key)
		s.mu.Unlock()
		cancel()
	}, true
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	if s.draining.Load() {
		writeError(w, r, s.log, gh.Errorf(gh.CodeUnavailable, "draining"))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
	defer cancel()
	for _, p := range s.cfg.Ready {
		if err := p.Ping(ctx); err != nil {
			writeError(w, r, s.log, err)
			return
		}
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

// info tells a client what this gateway runs: its version and model, and
// how to configure one when there is none (the web chat shows that).
func (s *Server) info(w http.ResponseWriter, r *http.Request) {
	body := map[string]any{"version": s.cfg.Version, "model": s.cfg.Model, "modelConfigured": s.cfg.Model != ""}
	if s.cfg.Model == "" {
		body["hint"] = s.cfg.ModelHint
	}
	writeJSON(w, http.StatusOK, body)
}
