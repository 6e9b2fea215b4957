package probes

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	gh "github.com/gatehouse/gatehouse"
)

// Pinger reports whether a dependency answers; the store is one.
type Pinger interface {
	Ping(ctx context.Context) error
}

// Workers is what /livez reads of the worker pool; *supervisor.Supervisor
// is one.
type Workers interface {
	// Heartbeat is when the claim loop last went round (zero before it
	// started).
	Heartbeat() time.Time
	// Poll is the longest the loop waits between rounds.
	Poll() time.Duration
	// Running is the number of turns in flight.
	Running() int
	// Paused says whether claims are paused (for a reload).
	Paused() bool
}

// Platform is one chat platform's state as /readyz shows it.
type Platform struct {
	Platform  string    `json:"platform"`
	State     string    `json:"state"`
	Since     time.Time `json:"since"`
	LastError string    `json:"lastError,omitempty"`
}

// Readiness is /readyz's answer when ready.
type Readiness struct {
	// Status is "ready".
	Status string `json:"status"`
	// Platforms are the chat platforms' states on this replica. They
	// never make the replica unready: a chat outage must not take
	// replicas out of a load balancer that serves the API and webhooks.
	Platforms []Platform `json:"platforms,omitempty"`
}

// Config configures the probes.
type Config struct {
	// Ready lists what /readyz pings (the store, Redis). Defaults to none.
	Ready []Pinger
	// Workers is the worker pool whose claim loop /livez checks. Defaults
	// to nil: /livez checks the HTTP server only.
	Workers Workers
	// Platforms, when set, lists the chat platforms' states for /readyz
	// to show; it must be cheap (no I/O). Defaults to nil: not shown.
	Platforms func() []Platform
	// StaleAfter is how old the claim loop's heartbeat may be before
	// /livez fails. Defaults to 5 × Workers.Poll().
	StaleAfter time.Duration
	// Timeout bounds the pings of one /readyz. Defaults to 3s.
	Timeout time.Duration
	// WriteError answers a failed ping (the HTTP API's error mapping).
	// Defaults to 503 with {code, message}.
	WriteError func(w http.ResponseWriter, r *http.Request, err error)
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Now defaults to time.Now.
	Now func() time.Time
}

// Probes answers /healthz, /livez and /readyz.
type Probes struct {
	cfg      Config
	pid      int
	draining atomic.Bool
}

// New builds the probes.
func New(cfg Config) *Probes {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 3 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.StaleAfter <= 0 && cfg.Workers != nil {
		cfg.StaleAfter = 5 * cfg.Workers.Poll()
	}
	if cfg.WriteError == nil {
		cfg.WriteError = func(w http.ResponseWriter, r *http.Request, err error) {
			WriteJSON(w, http.StatusServiceUnavailable, map[string]string{"code": string(gh.CodeUnavailable), "message": gh.ErrorMessage(err)})
		}
	}
	return &Probes{cfg: cfg, pid: os.Getpid()}
}

// Drain turns /readyz 503 for good: the server is stopping. /livez and
// /healthz keep answering while it drains.
func (p *Probes) Drain() { p.draining.Store(true) }

// Handle registers GET /healthz, /livez and /readyz on mux.
func (p *Probes) Handle(mux *http.ServeMux) {
	mux.HandleFunc("GET /healthz", p.Healthz)
	mux.HandleFunc("GET /livez", p.Livez)
	mux.HandleFunc("GET /readyz", p.Readyz)
}

// Answer answers r if it is a probe (GET or HEAD of a probe path) and
// reports whether it did: a connection over the server's cap still gets
// its probes answered.
func (p *Probes) Answer(w http.ResponseWriter, r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	switch r.URL.Path {
	case "/healthz":
		p.Healthz(w, r)
	case "/livez":
		p.Livez(w, r)
	case "/readyz":
		p.Readyz(w, r)
	default:
		return false
	}
	return true
}

// Healthz answers 200 while the HTTP server serves.
func (p *Probes) Healthz(w http.ResponseWriter, r *http.Request) {
	WriteJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// Loop is one loop in /livez's answer.
type Loop struct {
	Name string `json:"name"`
	OK   bool   `json:"ok"`
	// Heartbeat and AgeMS: when the loop last went round, and how long
	// ago; StaleAfterMS is the age at which it counts as stopped.
	Heartbeat    *time.Time `json:"heartbeat,omitempty"`
	AgeMS        int64      `json:"ageMs,omitempty"`
	StaleAfterMS int64      `json:"staleAfterMs,omitempty"`
}

// Liveness is /livez's answer.
type Liveness struct {
	// Status is "ok" or "stale".
	Status string `json:"status"`
	// Code and Message are set when stale (code "unavailable").
	Code    gh.Code `json:"code,omitempty"`
	Message string  `json:"message,omitempty"`
	// PID is the answering process: the guard checks it probes its child.
	PID   int    `json:"pid"`
	Loops []Loop `json:"loops"`
	// Running is the turns in flight; Paused, whether claims are paused.
	Running int  `json:"running"`
	Paused  bool `json:"paused"`
}

// Check is /livez's answer, for a caller that wants it without HTTP.
func (p *Probes) Check() Liveness {
	out := Liveness{Status: "ok", PID: p.pid, Loops: []Loop{{Name: "http", OK: true}}}
	if wk := p.cfg.Workers; wk != nil {
		l := Loop{Name: "workers", StaleAfterMS: p.cfg.StaleAfter.Milliseconds()}
		beat := wk.Heartbeat()
		if !beat.IsZero() {
			age := max(p.cfg.Now().Sub(beat), 0)
			l.Heartbeat, l.AgeMS = &beat, age.Milliseconds()
			l.OK = age <= p.cfg.StaleAfter
		}
		if !l.OK {
			out.Status, out.Code = "stale", gh.CodeUnavailable
			if beat.IsZero() {
				out.Message = "workers: the claim loop has not started"
			} else {
				out.Message = fmt.Sprintf("workers: the claim loop has not gone round for %s (stale after %s)",
					time.Duration(l.AgeMS)*time.Millisecond, p.cfg.StaleAfter)
			}
		}
		out.Loops = append(out.Loops, l)
		out.Running, out.Paused = wk.Running(), wk.Paused()
	}
	return out
}

// Livez answers 200 while the process's loops are alive, 503 naming the
// stale one otherwise. It never looks at the store.
func (p *Probes) Livez(w http.ResponseWriter, r *http.Request) {
	l := p.Check()
	status := http.StatusOK
	if l.Status != "ok" {
		status = http.StatusServiceUnavailable
		p.cfg.Logger.Warn("liveness failed", "reason", l.Message)
	}
	WriteJSON(w, status, l)
}

// Readyz answers 200 when the server is not draining and every Ready
// dependency answers a ping, with the chat platforms' states, which do not
// count.
func (p *Probes) Readyz(w http.ResponseWriter, r *http.Request) {
	if p.draining.Load() {
		p.cfg.WriteError(w, r, gh.Errorf(gh.CodeUnavailable, "draining"))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), p.cfg.Timeout)
	defer cancel()
	for _, dep := range p.cfg.Ready {
		if err := dep.Ping(ctx); err != nil {
			p.cfg.WriteError(w, r, err)
			return
		}
	}
	out := Readiness{Status: "ready"}
	if p.cfg.Platforms != nil {
		out.Platforms = p.cfg.Platforms()
	}
	WriteJSON(w, http.StatusOK, out)
}

// WriteJSON answers v as JSON with status.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// ServerConfig configures the probe-only listener's server.
type ServerConfig struct {
	// Metrics, when set, is served at GET /metrics too. Defaults to nil.
	Metrics http.Handler
	// ReadTimeout, WriteTimeout and IdleTimeout are server-wide: nothing
	// on this listener is long-lived. Default to 30s, 60s and 120s.
	ReadTimeout, WriteTimeout, IdleTimeout time.Duration
	// Logger receives the server's own errors. Defaults to slog.Default().
	Logger *slog.Logger
}

// Server is a server for a probe-only listener (a kubelet's): the probes,
// metrics, and 404 for anything else.
func (p *Probes) Server(c ServerConfig) *http.Server {
	if c.ReadTimeout <= 0 {
		c.ReadTimeout = 30 * time.Second
	}
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = 60 * time.Second
	}
	if c.IdleTimeout <= 0 {
		c.IdleTimeout = 120 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	mux := http.NewServeMux()
	p.Handle(mux)
	if c.Metrics != nil {
		mux.Handle("GET /metrics", c.Metrics)
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		WriteJSON(w, http.StatusNotFound, map[string]string{"code": string(gh.CodeNotFound),
			"message": "the probe listener serves only /healthz, /livez, /readyz and /metrics"})
	})
	return &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: min(10*time.Second, c.ReadTimeout),
		ReadTimeout:       c.ReadTimeout,
		WriteTimeout:      c.WriteTimeout,
		IdleTimeout:       c.IdleTimeout,
		MaxHeaderBytes:    16 << 10,
		ErrorLog:          slog.NewLogLogger(c.Logger.Handler(), slog.LevelWarn),
	}
}
