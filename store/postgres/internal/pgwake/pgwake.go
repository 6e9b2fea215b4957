package pgwake

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Listen holds one connection of pool in LISTEN on channels and calls
// notify for every notification, with its channel and payload. It
// reconnects after a failure (a database restarted, a standby promoted)
// and, once it listens again, calls lost: notifications sent meanwhile
// were missed. An outage is logged once when it starts and once when it
// ends, not at every try. It returns when ctx ends.
func Listen(ctx context.Context, pool *pgxpool.Pool, channels []string, log *slog.Logger, notify func(channel, payload string), lost func()) {
	backoff := 100 * time.Millisecond
	var down time.Time // when the listener was lost, zero while it listens
	listening := func() {
		backoff = 100 * time.Millisecond
		if down.IsZero() {
			return
		}
		log.Info("postgres wake-up listener listening again", "after", time.Since(down).Round(time.Millisecond))
		down = time.Time{}
		lost()
	}
	for ctx.Err() == nil {
		err := listenOnce(ctx, pool, channels, notify, listening)
		if ctx.Err() != nil {
			return
		}
		if down.IsZero() {
			down = time.Now()
			log.Warn("postgres wake-up listener lost; reconnecting", "err", err)
		} else {
			log.Debug("postgres wake-up listener still reconnecting", "err", err, "in", backoff)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 2*time.Second)
	}
}

func listenOnce(ctx context.Context, pool *pgxpool.Pool, channels []string, notify func(channel, payload string), listening func()) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	for _, ch := range channels {
		if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{ch}.Sanitize()); err != nil {
			conn.Conn().Close(ctx)
			return err
		}
	}
	listening()
	for {
		n, err := conn.Conn().WaitForNotification(ctx)
		if err != nil {
			// The connection's state is unknown (mid-wait); never hand it
			// back to the pool.
			conn.Conn().Close(context.Background())
			return err
		}
		notify(n.Channel, n.Payload)
	}
}
