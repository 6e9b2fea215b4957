package postgres

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Pool settings for a database that can fail over (a primary lost, a
// standby promoted behind a multi-host URL with
// target_session_attrs=read-write). A URL's own connect_timeout and
// pool_health_check_period win.
const (
	// connectTimeout bounds one connection attempt: a host that is gone
	// costs this long, not the kernel's TCP timeout, before pgx tries the
	// URL's next host.
	connectTimeout = 5 * time.Second
	// healthCheckPeriod is how often idle connections are checked, so
	// connections to a lost primary leave the pool without a query
	// having to fail on each.
	healthCheckPeriod = 5 * time.Second
)

// tuneForFailover sets the pool settings above unless the URL set them.
func tuneForFailover(pc *pgxpool.Config, url string) {
	if pc.ConnConfig.ConnectTimeout == 0 && !strings.Contains(url, "connect_timeout") {
		pc.ConnConfig.ConnectTimeout = connectTimeout
	}
	if !strings.Contains(url, "pool_health_check_period") {
		pc.HealthCheckPeriod = healthCheckPeriod
	}
}

// lostServer reports whether err says the connection's server can no
// longer take this store's writes: the connection broke, the server is
// shutting down or in recovery, or it is a standby now (a demoted
// primary answers read-only). Such a connection is closed rather than
// handed back to the pool.
func lostServer(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case pgErr.Code == "25006": // read_only_sql_transaction: a standby now
			return true
		case strings.HasPrefix(pgErr.Code, "57P"): // admin/crash shutdown, cannot connect now
			return true
		case strings.HasPrefix(pgErr.Code, "08"): // connection exception
			return true
		}
		return false
	}
	var netErr net.Error
	var connectErr *pgconn.ConnectError
	return errors.As(err, &netErr) || errors.As(err, &connectErr) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// outageLog says once that the database became unreachable and once that
// it is back (and on which server), however many queries failed between.
type outageLog struct {
	log *slog.Logger

	mu     sync.Mutex
	since  time.Time // zero while the database answers
	server string    // the server the last good connection reached
}

// failed notes a database error that made an operation unavailable.
func (o *outageLog) failed(err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.since.IsZero() {
		return
	}
	o.since = time.Now()
	o.log.Warn("database unreachable: writes wait or answer 503 until it is back", "server", o.server, "err", err)
}

// ok notes an operation that worked over conn.
func (o *outageLog) ok(conn *pgxpool.Conn) {
	o.mu.Lock()
	down := !o.since.IsZero()
	o.mu.Unlock()
	if !down && o.server != "" {
		return
	}
	server := ""
	if pc := conn.Conn().PgConn(); pc != nil {
		if nc := pc.Conn(); nc != nil {
			server = nc.RemoteAddr().String()
		}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.since.IsZero() {
		o.server = server
		return
	}
	took := time.Since(o.since).Round(time.Millisecond)
	if server != o.server && o.server != "" {
		o.log.Warn("database failed over: writes go to the new primary", "from", o.server, "to", server, "after", took)
	} else {
		o.log.Info("database reachable again", "server", server, "after", took)
	}
	o.since, o.server = time.Time{}, server
}
