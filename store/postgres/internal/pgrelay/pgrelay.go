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

// NotifySQL sends a commit's payload ($2) on the events channel ($1),
// only when a replica other than this one ($4) follows the session ($3):
// with no other replica, nothing is queued. It goes with the COMMIT.
const NotifySQL = `SELECT pg_notify($1, $2) WHERE EXISTS (SELECT 1 FROM stream_followers
	WHERE session_id = $3 AND replica <> $4 AND expires_at > now())`

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
}

type op struct {
	session string
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
// others' commits to it will be sent here. release ends it.
func (r *Relay) Follow(ctx context.Context, session string) (release func(), err error) {
	r.mu.Lock()
	r.follows[session]++
	first := r.follows[session] == 1
	r.mu.Unlock()
	if first {
		done := make(chan error, 1)
		select {
		case r.ops <- op{session: session, follow: true, done: done}:
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
	last := r.follows[session] <= 0
	if last {
		delete(r.follows, session)
	}
	r.mu.Unlock()
	if last {
		select {
		case r.ops <- op{session: session}:
		default: // the row expires by itself
		}
	}
}

// Run writes follows and unfollows in order and refreshes this replica's
// rows, until ctx ends; then it deletes them.
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
			var err error
			if o.refresh {
				r.refresh(ctx)
				continue
			}
			if o.follow {
				_, err = r.pool.Exec(ctx, `INSERT INTO stream_followers (session_id, replica, expires_at) VALUES ($1, $2, now() + make_interval(secs => $3))
					ON CONFLICT (session_id, replica) DO UPDATE SET expires_at = EXCLUDED.expires_at`, o.session, r.self, TTL.Seconds())
			} else if !r.following(o.session) {
				_, err = r.pool.Exec(ctx, `DELETE FROM stream_followers WHERE session_id = $1 AND replica = $2`, o.session, r.self)
			}
			if o.done != nil {
				o.done <- err
			} else if err != nil && ctx.Err() == nil {
				r.log.Warn("stream follower row not removed; it expires", "session", o.session, "err", err)
			}
		case <-t.C:
			r.refresh(ctx)
		}
	}
}

func (r *Relay) following(session string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.follows[session] > 0
}

// refresh renews every row of this replica in one statement, and removes
// the rows of replicas that stopped renewing.
func (r *Relay) refresh(ctx context.Context) {
	r.mu.Lock()
	sessions := make([]string, 0, len(r.follows))
	for s := range r.follows {
		sessions = append(sessions, s)
	}
	r.mu.Unlock()
	if len(sessions) > 0 {
		if _, err := r.pool.Exec(ctx, `INSERT INTO stream_followers (session_id, replica, expires_at)
			SELECT unnest($1::text[]), $2, now() + make_interval(secs => $3)
			ON CONFLICT (session_id, replica) DO UPDATE SET expires_at = EXCLUDED.expires_at`, sessions, r.self, TTL.Seconds()); err != nil && ctx.Err() == nil {
			r.log.Warn("stream follower rows not renewed", "err", err)
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
// replica's rows again at once: after a failover the new primary may
// lack the latest of them (asynchronous replication), and other replicas
// notify this one only for the sessions its rows name.
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
// fits, else the session alone, and only when another replica follows the
// session (as NotifySQL). Its arguments are SQL expressions: the events
// channel, this replica's token, the session and the event's seq, kind,
// payload (jsonb), key and time, over the relations in from.
func NotifyOneSQL(channel, self, session, seq, kind, payload, key, at, from string) string {
	return `SELECT pg_notify(` + channel + `, CASE WHEN octet_length(j.full) < ` + strconv.Itoa(MaxPayload) + ` THEN j.full
		ELSE json_build_object('o', ` + self + `, 's', j.session)::text END)
	FROM (SELECT ` + session + ` AS session, json_build_object('o', ` + self + `, 's', ` + session + `, 'e', json_build_array(json_build_object(
		'sessionId', ` + session + `, 'seq', ` + seq + `, 'kind', ` + kind + `, 'payload', ` + payload + `, 'key', ` + key + `,
		'createdAt', ` + at + `)))::text AS full FROM ` + from + `) j
	WHERE EXISTS (SELECT 1 FROM stream_followers f WHERE f.session_id = j.session AND f.replica <> ` + self + ` AND f.expires_at > now())`
}
