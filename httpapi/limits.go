package httpapi

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	gh "github.com/gatehouse/gatehouse"
)

// Limits of one connection and of the listeners. Every request gets a
// read and a write deadline of its own (limits), because a server-wide
// write timeout would cut the SSE stream; a long-lived response trades
// them for a bound on each write (longLived). The listener counts open connections
// (capped): over MaxConns a connection is answered once and closed.

const (
	// streamPath is the one route that takes the token in the query and
	// whose response outlives WriteTimeout.
	streamPath = "/v1/sessions/{id}/stream"
	// retryAfter is the Retry-After of a refusal at a cap, in seconds.
	retryAfter = 5
	// overCapHold bounds how long a connection over the cap may take to
	// send its one request: the reserve must turn over quickly for the
	// probes it exists for.
	overCapHold = 5 * time.Second
	// probeMaxConns caps the probe listener's connections; probes are
	// few and short.
	probeMaxConns = 64
	// minConns is the least the file-limit fit lowers MaxConns to: below
	// it the gateway could not serve anyway, and saying so in the log is
	// more use than refusing to start.
	minConns = 16
)

// limits wraps every route: a connection over the cap is answered by
// overCap; other requests get their deadlines.
func (s *Server) limits(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.setDeadlines(w, r)
		if r.Context().Value(overCapKey{}) != nil {
			s.overCap(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// setDeadlines gives a request WriteTimeout to be answered and, when it
// has a body, ReadTimeout to deliver it. Once the body is read (at once
// without one) the read deadline becomes the write deadline: Go's server
// then reads the connection in the background to notice a client going
// away, and that read failing at its deadline cancels the request's
// context. So a handler stops when its answer can no longer be written,
// and not while it still can.
func (s *Server) setDeadlines(w http.ResponseWriter, r *http.Request) {
	now := time.Now()
	end := now.Add(s.cfg.WriteTimeout)
	rc := http.NewResponseController(w)
	// Errors mean the writer cannot take deadlines (a test recorder);
	// there is nothing to bound then.
	_ = rc.SetWriteDeadline(end)
	if r.Body == nil || r.Body == http.NoBody {
		_ = rc.SetReadDeadline(end)
		return
	}
	_ = rc.SetReadDeadline(now.Add(s.cfg.ReadTimeout))
	r.Body = &deadlineBody{ReadCloser: r.Body, done: func() { _ = rc.SetReadDeadline(end) }}
}

// deadlineBody calls done once the body has been read to its end.
type deadlineBody struct {
	io.ReadCloser
	once sync.Once
	done func()
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if errors.Is(err, io.EOF) {
		b.once.Do(b.done)
	}
	return n, err
}

// hookBody reads a webhook's body, at most MaxBodyBytes, under the
// request's read deadline before the adapter sees it. The adapters read
// whatever the client sends; read here, a body that trickles in is cut
// at ReadTimeout, and a late or oversized one gets the API's typed error
// rather than each adapter's own text.
func (s *Server) hookBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes))
		if err != nil {
			var tooLarge *http.MaxBytesError
			if errors.As(err, &tooLarge) || isTimeout(err) {
				err = s.bodyError(err)
			} else {
				err = gh.Wrap(gh.CodeInvalid, err, "the body could not be read")
			}
			writeError(w, r, s.log, err)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		next.ServeHTTP(w, r)
	})
}

// isTimeout reports whether err is a deadline passing (a body that did not
// arrive in time).
func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

// longLived readies w for a response that outlives WriteTimeout (the SSE
// stream; any later long-lived response should do the same): it clears
// the request's deadlines and returns a writer that bounds each write by
// WriteTimeout instead, so a client that stops reading is dropped while
// one that reads is never cut. Call it before the first write.
func (s *Server) longLived(w http.ResponseWriter) *boundedWriter {
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Time{})
	_ = rc.SetWriteDeadline(time.Time{})
	return &boundedWriter{w: w, rc: rc, d: s.cfg.WriteTimeout}
}

// boundedWriter writes and flushes a long-lived response, each write
// under a fresh deadline.
type boundedWriter struct {
	w  http.ResponseWriter
	rc *http.ResponseController
	d  time.Duration
}

// arm sets the deadline for the next write. Deferred at the end of the
// handler too, so the server's own last write (the end of the chunked
// body) has one that has not passed.
func (b *boundedWriter) arm() { _ = b.rc.SetWriteDeadline(time.Now().Add(b.d)) }

func (b *boundedWriter) Write(p []byte) (int, error) {
	b.arm()
	return b.w.Write(p)
}

func (b *boundedWriter) Flush() error {
	b.arm()
	return b.rc.Flush()
}

// overCapKey marks, in a request's context, a connection accepted over
// MaxConns.
type overCapKey struct{}

// markOverCap is the servers' ConnContext.
func markOverCap(ctx context.Context, c net.Conn) context.Context {
	if cc, ok := c.(*capConn); ok && cc.over {
		return context.WithValue(ctx, overCapKey{}, true)
	}
	return ctx
}

// overCap answers the one request of a connection over the cap, then
// closes it: probes are answered as usual, so health checks keep working
// while the cap is hit; anything else gets 503 with Retry-After at once
// rather than waiting for a slot.
func (s *Server) overCap(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Connection", "close")
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		switch r.URL.Path {
		case "/healthz":
			s.healthz(w, r)
			return
		case "/readyz":
			s.readyz(w, r)
			return
		}
	}
	s.refuse(w, &s.capRefused, "connection cap reached: refusing requests over it with 503",
		gh.Errorf(gh.CodeUnavailable, "this server holds its limit of %d open connections; retry later", s.cfg.MaxConns))
}

// refuse answers a refusal at a cap: 503 unavailable with Retry-After. It
// is counted and logged at most every few seconds, because a flood would
// otherwise write a log line per refused request.
func (s *Server) refuse(w http.ResponseWriter, count *rateLog, what string, err *gh.Error) {
	count.warn(s.log, what, "max_conns", s.cfg.MaxConns, "max_streams", s.cfg.MaxStreams)
	w.Header().Set("Retry-After", strconv.Itoa(retryAfter))
	writeJSON(w, statusOf(err.Code), errorBody{Code: err.Code, Message: err.Message})
}

// rateLog logs a repeated event at most once per interval, with how many
// happened since the last line.
type rateLog struct {
	last atomic.Int64 // unix nanoseconds of the last line
	n    atomic.Int64
}

const rateLogEvery = 10 * time.Second

func (l *rateLog) warn(log *slog.Logger, msg string, args ...any) {
	l.n.Add(1)
	now := time.Now().UnixNano()
	last := l.last.Load()
	if now-last < int64(rateLogEvery) || !l.last.CompareAndSwap(last, now) {
		return
	}
	log.Warn(msg, append(args, "count", l.n.Swap(0), "per", rateLogEvery)...)
}

// capped wraps ln so that at most max+reserve connections are open; the
// ones over max are marked for overCap.
func (s *Server) capped(ln net.Listener, max, reserve int) net.Listener {
	return &capListener{Listener: ln, max: int64(max), reserve: int64(reserve), s: s}
}

// capListener counts the open connections of a listener. Beyond
// max+reserve a connection is closed as soon as it is accepted: answering
// it would take a file and a goroutine more, which is what the cap
// protects.
type capListener struct {
	net.Listener
	max, reserve int64
	open         atomic.Int64
	refused      rateLog
	s            *Server
}

func (l *capListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		n := l.open.Add(1)
		if n > l.max+l.reserve {
			l.open.Add(-1)
			_ = c.Close()
			l.refused.warn(l.s.log, "connection cap and its reserve reached: closing new connections unanswered",
				"addr", l.Listener.Addr().String(), "max_conns", l.max, "reserve", l.reserve)
			continue
		}
		cc := &capConn{Conn: c, l: l}
		if n > l.max {
			cc.over = true
			cc.until = time.Now().Add(overCapHold)
			_ = c.SetReadDeadline(cc.until)
		}
		return cc, nil
	}
}

// capConn is a counted connection: closing it frees its slot.
type capConn struct {
	net.Conn
	l    *capListener
	once sync.Once
	// over marks a connection accepted over the cap; its reads never get
	// a deadline later than until, whatever the server asks for.
	over  bool
	until time.Time
}

func (c *capConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.open.Add(-1) })
	return err
}

func (c *capConn) clamp(t time.Time) time.Time {
	if c.over && (t.IsZero() || t.After(c.until)) {
		return c.until
	}
	return t
}

func (c *capConn) SetReadDeadline(t time.Time) error { return c.Conn.SetReadDeadline(c.clamp(t)) }

func (c *capConn) SetDeadline(t time.Time) error {
	if err := c.Conn.SetWriteDeadline(t); err != nil {
		return err
	}
	return c.Conn.SetReadDeadline(c.clamp(t))
}

// fitToFileLimit lowers MaxConns (and, if need be, ProbeReserve) so that
// the connections, FileHeadroom and the probe listener fit under limit,
// the process's open-file limit (0: unknown, nothing to fit). Without it
// a flood runs the process out of files, and then the database, the
// spool and every new request fail with "too many open files".
func (s *Server) fitToFileLimit(limit uint64) {
	probes := 0
	if s.cfg.ProbeAddr != "" {
		probes = probeMaxConns
	}
	maxConns, reserve, ok := fitConns(s.cfg.MaxConns, s.cfg.ProbeReserve, s.cfg.FileHeadroom+probes, limit)
	if ok {
		return
	}
	s.log.Warn("the open-file limit cannot hold the connection cap: lowered the cap (raise the limit with ulimit -n or LimitNOFILE=, or set GATEHOUSE_HTTP_MAX_CONNS)",
		"file_limit", limit, "max_conns", maxConns, "asked", s.cfg.MaxConns, "reserve", reserve, "headroom", s.cfg.FileHeadroom+probes)
	s.cfg.MaxConns, s.cfg.ProbeReserve = maxConns, reserve
}

// fitConns returns the connection cap and reserve that fit under limit
// open files with headroom kept free; ok is true when they already fit.
func fitConns(maxConns, reserve, headroom int, limit uint64) (int, int, bool) {
	need := uint64(maxConns) + uint64(reserve) + uint64(headroom)
	if limit == 0 || need <= limit {
		return maxConns, reserve, true
	}
	budget := int64(limit) - int64(headroom)
	// The reserve takes at most a quarter of what is left, so most of the
	// files still serve requests.
	r := min(int64(reserve), max(budget/4, 1))
	m := max(budget-r, minConns)
	return int(min(m, int64(maxConns))), int(r), false
}

// probeServer serves only the probes (and metrics) on ProbeAddr, with
// server-wide timeouts: nothing there is long-lived.
func (s *Server) probeServer() *http.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", s.healthz)
	mux.HandleFunc("GET /readyz", s.readyz)
	if s.cfg.Metrics != nil {
		mux.Handle("GET /metrics", s.cfg.Metrics)
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, r, s.log, gh.Errorf(gh.CodeNotFound, "the probe listener serves only /healthz, /readyz and /metrics"))
	})
	return &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: min(10*time.Second, s.cfg.ReadTimeout),
		ReadTimeout:       s.cfg.ReadTimeout,
		WriteTimeout:      s.cfg.WriteTimeout,
		IdleTimeout:       s.cfg.IdleTimeout,
		MaxHeaderBytes:    16 << 10,
		ErrorLog:          slog.NewLogLogger(s.cfg.Logger.Handler(), slog.LevelWarn),
	}
}
