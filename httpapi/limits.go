package httpapi

import (
	"bytes"
	"io"
	"net/http"
	"strconv"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/httpapi/connlimit"
	"github.com/gatehouse/gatehouse/httpapi/probes"
)

// Limits of one connection and of the listeners, wired from Config into
// the mechanisms of connlimit. Every request gets a read and a write
// deadline of its own (limits), because a server-wide write timeout would
// cut the SSE stream; a long-lived response trades them for a bound on
// each write (connlimit.LongLived, in stream). The listeners count open connections
// (connlimit.Listener): over MaxConns a connection is answered once and
// closed.

const (
	// streamPath is the one route that takes the token in the query and
	// whose response outlives WriteTimeout.
	streamPath = "/v1/sessions/{id}/stream"
	// retryAfter is the Retry-After of a refusal at a cap, in seconds.
	retryAfter = 5
	// probeMaxConns caps the probe listener's connections; probes are
	// few and short.
	probeMaxConns = 64
)

// limits wraps every route: a connection over the cap is answered by
// overCap; other requests get their deadlines.
func (s *Server) limits(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		connlimit.SetDeadlines(w, r, s.cfg.ReadTimeout, s.cfg.WriteTimeout)
		if connlimit.OverCap(r.Context()) {
			s.overCap(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// hookBody reads a webhook's body, at most MaxBodyBytes, under the
// request's read deadline before the adapter sees it. The adapters read
// whatever the client sends; read here, a body that trickles in is cut
// at ReadTimeout, and a late or oversized one gets the API's typed error
// rather than each adapter's own text.
func (s *Server) hookBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := s.body.ReadAll(w, r)
		if err != nil {
			writeError(w, r, s.log, err)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		next.ServeHTTP(w, r)
	})
}

// overCap answers the one request of a connection over the cap, then
// closes it: probes are answered as usual, so health checks keep working
// while the cap is hit; anything else gets 503 with Retry-After at once
// rather than waiting for a slot.
func (s *Server) overCap(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Connection", "close")
	if s.probes.Answer(w, r) {
		return
	}
	s.refuse(w, &s.capRefused, "connection cap reached: refusing requests over it with 503",
		gh.Errorf(gh.CodeUnavailable, "this server holds its limit of %d open connections; retry later", s.cfg.MaxConns))
}

// refuse answers a refusal at a cap: 503 unavailable with Retry-After. It
// is counted and logged at most every few seconds, because a flood would
// otherwise write a log line per refused request.
func (s *Server) refuse(w http.ResponseWriter, count *connlimit.RateLog, what string, err *gh.Error) {
	count.Warn(s.log, what, "max_conns", s.cfg.MaxConns, "max_streams", s.cfg.MaxStreams)
	w.Header().Set("Retry-After", strconv.Itoa(retryAfter))
	writeJSON(w, statusOf(err.Code), errorBody{Code: err.Code, Message: err.Message})
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
	maxConns, reserve, ok := connlimit.Fit(s.cfg.MaxConns, s.cfg.ProbeReserve, s.cfg.FileHeadroom+probes, limit)
	if ok {
		return
	}
	s.log.Warn("the open-file limit cannot hold the connection cap: lowered the cap (raise the limit with ulimit -n or LimitNOFILE=, or set GATEHOUSE_HTTP_MAX_CONNS)",
		"file_limit", limit, "max_conns", maxConns, "asked", s.cfg.MaxConns, "reserve", reserve, "headroom", s.cfg.FileHeadroom+probes)
	s.cfg.MaxConns, s.cfg.ProbeReserve = maxConns, reserve
}

// probeServer serves only the probes (and metrics) on ProbeAddr.
func (s *Server) probeServer() *http.Server {
	return s.probes.Server(probes.ServerConfig{Metrics: s.cfg.Metrics, ReadTimeout: s.cfg.ReadTimeout,
		WriteTimeout: s.cfg.WriteTimeout, IdleTimeout: s.cfg.IdleTimeout, Logger: s.cfg.Logger})
}
