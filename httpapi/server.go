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
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/gateway"
	"github.com/gatehouse/gatehouse/httpapi/apiauth"
	"github.com/gatehouse/gatehouse/httpapi/connlimit"
	"github.com/gatehouse/gatehouse/httpapi/probes"
	"github.com/gatehouse/gatehouse/httpapi/reqbody"
	"github.com/gatehouse/gatehouse/kernel"
	"github.com/gatehouse/gatehouse/models"
	"github.com/gatehouse/gatehouse/store"
)

// Pinger reports whether a dependency answers; the store is one.
type Pinger = probes.Pinger

// Workers is what /livez reads of the worker pool (probes.Workers);
// *supervisor.Supervisor is one.
type Workers = probes.Workers

// Config configures the HTTP server.
type Config struct {
	// Addr is the listen address. Defaults to 127.0.0.1:8080.
	Addr string
	// Ready lists what /readyz checks (the store, Redis).
	Ready []Pinger
	// Workers is the worker pool whose claim loop /livez checks.
	// Defaults to nil: /livez checks the HTTP server only.
	Workers Workers
	// LiveStaleAfter is how old the claim loop's heartbeat may be before
	// /livez fails. Defaults to 5 × Workers.Poll().
	LiveStaleAfter time.Duration
	// Logger defaults to slog.Default().
	Logger *slog.Logger

	// Kernel serves the /v1 API. Required for /v1: without it only the
	// probes (and Web) are served and /v1 answers 404.
	Kernel *kernel.Kernel
	// Store serves the gate reads of GET /v1/gates and GET /v1/gates/{id}
	// and the tenant check of a decision. Required with Kernel: the
	// kernel's store.
	Store store.Store
	// APIToken is required on every /v1 request and on GET /metrics: as
	// "Authorization: Bearer <token>", or as the session cookie a browser
	// gets from GET /login?token=<token> (HttpOnly, SameSite=Strict; a
	// write carried by the cookie must also come from this origin). GET
	// /v1/sessions/{id}/stream also takes it as the access_token query
	// parameter, because browsers' EventSource cannot set headers;
	// elsewhere a query token is refused, since query strings end up in
	// proxy logs. Required with Kernel: there is no API without a
	// credential, on loopback too (cmd generates one when none is
	// configured). Without Kernel it guards /metrics only, and may be
	// empty: /metrics is then open.
	APIToken string
	// MaxBodyBytes bounds a request body. Defaults to 1 MiB.
	MaxBodyBytes int64

	// ReadTimeout bounds reading a request: its headers and its body (API
	// bodies and webhook bodies alike), so a client that trickles bytes
	// cannot hold a connection and its buffer. Defaults to 30s.
	ReadTimeout time.Duration
	// WriteTimeout bounds writing an ordinary response, from the time the
	// request was read. A long-lived response (the SSE stream) is exempt
	// and bounds each of its writes by it instead, so a client that stops
	// reading is dropped. Defaults to 60s.
	WriteTimeout time.Duration
	// IdleTimeout closes a keep-alive connection that carries no request
	// for this long. Defaults to 120s (longer than the 60s idle timeout of
	// common load balancers, so they close first).
	IdleTimeout time.Duration
	// MaxHeaderBytes bounds a request's headers; more gets 431. Defaults
	// to 64 KiB.
	MaxHeaderBytes int
	// MaxConns caps the open connections of the main listener. A
	// connection over it (up to ProbeReserve more) is answered once and
	// closed: probes (/healthz, /livez, /readyz) normally, anything else 503 unavailable
	// with Retry-After; beyond the reserve a connection is closed at once.
	// Lowered at Start when the process's open-file limit (less
	// FileHeadroom) cannot hold it. Defaults to 16384.
	MaxConns int
	// ProbeReserve is how many connections over MaxConns are still
	// accepted, to answer probes and to refuse the rest with a 503.
	// Defaults to 64.
	ProbeReserve int
	// MaxStreams caps open SSE streams; a stream over it gets 503
	// unavailable with Retry-After. Defaults to 8192.
	MaxStreams int
	// FileHeadroom is how many open files Start keeps free of the
	// connection cap for everything else the process opens (database,
	// spool files, model and platform connections). Defaults to 256.
	FileHeadroom int
	// ProbeAddr, when set, is a second listener serving only /healthz,
	// /livez, /readyz and /metrics, with its own small connection cap: probes
	// (a kubelet's) keep answering however full the main listener is.
	// Defaults to empty: probes only on Addr (and its reserve).
	ProbeAddr string
	// Heartbeat is how often an idle SSE stream sends a ": ping" comment,
	// so proxies keep it open and clients notice a dead one. Defaults to 15s.
	Heartbeat time.Duration
	// Poll is how often an SSE stream re-reads the log without a signal
	// when the store cannot relay other replicas' commits to it
	// (kernel.Follow failed). A followed stream reads only every
	// 15 × Poll, in case a signal was lost. Defaults to 2s.
	Poll time.Duration
	// Tenant is the tenant whose sessions the API serves. Defaults to
	// gatehouse.DefaultTenant.
	Tenant string
	// ChatModels are the selections a chat may pick (GATEHOUSE_CHAT_MODELS):
	// the web chat's selector offers them, PUT
	// /v1/sessions/{id}/chat-settings takes no other. Defaults to none.
	ChatModels models.ChatChoices
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
	// Missing lists what is not configured, each with the one message that
	// says what to do (GET /v1/info "missing"; the web chat shows each
	// once). Defaults to none.
	Missing []MissingSetting
	// DevMail is the built-in tour's dev mailbox, listed by GET
	// /v1/devmail for the admin page. Defaults to nil: not enabled.
	DevMail Mailbox
	// Version is reported by GET /v1/info. Defaults to "dev".
	Version string
	// Admin serves the gateway's admin endpoints (/v1/receive-log,
	// /v1/adapters, /v1/outbox). Defaults to nil: no chat platform; those
	// endpoints read the store and /v1/adapters says so.
	Admin Admin
	// People lists, lets in and revokes people (GET/POST /v1/people,
	// DELETE /v1/people/{platform}/{user}) and sets their time zones
	// (PUT/DELETE /v1/people/{platform}/{user}/zone); people.Admin is one.
	// Defaults to nil: those endpoints answer 503.
	People PeopleKeeper
	// NoPlatformHint is what GET /v1/adapters says when Admin is nil: how
	// to turn a platform on (cmd names the settings of the platforms it
	// offers). Defaults to a sentence naming none.
	NoPlatformHint string
	// Hooks are platform webhooks by platform name, served at
	// POST /hooks/<platform> without the API token (each checks its
	// platform's own secret). Defaults to none.
	Hooks map[string]http.Handler
	// Metrics, when set, serves GET /metrics (Prometheus text format)
	// behind the API token on this listener, and with no token on
	// ProbeAddr (a listener for scrapers and kubelets, kept off the
	// public address). Defaults to nil: 404.
	Metrics http.Handler
	// OpenAI, when set, serves the OpenAI-compatible endpoint
	// (POST /v1/chat/completions, GET /v1/models; httpapi/openaiapi) behind
	// the API token. Defaults to nil: those paths answer 404.
	OpenAI OpenAIHandler
	// Knowledge, when set, serves the knowledge library's endpoints
	// (/v1/documents, /v1/collections, /v1/knowledge/recall;
	// httpapi/knowledgeapi) behind the API token. Defaults to nil: 404.
	Knowledge http.Handler
	// Web, when set, serves GET / and GET /assets/ (the embedded web chat,
	// httpapi/web.Handler()). It receives the full request path. Defaults
	// to nil: no web chat.
	Web http.Handler
	// Isolation, when set, is shown by GET /v1/info as "isolation": how
	// shell_exec and each MCP server are isolated. Defaults to nil: not
	// shown.
	Isolation *IsolationInfo
	// Tools lists the tools offered to the agent for GET /v1/tools and
	// the admin page (cmd passes the tool worker's registry). Defaults to
	// nil: an empty list.
	Tools ToolLister
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
	if c.ReadTimeout <= 0 {
		c.ReadTimeout = 30 * time.Second
	}
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = 60 * time.Second
	}
	if c.IdleTimeout <= 0 {
		c.IdleTimeout = 120 * time.Second
	}
	if c.MaxHeaderBytes <= 0 {
		c.MaxHeaderBytes = 64 << 10
	}
	if c.MaxConns <= 0 {
		c.MaxConns = 16384
	}
	if c.ProbeReserve <= 0 {
		c.ProbeReserve = 64
	}
	if c.MaxStreams <= 0 {
		c.MaxStreams = 8192
	}
	if c.FileHeadroom <= 0 {
		c.FileHeadroom = 256
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
	if c.NoPlatformHint == "" {
		c.NoPlatformHint = "No chat platform is configured."
	}
	if c.Version == "" {
		c.Version = "dev"
	}
	return c
}

// Server is the HTTP surface. Start it, Stop it to drain.
type Server struct {
	cfg    Config
	log    *slog.Logger
	k      *kernel.Kernel
	srv    *http.Server
	ln     net.Listener
	probes *probes.Probes
	done   chan error
	// creds checks every /v1 request's credential; nil without a token
	// (no Kernel, no API).
	creds *apiauth.Auth

	// probe is the optional probe-only server on ProbeAddr.
	probe   *http.Server
	probeLn net.Listener
	// capRefused and streamRefused count refusals at the caps; a flood
	// is logged as one warning every few seconds, not a line per refusal.
	capRefused, streamRefused connlimit.RateLog
	// body reads request bodies under MaxBodyBytes and ReadTimeout.
	body reqbody.Limits

	// streams holds the cancel functions of open SSE streams: Stop ends
	// them, since a stream never finishes by itself and Shutdown would
	// wait for it until its deadline.
	mu       sync.Mutex
	streams  map[*int]context.CancelFunc
	stopping bool
}

// New builds a server; nothing listens until Start.
func New(cfg Config) *Server {
	if cfg.Kernel != nil && cfg.Store == nil {
		panic("httpapi: New needs a Store with a Kernel")
	}
	if cfg.Kernel != nil && cfg.APIToken == "" {
		panic("httpapi: New needs an APIToken with a Kernel: the API has no open mode")
	}
	cfg = cfg.withDefaults()
	s := &Server{cfg: cfg, log: cfg.Logger, k: cfg.Kernel, streams: map[*int]context.CancelFunc{},
		body: reqbody.Limits{MaxBytes: cfg.MaxBodyBytes, ReadTimeout: cfg.ReadTimeout}}
	if cfg.APIToken != "" {
		s.creds = apiauth.New(cfg.APIToken)
	}
	s.probes = probes.New(probes.Config{Ready: cfg.Ready, Workers: cfg.Workers, Platforms: platformStates(cfg.Admin), StaleAfter: cfg.LiveStaleAfter, Logger: cfg.Logger,
		WriteError: func(w http.ResponseWriter, r *http.Request, err error) { writeError(w, r, s.log, err) }})
	mux := http.NewServeMux()
	s.probes.Handle(mux)
	if s.k != nil {
		s.routeV1(mux)
	}
	s.hooks(mux)
	if cfg.Metrics != nil {
		if s.creds != nil {
			mux.Handle("GET /metrics", s.auth(cfg.Metrics.ServeHTTP, false))
		} else {
			mux.Handle("GET /metrics", cfg.Metrics)
		}
	}
	if s.creds != nil {
		mux.HandleFunc("GET /login", s.creds.Login)
	}
	if cfg.Web != nil {
		mux.Handle("GET /admin", cfg.Web)
		mux.Handle("GET /{$}", cfg.Web)
		mux.Handle("GET /assets/", cfg.Web)
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, r, s.log, gh.Errorf(gh.CodeNotFound, "no route %s %s", r.Method, r.URL.Path))
	})
	// ReadTimeout and WriteTimeout stay zero on purpose. A server-wide
	// WriteTimeout is one deadline per request, set when the request is
	// read: every SSE stream would fail its first write after that age
	// (checked with Go 1.26). Both deadlines are set per request instead
	// (limits), so a stream can replace them with a bound on each write,
	// and a read deadline set on the connection's background read (which
	// cancels the request's context when it fails) is one we chose.
	s.srv = &http.Server{
		Handler:           s.limits(mux),
		ReadHeaderTimeout: min(10*time.Second, cfg.ReadTimeout),
		IdleTimeout:       cfg.IdleTimeout,
		MaxHeaderBytes:    cfg.MaxHeaderBytes,
		ConnContext:       connlimit.ConnContext,
		ErrorLog:          slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelWarn),
	}
	return s
}

// Route is one method and path pattern the server answers.
type Route struct {
	Method, Path string
	// Open routes need no API token: the probes, the login link, the web
	// pages (their data comes from /v1) and the platform webhooks (each
	// checks its platform's own signature). Everything else needs one.
	Open bool
}

// v1Route is one /v1 route and the method of Server that serves it.
type v1Route struct {
	method, path string
	h            func(*Server, http.ResponseWriter, *http.Request)
}

// v1Routes is the /v1 API; New registers every one behind the token.
var v1Routes = []v1Route{
	{"POST", "/v1/sessions", (*Server).createSession},
	{"GET", "/v1/sessions", (*Server).listSessions},
	{"GET", "/v1/sessions/{id}", (*Server).getSession},
	{"POST", "/v1/sessions/{id}/input", (*Server).input},
	{"GET", "/v1/sessions/{id}/events", (*Server).events},
	{"GET", streamPath, (*Server).stream},
	{"POST", "/v1/sessions/{id}/cancel", (*Server).cancel},
	{"POST", "/v1/sessions/{id}/retry", (*Server).retry},
	{"GET", "/v1/sessions/{id}/chat-settings", (*Server).getChatSettings},
	{"PUT", "/v1/sessions/{id}/chat-settings", (*Server).putChatSettings},
	{"GET", "/v1/info", (*Server).info},
	{"GET", "/v1/tools", (*Server).toolList},
	{"GET", "/v1/usage", (*Server).usage},
	{"GET", "/v1/memory", (*Server).listMemory},
	{"DELETE", "/v1/memory/{id}", (*Server).forgetMemory},
	{"GET", "/v1/gates", (*Server).listGates},
	{"GET", "/v1/gates/{id}", (*Server).getGate},
	{"POST", "/v1/gates/{id}/decision", (*Server).decide},
	{"GET", "/v1/receive-log", (*Server).receiveLog},
	{"GET", "/v1/adapters", (*Server).adapters},
	{"POST", "/v1/adapters/{platform}/check", (*Server).checkAdapter},
	{"GET", "/v1/outbox", (*Server).outbox},
	{"GET", "/v1/admin/stats", (*Server).adminStats},
	{"GET", "/v1/incidents", (*Server).incidents},
	{"GET", "/v1/people", (*Server).listPeople},
	{"POST", "/v1/people", (*Server).letIn},
	{"DELETE", "/v1/people/{platform}/{user}", (*Server).revokePerson},
	{"PUT", "/v1/people/{platform}/{user}/zone", (*Server).setZone},
	{"DELETE", "/v1/people/{platform}/{user}/zone", (*Server).clearZone},
	{"GET", "/v1/grants", (*Server).listGrants},
	{"GET", "/v1/devmail", (*Server).devMail},
	{"DELETE", "/v1/grants/{id}", (*Server).revokeGrant},
}

// openAIPaths and knowledgePaths are served by Config.OpenAI and
// Config.Knowledge, behind the token, with any method (each answers a
// wrong one itself).
var (
	openAIPaths    = []string{"/v1/chat/completions", "/v1/models", "/v1/models/{id}"}
	knowledgePaths = []string{"/v1/documents", "/v1/documents/{id}", "/v1/collections", "/v1/knowledge/recall"}
)

// Routes lists every route a server with every Config part set answers,
// from the same tables New registers them from: a test walks it to prove
// no route but the open ones answers without a credential. Method "" is
// any method.
func Routes() []Route {
	out := []Route{
		{"GET", "/healthz", true}, {"GET", "/livez", true}, {"GET", "/readyz", true},
		{"GET", "/login", true}, {"GET", "/", true}, {"GET", "/admin", true}, {"GET", "/assets/app.js", true},
		{"POST", "/hooks/{platform}", true},
		{"GET", "/metrics", false},
	}
	for _, rt := range v1Routes {
		out = append(out, Route{Method: rt.method, Path: rt.path})
	}
	for _, p := range append(slices.Clone(openAIPaths), knowledgePaths...) {
		out = append(out, Route{Path: p})
	}
	return out
}

// routeV1 registers the /v1 API. Every path also gets a method-less
// pattern answering 405, so a wrong method is not mistaken for an unknown
// route.
func (s *Server) routeV1(mux *http.ServeMux) {
	if o := s.cfg.OpenAI; o != nil {
		for _, p := range openAIPaths {
			mux.Handle(p, s.authWith(o.Refuse, o.ServeHTTP, false))
		}
	}
	for _, p := range knowledgePaths {
		if h := s.cfg.Knowledge; h != nil {
			mux.Handle(p, s.auth(h.ServeHTTP, false))
		}
	}
	allow := map[string][]string{}
	var paths []string
	for _, rt := range v1Routes {
		h := rt.h
		mux.Handle(rt.method+" "+rt.path, s.auth(func(w http.ResponseWriter, r *http.Request) { h(s, w, r) }, rt.path == streamPath))
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
		}, p == streamPath))
	}
}

// stateReporter is an Admin that reports its platforms' states without
// I/O; the gateway is one.
type stateReporter interface {
	States() []gateway.PlatformState
}

// platformStates is what /readyz shows of the platforms: admin's states,
// or nothing when it has none.
func platformStates(admin Admin) func() []probes.Platform {
	sr, ok := admin.(stateReporter)
	if !ok {
		return nil
	}
	return func() []probes.Platform {
		var out []probes.Platform
		for _, s := range sr.States() {
			out = append(out, probes.Platform{Platform: s.Platform, State: s.State, Since: s.Since, LastError: s.LastError})
		}
		return out
	}
}

// Handler returns the routes, for tests that serve them themselves.
func (s *Server) Handler() http.Handler { return s.srv.Handler }

// Start listens and serves in the background. It returns once the address
// is bound, so a failure to bind is reported here.
func (s *Server) Start(ctx context.Context) error {
	s.fitToFileLimit(connlimit.OpenFileLimit())
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", s.cfg.Addr)
	if err != nil {
		return gh.Wrap(gh.CodeUnavailable, err, "listen on %s", s.cfg.Addr)
	}
	if s.cfg.ProbeAddr != "" {
		pln, err := lc.Listen(ctx, "tcp", s.cfg.ProbeAddr)
		if err != nil {
			ln.Close()
			return gh.Wrap(gh.CodeUnavailable, err, "listen for probes on %s", s.cfg.ProbeAddr)
		}
		s.probeLn = pln
		s.probe = s.probeServer()
	}
	s.ln = connlimit.Listener(ln, s.cfg.MaxConns, s.cfg.ProbeReserve, s.log)
	s.done = make(chan error, 1)
	s.log.Info("listening", "addr", ln.Addr().String(), "max_conns", s.cfg.MaxConns, "max_streams", s.cfg.MaxStreams,
		"read_timeout", s.cfg.ReadTimeout, "write_timeout", s.cfg.WriteTimeout, "idle_timeout", s.cfg.IdleTimeout)
	go func() {
		err := s.srv.Serve(s.ln)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		s.done <- err
	}()
	if s.probe != nil {
		s.log.Info("probes listening", "addr", s.probeLn.Addr().String())
		plnCapped := connlimit.Listener(s.probeLn, probeMaxConns, 0, s.log)
		go func() {
			// A failing probe listener is logged, not fatal: the main
			// listener still answers probes.
			if err := s.probe.Serve(plnCapped); err != nil && !errors.Is(err, http.ErrServerClosed) {
				s.log.Error("probe listener failed", "addr", s.cfg.ProbeAddr, "err", err)
			}
		}()
	}
	return nil
}

// ProbeAddr is the bound probe address after Start, or "" without one.
func (s *Server) ProbeAddr() string {
	if s.probeLn == nil {
		return ""
	}
	return s.probeLn.Addr().String()
}

// Addr is the bound address after Start.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Done reports the server's end: nil after Stop, an error if serving failed.
func (s *Server) Done() <-chan error { return s.done }

// Stop drains: /readyz turns 503 so load balancers stop sending, open SSE
// streams end (clients reconnect elsewhere with Last-Event-ID), new
// connections are refused, and requests in flight finish until ctx ends.
func (s *Server) Stop(ctx context.Context) error {
	s.probes.Drain()
	if s.cfg.OpenAI != nil {
		s.cfg.OpenAI.Drain() // its waits answer now, not at MaxWait
	}
	s.mu.Lock()
	s.stopping = true
	for _, cancel := range s.streams {
		cancel()
	}
	s.mu.Unlock()
	if s.probe != nil {
		// Probes answer (readiness 503) until the main server is done.
		defer s.probe.Shutdown(ctx)
	}
	return s.srv.Shutdown(ctx)
}

// errTooManyStreams marks a stream refused at MaxStreams.
var errTooManyStreams = errors.New("too many streams")

// trackStream returns a context for a stream that Stop cancels, and the
// function that releases it. It refuses a stream once Stop began, and
// over MaxStreams (an error wrapping errTooManyStreams).
func (s *Server) trackStream(parent context.Context) (ctx context.Context, release func(), err error) {
	ctx, cancel := context.WithCancel(parent)
	key := new(int)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopping {
		cancel()
		return ctx, func() {}, gh.Errorf(gh.CodeUnavailable, "draining")
	}
	if len(s.streams) >= s.cfg.MaxStreams {
		cancel()
		return ctx, func() {}, gh.Wrap(gh.CodeUnavailable, errTooManyStreams, "this server holds its limit of %d open streams; retry later", s.cfg.MaxStreams)
	}
	s.streams[key] = cancel
	return ctx, func() {
		s.mu.Lock()
		delete(s.streams, key)
		s.mu.Unlock()
		cancel()
	}, nil
}
