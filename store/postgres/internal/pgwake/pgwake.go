package pgwake

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Listen holds one connection of pool in LISTEN on channel and calls wake
// for every notification but those whose payload is self: this process's
// own, which woke it locally when it committed (a second wake-up would
// only send a worker to find nothing). It reconnects after a failure, and
// calls wake when it does, since notifications sent meanwhile were missed.
// It returns when ctx ends.
func Listen(ctx context.Context, pool *pgxpool.Pool, channel, self string, log *slog.Logger, wake func()) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := listenOnce(ctx, pool, channel, self, wake)
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

func listenOnce(ctx context.Context, pool *pgxpool.Pool, channel, self string, wake func()) error {
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
		n, err := conn.Conn().WaitForNotification(ctx)
		if err != nil {
			// The connection's state is unknown (mid-wait); never hand it
			// back to the pool.
			conn.Conn().Close(context.Background())
			return err
		}
		if self != "" && n.Payload == self {
			continue
		}
		wake()
	}
}
