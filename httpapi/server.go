package httpapi

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	gh "github.com/gatehouse/gatehouse"
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
}

// Server is the HTTP surface. Start it, Stop it to drain.
type Server struct {
	cfg      Config
	log      *slog.Logger
	srv      *http.Server
	ln       net.Listener
	draining atomic.Bool
	done     chan error
}

// New builds a server; nothing listens until Start.
func New(cfg Config) *Server {
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:8080"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	s := &Server{cfg: cfg, log: cfg.Logger}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", s.healthz)
	mux.HandleFunc("GET /readyz", s.readyz)
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

// Stop drains: /readyz turns 503 so load balancers stop sending, new
// connections are refused, and requests in flight finish until ctx ends.
func (s *Server) Stop(ctx context.Context) error {
	s.draining.Store(true)
	return s.srv.Shutdown(ctx)
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
