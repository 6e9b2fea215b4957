package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/migrations"
	"github.com/gatehouse/gatehouse/store"
	"github.com/gatehouse/gatehouse/store/postgres/internal/pgrelay"
	"github.com/gatehouse/gatehouse/store/postgres/internal/pgtx"
	"github.com/gatehouse/gatehouse/store/postgres/internal/pgwake"
)

// Config configures the Postgres store.
type Config struct {
	// URL is the connection string (postgres://user:pass@host:port/db?…).
	// Required. A search_path parameter selects a schema.
	URL string
	// MaxConns bounds the connection pool. Defaults to 40.
	MaxConns int32
	// Channel is the LISTEN/NOTIFY channel for wake-ups. Defaults to
	// "gatehouse_wake"; replicas of one deployment must share it. Commits
	// relayed to other replicas' streams use Channel + "_ev".
	Channel string
	// Logger receives reconnect warnings of the listener. Defaults to
	// slog.Default().
	Logger *slog.Logger
	// Tracer, when set, sees the store's statements: it becomes the
	// ConnConfig.Tracer of every connection of the pool, the wake-up
	// listener's (its LISTEN) and the migrations' included. A Tracer that
	// also implements pgx.BatchTracer sees the statements sent in a
	// pipeline too (a transaction's BEGIN travels with its first
	// statement, COMMIT with the statements deferred to it). For
	// observability and benchmarks. Optional; nil by default (no tracing).
	Tracer pgx.QueryTracer
}

// Store is the Postgres backend.
type Store struct {
	// executor, on the pool, gives the Store its reads and the writes that
	// are one statement (or need no atomicity across theirs): each runs
	// in its own implicit transaction.
	executor
	pool    *pgxpool.Pool
	cfg     Config
	wake    store.Broadcast
	relay   *pgrelay.Relay
	outage  outageLog
	stop    context.CancelFunc
	stopped chan struct{}
}

var _ store.Store = (*Store)(nil)

// Open connects, applies pending migrations (under an advisory lock, so
// replicas starting together apply them once) and starts listening for
// wake-ups.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.URL == "" {
		return nil, gh.Errorf(gh.CodeInvalid, "postgres: no database URL")
	}
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = 40
	}
	if cfg.Channel == "" {
		cfg.Channel = "gatehouse_wake"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	pc, err := pgxpool.ParseConfig(cfg.URL)
	if err != nil {
		return nil, gh.Wrap(gh.CodeInvalid, err, "postgres: bad database URL")
	}
	pc.MaxConns = cfg.MaxConns
	tuneForFailover(pc, cfg.URL)
	if cfg.Tracer != nil {
		pc.ConnConfig.Tracer = cfg.Tracer
	}
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, gh.Wrap(gh.CodeUnavailable, err, "postgres: connect")
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, gh.Wrap(gh.CodeUnavailable, err, "postgres: connect")
	}
	db := stdlib.OpenDBFromPool(pool)
	_, err = migrations.Up(ctx, db, "postgres")
	db.Close()
	if err != nil {
		pool.Close()
		return nil, gh.Wrap(gh.CodeUnavailable, err, "postgres: migrate")
	}
	lctx, cancel := context.WithCancel(context.Background())
	self := notifyToken()
	events := cfg.Channel + "_ev"
	s := &Store{executor: executor{q: pool, channel: cfg.Channel, events: events, self: self}, pool: pool, cfg: cfg,
		relay: pgrelay.New(pool, self, cfg.Logger), outage: outageLog{log: cfg.Logger}, stop: cancel, stopped: make(chan struct{})}
	var loops sync.WaitGroup
	loops.Go(func() { s.relay.Run(lctx) })
	loops.Go(func() {
		pgwake.Listen(lctx, pool, []string{cfg.Channel, events}, cfg.Logger, func(channel, payload string) {
			switch {
			case channel == events:
				s.relay.Deliver(payload)
			case payload != self:
				// Not this process's own: that woke it locally when it
				// committed, and a second wake-up would only send a
				// worker to find nothing.
				s.wake.Signal()
			}
		}, func() {
			s.wake.Signal()
			s.relay.Lost()
		})
	})
	go func() { loops.Wait(); close(s.stopped) }()
	return s, nil
}

// Follow implements store.Relay: other replicas' commits to the session
// are NOTIFYed here while a stream of this replica follows it.
func (s *Store) Follow(ctx context.Context, sessionID string) (func(), error) {
	release, err := s.relay.Follow(ctx, sessionID)
	return release, dbErr(err, "follow session")
}

// OnRemote implements store.Relay.
func (s *Store) OnRemote(h func(sessionID string, events []gh.Event, complete bool)) {
	s.relay.OnRemote(h)
}

// Dialect implements store.Store.
func (s *Store) Dialect() string { return "postgres" }

// Pool is the connection pool, for benchmarks that compare the kernel with
// a bare insert over the same connections.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Ping implements store.Store.
func (s *Store) Ping(ctx context.Context) error {
	// A write check, not a ping: a standby answers a ping, and a replica
	// whose connections reach only a standby cannot take a turn.
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		if ctx.Err() == nil {
			s.outage.failed(err)
		}
		return gh.Wrap(gh.CodeUnavailable, err, "postgres: ping")
	}
	defer conn.Release()
	var readOnly bool
	if err := conn.QueryRow(ctx, "SELECT pg_is_in_recovery()").Scan(&readOnly); err != nil {
		s.lost(conn, gh.Wrap(gh.CodeUnavailable, err, "postgres: ping"))
		return gh.Wrap(gh.CodeUnavailable, err, "postgres: ping")
	}
	if readOnly {
		err := gh.Errorf(gh.CodeUnavailable, "postgres: the server is a standby (in recovery): no writes until a primary answers")
		s.drop(conn, err)
		return err
	}
	s.outage.ok(conn)
	return nil
}

// Close implements store.Store.
func (s *Store) Close() error {
	s.stop()
	<-s.stopped
	s.pool.Close()
	return nil
}

// WakeC implements store.Store.
func (s *Store) WakeC() <-chan struct{} { return s.wake.WaitC() }

// InTx implements store.Store.
func (s *Store) InTx(ctx context.Context, fn func(ctx context.Context, tx store.Tx) error) error {
	const maxTries = 8
	var err error
	for try := range maxTries {
		var woke bool
		woke, err = s.inTxOnce(ctx, fn)
		if err == nil {
			if woke {
				s.wake.Signal()
			}
			return nil
		}
		if !retryable(err) || ctx.Err() != nil {
			return err
		}
		time.Sleep(time.Duration(try+1) * 2 * time.Millisecond)
	}
	return err
}

func (s *Store) inTxOnce(ctx context.Context, fn func(ctx context.Context, tx store.Tx) error) (bool, error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		if ctx.Err() == nil {
			s.outage.failed(err)
		}
		return false, dbErr(err, "begin")
	}
	defer conn.Release()
	c := pgtx.New(conn)
	t := &tx{executor: executor{q: c, channel: s.cfg.Channel, self: s.self}, conn: c}
	if err := fn(ctx, t); err != nil {
		c.Rollback()
		s.lost(conn, err)
		return false, err
	}
	if t.wake && !t.notified {
		// Postgres delivers it at commit, and only if the commit succeeds.
		c.AtCommit(`SELECT pg_notify($1, $2)`, s.cfg.Channel, s.self)
	}
	for _, session := range t.relayed.order {
		// Sent only when another replica follows the session.
		c.AtCommit(pgrelay.NotifySQL, s.events, pgrelay.Payload(s.self, session, t.relayed.events[session]), session, s.self)
	}
	if err := c.Commit(ctx); err != nil {
		c.Rollback()
		s.lost(conn, err)
		return false, dbErr(err, "commit")
	}
	s.outage.ok(conn)
	return t.wake, nil
}

// lost closes conn when err says its server is gone or can no longer
// write (lostServer), so the pool forgets it, and logs the outage once.
func (s *Store) lost(conn *pgxpool.Conn, err error) {
	if lostServer(err) {
		s.drop(conn, err)
	}
}

// drop closes conn, whose server cannot take this store's writes, and
// notes the outage.
func (s *Store) drop(conn *pgxpool.Conn, err error) {
	s.outage.failed(err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = conn.Conn().Close(ctx)
}

func retryable(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return false
	}
	switch pgErr.Code {
	case "40001", "40P01": // serialization failure, deadlock detected
		return true
	case "23505": // unique violation: a racing twin committed first
		return pgErr.ConstraintName == "events_idem_key" || pgErr.ConstraintName == "runs_one_active"
	}
	return false
}

// auto is a tx on the pool for Append, whose wake-up state is per call.
func (s *Store) auto() *tx { return &tx{executor: s.executor} }

// Append implements store.Writer: one statement, one round trip.
func (s *Store) Append(ctx context.Context, p store.AppendParams) (store.AppendResult, error) {
	res, err := s.auto().Append(ctx, p)
	if err != nil && retryable(err) {
		// A racing commit of the same key won: return what it committed.
		res, err = s.auto().Append(ctx, p)
	}
	if err == nil && res.Woke {
		s.wake.Signal()
	}
	return res, err
}

// dbErr classifies a database error. Retryable conflicts keep their
// *pgconn.PgError reachable so InTx can see them.
func dbErr(err error, what string) error {
	if err == nil {
		return nil
	}
	var ge *gh.Error
	if errors.As(err, &ge) {
		return err
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" && pgErr.ConstraintName == "receive_log_update" {
		return gh.Wrap(gh.CodeConflict, err, "postgres: %s: the update was received before", what)
	}
	if errors.As(err, &pgErr) && strings.HasPrefix(pgErr.Code, "22") {
		return gh.Wrap(gh.CodeInvalid, err, "postgres: %s", what)
	}
	return gh.Wrap(gh.CodeUnavailable, err, "postgres: %s", what)
}

var _ = fmt.Sprintf

// notifyToken names this store's NOTIFY payload: random, so replicas
// never share one.
func notifyToken() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
