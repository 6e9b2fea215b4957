package gateway

import (
	"context"
	"strings"
	"time"

	"github.com/gatehouse/gatehouse/gateway/chat"
	"github.com/gatehouse/gatehouse/store"
)

// AdapterStatus is what the admin sees of one platform.
type AdapterStatus struct {
	Platform string `json:"platform"`
	// State is this replica's view: connected (holds the lease and the
	// last round trip to the platform succeeded), standby (another
	// replica holds it: not an outage), retrying (holds it but the
	// platform failed, or the lease cannot be had; LastError says why),
	// stopped.
	State     string    `json:"state"`
	Since     time.Time `json:"since"`
	LastError string    `json:"lastError,omitempty"`
	// TokenRefused: the platform refused the token; retries are slowed
	// to one every 30s–10m until it is fixed.
	TokenRefused bool `json:"tokenRefused,omitempty"`
	// LastOK and LastFailed are when a round trip to the platform last
	// succeeded and failed while this replica held it.
	LastOK     *time.Time `json:"lastOk,omitempty"`
	LastFailed *time.Time `json:"lastFailed,omitempty"`
	// LeaseOwner is the replica holding the platform's connection.
	LeaseOwner string `json:"leaseOwner,omitempty"`
	Webhook    bool   `json:"webhook"`
	// Allowed describes the allow-list: "everyone", "nobody", or a count.
	Allowed string `json:"allowed"`
	// People counts those let in besides it (pairing); Pairing says
	// whether strangers are given codes.
	People  int  `json:"people"`
	Pairing bool `json:"pairing"`
	// Hint says what to do when something needs doing (nobody allowed,
	// the last message dropped).
	Hint string `json:"hint,omitempty"`
	// LastMessage is what became of the newest update received.
	LastMessage *store.ReceiveEntry `json:"lastMessage,omitempty"`
	Pending     int                 `json:"outboxPending"`
	Dead        int                 `json:"outboxDead"`
}

// Status reports every configured platform.
func (g *Gateway) Status(ctx context.Context) ([]AdapterStatus, error) {
	var out []AdapterStatus
	people, err := g.st.ListPeople(ctx, 10000)
	if err != nil {
		return nil, err
	}
	for _, p := range g.Platforms() {
		g.mu.Lock()
		st := *g.states[p]
		g.mu.Unlock()
		s := AdapterStatus{Platform: p, State: st.state, Since: st.since, LastError: st.lastError, TokenRefused: st.tokenRefused,
			LastOK: timeOrNil(st.lastOK), LastFailed: timeOrNil(st.lastFailed), Webhook: g.hooks[p] != nil, Pairing: g.cfg.Pairing}
		for _, person := range people {
			if person.Platform == p {
				s.People++
			}
		}
		if l, ok, err := g.st.GetPlatformLease(ctx, "platform:"+p); err != nil {
			return nil, err
		} else if ok && l.ExpiresAt.After(g.cfg.Now()) {
			s.LeaseOwner = l.Owner
		}
		set := g.allowed[p]
		switch {
		case set["*"]:
			s.Allowed = "everyone"
		case len(set) == 0 && g.cfg.Pairing:
			s.Allowed = "nobody"
			if s.People == 0 {
				s.Hint = "Nobody is on " + strings.ToUpper(p) + "_ALLOWED_USERS: a stranger who writes to the bot in a direct chat gets a pairing code; approve it under People."
			}
		case len(set) == 0 && s.People == 0:
			s.Allowed = "nobody"
			s.Hint = "Nobody may talk to the agent on " + p + " yet: set " + strings.ToUpper(p) + "_ALLOWED_USERS to their user ids (comma-separated, or * for everyone) and restart, or turn GATEHOUSE_PAIRING on to let people in with a code. The receive log shows the user id of every message dropped as not_allowed."
		case len(set) == 0:
			s.Allowed = "nobody"
		default:
			s.Allowed = itoa(int64(len(set))) + " user(s)"
		}
		if last, ok, err := g.st.LastReceive(ctx, p); err != nil {
			return nil, err
		} else if ok {
			s.LastMessage = &last
			if s.Hint == "" && last.Outcome == chat.ReceiveDropped {
				s.Hint = "The last message was dropped (" + last.Reason + "). " + dropHint(last.Reason, p)
			}
		}
		if s.TokenRefused {
			// Before every other hint: nothing else works until it is fixed.
			s.Hint = "The platform refused the token: check " + strings.ToUpper(p) + "_BOT_TOKEN (a revoked or mistyped token, or one for another bot) and restart. Retries are slowed to one every 30s–10m until then."
		}
		var err error
		if s.Pending, err = g.st.CountOutbox(ctx, p, store.OutboxPending); err != nil {
			return nil, err
		}
		if s.Dead, err = g.st.CountOutbox(ctx, p, store.OutboxDead); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

func dropHint(reason, platform string) string {
	switch reason {
	case chat.ReasonNotAllowed:
		return "Add the sender's user id to " + strings.ToUpper(platform) + "_ALLOWED_USERS, or let them in under People."
	case chat.ReasonPairing:
		return "A stranger asked to be let in: approve their code under People, or with gatehouse pair approve CODE."
	case chat.ReasonFlood:
		return "The chat sent more than the flood limit in a minute (GATEHOUSE_FLOOD_LIMIT)."
	case chat.ReasonFromBot:
		return "Messages from bots, this one included, are never answered."
	case chat.ReasonDuplicate:
		return "The platform delivered the same update again; it was answered once."
	case chat.ReasonUnsupported, chat.ReasonEmpty:
		return "Only text messages are handled."
	}
	return ""
}

// ReceiveLog lists the receive log, newest first.
func (g *Gateway) ReceiveLog(ctx context.Context, f store.ReceiveFilter) ([]store.ReceiveEntry, error) {
	if f.Limit <= 0 || f.Limit > 1000 {
		f.Limit = 100
	}
	return g.st.ListReceive(ctx, f)
}

// Outbox lists outbox rows, newest first.
func (g *Gateway) Outbox(ctx context.Context, f store.OutboxFilter) ([]store.OutboxEntry, error) {
	if f.Limit <= 0 || f.Limit > 1000 {
		f.Limit = 100
	}
	return g.st.ListOutbox(ctx, f)
}

func timeOrNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// PlatformState is a platform's state on this replica, read without I/O
// (/readyz shows it).
type PlatformState struct {
	Platform  string
	State     string
	Since     time.Time
	LastError string
}

// States reports every configured platform's state on this replica,
// from memory: cheap enough for every readiness probe.
func (g *Gateway) States() []PlatformState {
	var out []PlatformState
	for _, p := range g.Platforms() {
		st := g.snapshot(p)
		out = append(out, PlatformState{Platform: p, State: st.state, Since: st.since, LastError: st.lastError})
	}
	return out
}
