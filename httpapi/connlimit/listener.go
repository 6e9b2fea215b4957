package connlimit

import (
	"context"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// overCapHold bounds how long a connection over the cap may take to send
// its one request: the reserve must turn over quickly for the probes it
// exists for.
const overCapHold = 5 * time.Second

// Listener wraps ln so that at most max+reserve connections are open.
// Connections over max are marked for OverCap, so the server answers
// their one request quickly; beyond max+reserve a connection is closed
// as soon as it is accepted, which log reports at most every few
// seconds.
func Listener(ln net.Listener, max, reserve int, log *slog.Logger) net.Listener {
	return &capListener{Listener: ln, max: int64(max), reserve: int64(reserve), log: log}
}

// capListener counts the open connections of a listener. Beyond
// max+reserve a connection is closed as soon as it is accepted: answering
// it would take a file and a goroutine more, which is what the cap
// protects.
type capListener struct {
	net.Listener
	max, reserve int64
	open         atomic.Int64
	refused      RateLog
	log          *slog.Logger
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
			l.refused.Warn(l.log, "connection cap and its reserve reached: closing new connections unanswered",
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

// overCapKey marks, in a request's context, a connection accepted over
// the cap.
type overCapKey struct{}

// ConnContext is the http.Server's ConnContext for a Listener: it marks
// the requests of a connection accepted over the cap, for OverCap.
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	if cc, ok := c.(*capConn); ok && cc.over {
		return context.WithValue(ctx, overCapKey{}, true)
	}
	return ctx
}

// OverCap reports whether ctx is a request's on a connection accepted over
// the cap (marked by ConnContext): it is to be answered once and closed.
func OverCap(ctx context.Context) bool { return ctx.Value(overCapKey{}) != nil }
