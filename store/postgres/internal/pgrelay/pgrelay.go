package pgrelay

import (
	"context"
	"encoding/json"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	gh "github.com/gatehouse/gatehouse"
)

// MaxPayload is the largest notification payload sent with its events:
// Postgres refuses payloads of 8000 bytes or more. A larger commit sends
// only its session, and the receiving streams read.
const MaxPayload = 7900

// Refresh is how often a replica renews its rows; TTL is how long a row
// lives without renewal (the replica died).
const (
	Refresh = 20 * time.Second
	TTL     = 60 * time.Second
)

// A replica that streams any session keeps one row in stream_followers,
// under session_id ReplicaRow (#32): a stream opened or closed writes
// nothing, so a client that opens a stream for every turn costs no
// transaction per turn. A commit NOTIFYs its events whenever another
// replica streams anything, and each replica keeps only what its own
// streams follow (Deliver). The row is written when the replica's first
// stream opens, renewed while it has streams, and removed once it has none
// at a refresh (or it expires: the replica died).

// ReplicaRow is the session_id of a replica's one row. (Rows of older
// replicas, one per session, still count: they are rows of a replica
// that streams.)
const ReplicaRow = "*"

// NotifySQL sends a commit's payload ($2) on the events channel ($1),
// only when a replica other than this one ($4) streams a session: with no
// other replica, nothing is queued. $3, the session, is the payload's
// business. It goes with the COMMIT.
const NotifySQL = `SELECT pg_notify($1, $2) WHERE $3::text IS NOT NULL AND EXISTS (SELECT 1 FROM stream_followers
	WHERE replica <> $4 AND expires_at > now())`

// message is a notification's payload: the sender's token, the session
// and its events, or no events when they did not fit.
type message struct {
	From    string     `json:"o"`
	Session string     `json:"s"`
	Events  []gh.Event `json:"e,omitempty"`
}

// Payload is the notification for events committed to session by the
// replica self: with the events when it fits, else the session alone.
func Payload(self, session string, events []gh.Event) string {
	if b, err := json.Marshal(message{From: self, Session: session, Events: events}); err == nil && len(b) < MaxPayload {
		return string(b)
	}
	b, _ := json.Marshal(message{From: self, Session: session})
	return string(b)
}

// Handler receives another replica's commit: its events (complete), or
// only that the session changed (read it).
type Handler func(session string, events []gh.Event, complete bool)

// Relay is one replica's side: the sessions it follows and the delivery
// of what others commit to them.
type Relay struct {
	pool *pgxpool.Pool
	self string
	log  *slog.Logger

	mu      sync.Mutex
	follows map[string]int // session -> local followers
	handler Handler
	ops     chan op
	// written: this replica's row is in the table (as far as it knows).
	written bool
}

type op struct {
	// follow asks for the row before the first stream is told it
	// follows; refresh renews it now (after a failover).
	follow  bool
	refresh bool
	done    chan error
}

// New returns a relay for the replica whose token is self; Run it.
func New(pool *pgxpool.Pool, self string, log *slog.Logger) *Relay {
	return &Relay{pool: pool, self: self, log: log, follows: map[string]int{}, ops: make(chan op, 256)}
}

// OnRemote sets the handler of other replicas' commits.
func (r *Relay) OnRemote(h Handler) {
	r.mu.Lock()
	r.handler = h
	r.mu.Unlock()
}

// Follow records that this replica streams session, and returns once the
// others' commits to it will be sent here: at once when this replica's
// row is already written (no write), else after writing it. release ends
// it, writing nothing.
func (r *Relay) Follow(ctx context.Context, session string) (release func(), err error) {
	r.mu.Lock()
	r.follows[session]++
	written := r.written
	r.mu.Unlock()
	if !written {
		done := make(chan error, 1)
		select {
		case r.ops <- op{follow: true, done: done}:
		case <-ctx.Done():
			r.unfollow(session)
			return nil, ctx.Err()
		}
		select {
		case err = <-done:
		case <-ctx.Done():
			err = ctx.Err()
		}
		if err != nil {
			r.unfollow(session)
			return nil, err
		}
	}
	var once sync.Once
	return func() { once.Do(func() { r.unfollow(session) }) }, nil
}

func (r *Relay) unfollow(session string) {
	r.mu.Lock()
	r.follows[session]--
	if r.follows[session] <= 0 {
		delete(r.follows, session)
	}
	r.mu.Unlock()
}

// Run writes this replica's row when its first stream opens, renews it
// while it has streams and removes it once it has none, until ctx ends;
// then it deletes it.
func (r *Relay) Run(ctx context.Context) {
	t := time.NewTicker(Refresh)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			dctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_, _ = r.pool.Exec(dctx, `DELETE FROM stream_followers WHERE replica = $1`, r.self)
			cancel()
			return
		case o := <-r.ops:
			if o.refresh {
				r.refresh(ctx, true)
				continue
			}
			err := r.write(ctx)
			if o.done != nil {
				o.done <- err
			}
		case <-t.C:
			r.refresh(ctx, false)
		}
	}
}

// write writes (or renews) this replica's row. A follow queued behind one
// that wrote it finds it written and writes nothing.
func (r *Relay) write(ctx context.Context) error {
	r.mu.Lock()
	written := r.written
	r.mu.Unlock()
	if written {
		return nil
	}
	_, err := r.pool.Exec(ctx, `INSERT INTO stream_followers (session_id, replica, expires_at) VALUES ($1, $2, now() + make_interval(secs => $3))
		ON CONFLICT (session_id, replica) DO UPDATE SET expires_at = EXCLUDED.expires_at`, ReplicaRow, r.self, TTL.Seconds())
	if err == nil {
		r.mu.Lock()
		r.written = true
		r.mu.Unlock()
	}
	return err
}

// refresh renews this replica's row while it streams and removes it when
// it streams nothing (written again by the next first stream), and
// removes the rows of replicas that stopped renewing. force writes the
// row whatever this replica believes of it (after a failover the new
// primary may lack it).
func (r *Relay) refresh(ctx context.Context, force bool) {
	// One look under the lock: a stream that opens after it finds the row
	// unwritten and has it written, after this refresh's delete.
	r.mu.Lock()
	streaming, was := len(r.follows) > 0, r.written
	r.written = false
	r.mu.Unlock()
	switch {
	case streaming:
		if err := r.write(ctx); err != nil && ctx.Err() == nil {
			r.log.Warn("stream follower row not renewed", "err", err)
		}
	case was || force:
		if _, err := r.pool.Exec(ctx, `DELETE FROM stream_followers WHERE replica = $1`, r.self); err != nil && ctx.Err() == nil {
			r.log.Warn("stream follower row not removed; it expires", "err", err)
		}
	}
	_, _ = r.pool.Exec(ctx, `DELETE FROM stream_followers WHERE expires_at < now()`)
}

// Deliver hands a notification's payload to the handler: another
// replica's commit to a session this one follows.
func (r *Relay) Deliver(payload string) {
	var m message
	if err := json.Unmarshal([]byte(payload), &m); err != nil || m.From == r.self || m.Session == "" {
		return
	}
	r.mu.Lock()
	h, followed := r.handler, r.follows[m.Session] > 0
	r.mu.Unlock()
	if h != nil && followed {
		h(m.Session, m.Events, len(m.Events) > 0)
	}
}

// Lost tells every followed session's streams that commits may have been
// missed (the listener reconnected): they read. It also writes this
// replica's row again at once: after a failover the new primary may lack
// it (asynchronous replication), and other replicas notify this one only
// while it is there.
func (r *Relay) Lost() {
	select {
	case r.ops <- op{refresh: true}:
	default: // the periodic refresh writes them
	}
	r.mu.Lock()
	h := r.handler
	sessions := make([]string, 0, len(r.follows))
	for s := range r.follows {
		sessions = append(sessions, s)
	}
	r.mu.Unlock()
	if h == nil {
		return
	}
	for _, s := range sessions {
		h(s, nil, false)
	}
}

// NotifyOneSQL is the body of a CTE that sends, from the statement that
// appends one event, the notification Payload builds: the event when it
// fits, else the session alone, and only when another replica streams a
// session (as NotifySQL). Its arguments are SQL expressions: the events
// channel, this replica's token, the session and the event's seq, kind,
// payload (jsonb), key and time, over the relations in from.
func NotifyOneSQL(channel, self, session, seq, kind, payload, key, at, from string) string {
	return `SELECT pg_notify(` + channel + `, CASE WHEN octet_length(j.full) < ` + strconv.Itoa(MaxPayload) + ` THEN j.full
		ELSE json_build_object('o', ` + self + `, 's', j.session)::text END)
	FROM (SELECT ` + session + ` AS session, json_build_object('o', ` + self + `, 's', ` + session + `, 'e', json_build_array(json_build_object(
		'sessionId', ` + session + `, 'seq', ` + seq + `, 'kind', ` + kind + `, 'payload', ` + payload + `, 'key', ` + key + `,
		'createdAt', ` + at + `)))::text AS full FROM ` + from + `) j
	WHERE EXISTS (SELECT 1 FROM stream_followers f WHERE f.replica <> ` + self + ` AND f.expires_at > now())`
}
