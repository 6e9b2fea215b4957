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
// reconnects after a failure, and calls lost when it does, since
// notifications sent meanwhile were missed. It returns when ctx ends.
func Listen(ctx context.Context, pool *pgxpool.Pool, channels []string, log *slog.Logger, notify func(channel, payload string), lost func()) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := listenOnce(ctx, pool, channels, notify)
		if ctx.Err() != nil {
			return
		}
		log.Warn("postgres wake-up listener lost; reconnecting", "err", err, "in", backoff)
		lost()
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

func listenOnce(ctx context.Context, pool *pgxpool.Pool, channels []string, notify func(channel, payload string)) error {
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
