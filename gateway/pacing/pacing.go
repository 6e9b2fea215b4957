package pacing

import (
	"sync"
	"time"

	"golang.org/x/time/rate"

	gh "github.com/gatehouse/gatehouse"
)

// Limits are the rates a platform allows. Zero means no limit.
type Limits struct {
	// PerChat is the least time between two sends to one chat.
	PerChat time.Duration
	// GroupPerMinute caps sends to one group chat per minute.
	GroupPerMinute int
	// PerSecond caps all of the bot's sends.
	PerSecond int
}

// Pacer keeps one platform's sends inside its limits: per chat, per group
// chat per minute, and overall. A send reserves from every bucket that
// applies or from none, so a chat that must wait does not use up the
// others' room.
type Pacer struct {
	lim    Limits
	mu     sync.Mutex
	global *rate.Limiter
	chats  map[string]*rate.Limiter
	groups map[string]*rate.Limiter
	// held are chats the platform told to wait (429), until when.
	held map[string]time.Time
}

// margin keeps pacing a little under the platform's stated limit: our
// clock and the platform's do not start their windows together.
const margin = 1.1

// New returns a pacer for one platform's limits.
func New(l Limits) *Pacer {
	p := &Pacer{lim: l, chats: map[string]*rate.Limiter{}, groups: map[string]*rate.Limiter{}, held: map[string]time.Time{}}
	if l.PerSecond > 0 {
		p.global = rate.NewLimiter(rate.Limit(float64(l.PerSecond)/margin), 1)
	}
	return p
}

func (p *Pacer) buckets(addr gh.Address) []*rate.Limiter {
	var out []*rate.Limiter
	if p.global != nil {
		out = append(out, p.global)
	}
	key := addr.ChatID
	if p.lim.PerChat > 0 {
		l := p.chats[key]
		if l == nil {
			l = rate.NewLimiter(rate.Every(time.Duration(float64(p.lim.PerChat)*margin)), 1)
			p.chats[key] = l
		}
		out = append(out, l)
	}
	if p.lim.GroupPerMinute > 0 && addr.ChatType != gh.ChatDM && addr.ChatType != "" {
		l := p.groups[key]
		if l == nil {
			l = rate.NewLimiter(rate.Every(time.Duration(float64(time.Minute)*margin/float64(p.lim.GroupPerMinute))), 1)
			p.groups[key] = l
		}
		out = append(out, l)
	}
	return out
}

// Reserve takes one send's room at now, or returns how long to wait and
// takes nothing.
func (p *Pacer) Reserve(addr gh.Address, now time.Time) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	if until := p.held[addr.ChatID]; until.After(now) {
		return until.Sub(now)
	}
	delete(p.held, addr.ChatID)
	var rs []*rate.Reservation
	var wait time.Duration
	for _, l := range p.buckets(addr) {
		r := l.ReserveN(now, 1)
		rs = append(rs, r)
		if d := r.DelayFrom(now); d > wait {
			wait = d
		}
	}
	if wait > 0 {
		for _, r := range rs {
			r.CancelAt(now)
		}
	}
	return wait
}

// Hold makes a chat wait until until: the platform answered 429.
func (p *Pacer) Hold(addr gh.Address, until time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if until.After(p.held[addr.ChatID]) {
		p.held[addr.ChatID] = until
	}
}
