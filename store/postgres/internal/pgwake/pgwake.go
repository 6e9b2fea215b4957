package pgwake

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Listen holds one connection of pool in LISTEN on channel and calls wake
// for every notification. It reconnects after a failure, and calls wake
// when it does, since notifications sent meanwhile were missed. It returns
// when ctx ends.
func Listen(ctx context.Context, pool *pgxpool.Pool, channel string, log *slog.Logger, wake func()) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := listenOnce(ctx, pool, channel, wake)
		if ctx.Err() != nil {
			return
		}
		log.Warn("postgres wake-up listener lost; reconnecting", "err", err, "in", backoff)
		wake()
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

func listenOnce(ctx context.Context, pool *pgxpool.Pool, channel string, wake func()) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{channel}.Sanitize()); err != nil {
		conn.Conn().Close(ctx)
		return err
	}
	for {
		_, err := conn.Conn().WaitForNotification(ctx)
		if err != nil {
			// The connection's state is unknown (mid-wait); never hand it
			// back to the pool.
			conn.Conn().Close(context.Background())
			return err
		}
		wake()
	}
}
