// Package redisgates is a gate registry for many replicas: the compare-and-set
// of every press is one Lua script on a Redis hash, so a crowd of presses
// on one gate, from any replica, costs Redis round trips instead of
// database writes.
//
// Redis is the fast path, never the decision: the SQL compare-and-set
// (store.DecideGate) is. A claim in Redis is a proposal that keeps the
// crowd of presses from racing SQL with different decisions; nothing is
// reported to anyone (winner or later presser) until SQL holds it.
// Through gates.Service that compare-and-set is part of the transaction
// that logs the decision (ClaimDeferred). A press that finds a proposal
// SQL has not heard of (its press died, or SQL was down) carries it into
// SQL; a hash that is missing (never seeded, or Redis restarted: Redis is
// not expected to keep anything on disk) is seeded from the SQL row, so a
// proposal lost with Redis was never a decision and a later press decides.
// When SQL disagrees with Redis, SQL wins and the hash is overwritten.
package redisgates

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/gates"
	"github.com/gatehouse/gatehouse/store"
)

// Config configures the Redis registry.
type Config struct {
	// Prefix starts every key: a gate's hash is Prefix+"gate:"+id.
	// Defaults to "gatehouse:".
	Prefix string
	// TTL is how long a gate's hash outlives the gate's expiry (a hash
	// seeded after the expiry lives TTL from the seed). A press after that
	// seeds it again from SQL. Defaults to 24h.
	TTL time.Duration
	// CacheSize bounds how many gates' fixed fields (session, tool call,
	// kind, options, expiry) are kept in memory, so a press costs no SQL
	// read. Defaults to 10000.
	CacheSize int
	// Now is the clock. Defaults to time.Now. Replicas need synchronised
	// clocks (NTP): expiry is compared against it.
	Now func() time.Time
}

func (c Config) withDefaults() Config {
	if c.Prefix == "" {
		c.Prefix = "gatehouse:"
	}
	if c.TTL <= 0 {
		c.TTL = 24 * time.Hour
	}
	if c.CacheSize <= 0 {
		c.CacheSize = 10000
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// claimSrc is the compare-and-set. Its reply is "missing" when the hash is
// absent, else {won, changed, state, by, surface, reason, answer,
// decidedAt, expiresAt, logged}: won is 1 when this call moved the gate to
// the requested state, changed is 1 when this call moved it at all (a
// press after the expiry expires it).
const claimSrc = `-- gatehouse gate claim
-- KEYS[1]: the gate's hash
-- ARGV: state, by, surface, reason, answer, now (unix microseconds)
local h = redis.call('HMGET', KEYS[1], 'state', 'by', 'surface', 'reason', 'answer', 'decidedAt', 'expiresAt', 'logged')
if not h[1] or not h[7] then
  return 'missing'
end
if h[1] ~= 'pending' then
  return {0, 0, h[1], h[2] or '', h[3] or '', h[4] or '', h[5] or '', h[6] or '0', h[7], h[8] or '0'}
end
local st, by, sf, rs, an = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
if tonumber(h[7]) <= tonumber(ARGV[6]) then
  st, by, sf, rs, an = 'expired', 'timeout', 'gateway', '', ''
end
redis.call('HSET', KEYS[1], 'state', st, 'by', by, 'surface', sf, 'reason', rs, 'answer', an, 'decidedAt', ARGV[6], 'logged', '0')
local won = 0
if st == ARGV[1] then
  won = 1
end
return {won, 1, st, by, sf, rs, an, ARGV[6], h[7], '0'}
`

// seedSrc writes a gate's hash from its SQL row: only when the hash is
// absent (ARGV[2] = "0"), or replacing it (ARGV[2] = "1", SQL is the
// truth). ARGV[1] is the TTL in milliseconds, then field/value pairs.
const seedSrc = `-- gatehouse gate seed
if ARGV[2] == '0' and redis.call('EXISTS', KEYS[1]) == 1 then
  return 0
end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], unpack(ARGV, 3))
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 1
`

var (
	claimScript = goredis.NewScript(claimSrc)
	seedScript  = goredis.NewScript(seedSrc)
)

// Registry is the Redis gate registry. It implements gates.Registry,
// gates.DeferredClaimer and gates.LogMarker.
type Registry struct {
	rdb *goredis.Client
	st  store.Store
	cfg Config

	mu    sync.Mutex
	fixed map[string]gh.Gate
	loads map[string]*load
}

type load struct {
	done chan struct{}
	g    gh.Gate
	err  error
}

var (
	_ gates.Registry        = (*Registry)(nil)
	_ gates.DeferredClaimer = (*Registry)(nil)
	_ gates.CommitMarker    = (*Registry)(nil)
)

// New returns a registry deciding on client, with st (the database the
// gate rows live in) as the truth.
func New(client *goredis.Client, st store.Store, cfg Config) *Registry {
	return &Registry{rdb: client, st: st, cfg: cfg.withDefaults(), fixed: map[string]gh.Gate{}, loads: map[string]*load{}}
}

// ScriptSHA is the SHA-1 of the claim script, for EVALSHA.
func (r *Registry) ScriptSHA() string { return claimScript.Hash() }

// ScriptSource is the claim script. KEYS[1] is [Registry.Key]; ARGV is
// state, by, surface, reason, answer and now in unix microseconds. It
// replies "missing" for an absent hash, else {won, changed, state, by,
// surface, reason, answer, decidedAt, expiresAt, logged}.
func (r *Registry) ScriptSource() string { return claimSrc }

// Key is the hash of gate id.
func (r *Registry) Key(id string) string { return r.cfg.Prefix + "gate:" + id }

func micros(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMicro()
}

func fromMicros(s string) time.Time {
	n, _ := strconv.ParseInt(s, 10, 64)
	if n == 0 {
		return time.Time{}
	}
	return time.UnixMicro(n).UTC()
}

func unavailable(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	return gh.Wrap(gh.CodeUnavailable, err, "redis: "+format, args...)
}

// Seed writes g's hash from g (the gate as inserted in SQL) unless the
// hash exists, and keeps g's fixed fields in memory. The registry seeds on
// demand; a caller that opens gates may seed them ahead to spare the first
// press an SQL read and a round trip.
func (r *Registry) Seed(ctx context.Context, g gh.Gate) error {
	if err := gates.CheckID(g.ID); err != nil {
		return err
	}
	if err := r.seed(ctx, g, false); err != nil {
		return err
	}
	r.remember(g)
	return nil
}

// remember keeps g's fixed fields in memory.
func (r *Registry) remember(g gh.Gate) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.fixed[g.ID]; !ok && len(r.fixed) >= r.cfg.CacheSize {
		for k := range r.fixed { // evict an arbitrary entry
			delete(r.fixed, k)
			break
		}
	}
	r.fixed[g.ID] = g
}

// MarkCommitted implements gates.LogMarker: g is the gate as SQL has it, and
// replaces the hash (SQL is the truth).
func (r *Registry) MarkCommitted(ctx context.Context, g gh.Gate) error {
	if g.State == gh.GatePending {
		return nil
	}
	return r.seed(ctx, g, true)
}

func (r *Registry) seed(ctx context.Context, g gh.Gate, overwrite bool) error {
	now := gates.Clock(r.cfg.Now)
	ttl := max(g.ExpiresAt.Sub(now), 0) + r.cfg.TTL
	logged, replace := "0", "0"
	if g.Committed {
		logged = "1"
	}
	if overwrite {
		replace = "1"
	}
	err := seedScript.Run(ctx, r.rdb, []string{r.Key(g.ID)},
		ttl.Milliseconds(), replace,
		"state", string(g.State), "by", g.DecidedBy, "surface", g.Surface, "reason", g.Reason, "answer", g.Answer,
		"decidedAt", micros(g.DecidedAt), "expiresAt", micros(g.ExpiresAt), "logged", logged,
	).Err()
	return unavailable(err, "seed gate %q", g.ID)
}

// row returns the gate's fixed fields from memory, or loads the gate (see
// load). loaded is true when this call loaded it.
func (r *Registry) row(ctx context.Context, id string) (g gh.Gate, loaded bool, err error) {
	r.mu.Lock()
	g, ok := r.fixed[id]
	r.mu.Unlock()
	if ok {
		return g, false, nil
	}
	g, err = r.load(ctx, id)
	return g, true, err
}

// load reads the gate's SQL row, seeds its hash from it unless the hash
// exists, and keeps its fixed fields in memory. Concurrent loads of one
// gate in this process share one read and one seed.
func (r *Registry) load(ctx context.Context, id string) (gh.Gate, error) {
	r.mu.Lock()
	if l, ok := r.loads[id]; ok {
		r.mu.Unlock()
		select {
		case <-l.done:
			return l.g, l.err
		case <-ctx.Done():
			return gh.Gate{}, gh.Wrap(gh.CodeUnavailable, ctx.Err(), "load gate %q", id)
		}
	}
	l := &load{done: make(chan struct{})}
	r.loads[id] = l
	r.mu.Unlock()
	l.g, l.err = r.st.GetGate(ctx, id)
	if l.err == nil {
		l.err = r.seed(ctx, l.g, false)
	}
	if l.err == nil {
		r.remember(l.g)
	}
	r.mu.Lock()
	delete(r.loads, id)
	r.mu.Unlock()
	close(l.done)
	return l.g, l.err
}

// Claim implements gates.Registry: the claim script decides in Redis, and
// a press that moved the gate makes SQL agree (store.DecideGate) before it
// returns; when SQL was decided otherwise, SQL is the answer and the hash
// is overwritten with it.
func (r *Registry) Claim(ctx context.Context, id string, d gh.Decision) (gh.Gate, bool, error) {
	return r.claim(ctx, id, d, true)
}

// ClaimDeferred implements gates.DeferredClaimer: Claim without making SQL
// agree, for a caller that compare-and-sets the decision in SQL in its own
// transaction (gates.Service, with the log commit).
func (r *Registry) ClaimDeferred(ctx context.Context, id string, d gh.Decision) (gh.Gate, bool, error) {
	return r.claim(ctx, id, d, false)
}

func (r *Registry) claim(ctx context.Context, id string, d gh.Decision, sync bool) (gh.Gate, bool, error) {
	if err := gates.CheckID(id); err != nil {
		return gh.Gate{}, false, err
	}
	fixed, loaded, err := r.row(ctx, id)
	if err != nil {
		return gh.Gate{}, false, err
	}
	now := gates.Clock(r.cfg.Now)
	if err := gates.ValidateDecision(fixed, d, now); err != nil {
		return gh.Gate{}, false, err
	}
	key := r.Key(id)
	for range 4 {
		res, err := claimScript.Run(ctx, r.rdb, []string{key}, string(d.State), d.By, d.Surface, d.Reason, d.Answer, micros(now)).Result()
		if err != nil {
			return gh.Gate{}, false, unavailable(err, "claim gate %q", id)
		}
		if s, ok := res.(string); ok && s == "missing" {
			// Never seeded, gone with its TTL, or Redis restarted: seed
			// from the SQL row as it is now, and claim again.
			if !loaded {
				if _, err := r.load(ctx, id); err != nil {
					return gh.Gate{}, false, err
				}
			}
			loaded = false
			continue
		}
		g, won, changed, err := parseClaim(fixed, res)
		if err != nil {
			return gh.Gate{}, false, gh.Wrap(gh.CodeInternal, err, "redis: claim gate %q", id)
		}
		if !sync || (!changed && g.Committed) {
			return g, won, nil
		}
		// Redis holds a proposal SQL may not have (this press's, or one
		// whose press died before SQL heard of it): SQL's compare-and-set
		// decides before anything is reported. Pending in SQL, it takes
		// the proposal; SQL unreachable, nothing is decided.
		sg, _, err := r.st.DecideGate(ctx, store.GateDecision{ID: id, Decision: gates.DecisionOf(g), Now: g.DecidedAt})
		if err != nil {
			return gh.Gate{}, false, err
		}
		if !gates.SameDecision(sg, g) {
			// SQL was decided otherwise (a decision Redis lost in a
			// restart): SQL is the truth, and Redis learns it.
			_ = r.seed(ctx, sg, true)
			return sg, false, nil
		}
		return sg, won, nil
	}
	return gh.Gate{}, false, gh.Errorf(gh.CodeUnavailable, "redis: the hash of gate %q keeps vanishing", id)
}

func parseClaim(fixed gh.Gate, res any) (g gh.Gate, won, changed bool, err error) {
	a, ok := res.([]any)
	if !ok || len(a) != 10 {
		return g, false, false, fmt.Errorf("unexpected reply %v", res)
	}
	str := func(i int) string {
		switch v := a[i].(type) {
		case string:
			return v
		case int64:
			return strconv.FormatInt(v, 10)
		}
		return ""
	}
	g = fixed
	g.State = gh.GateState(str(2))
	g.DecidedBy, g.Surface, g.Reason, g.Answer = str(3), str(4), str(5), str(6)
	g.DecidedAt, g.ExpiresAt = fromMicros(str(7)), fromMicros(str(8))
	g.Committed = str(9) == "1"
	if g.State == "" {
		return g, false, false, errors.New("reply without a state")
	}
	return g, str(0) == "1", str(1) == "1", nil
}
