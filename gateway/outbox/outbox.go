package outbox

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/kernel"
	"github.com/gatehouse/gatehouse/store"
)

// Config configures an Outbox.
type Config struct {
	// Kernel is the log the follower follows (and the gate.opened a card
	// is drawn from). Required.
	Kernel *kernel.Kernel
	// Store holds the outbox rows, the address book and the cards sent.
	// Required; the kernel's store.
	Store store.Store
	// Platforms are the platforms whose dispatchers Wake wakes, one
	// dispatcher each. Defaults to none: rows are still sent, found by
	// Poll.
	Platforms []string
	// PublicURL is the web UI's address as people reach it: a card whose
	// free text had to be clipped links to the whole card there (see
	// chat.CardFor). Defaults to empty: the card says to open the web
	// chat's /admin instead.
	PublicURL string
	// ApprovalChat, when its Platform is set, is an approvers' chat every
	// card and card update is copied to: a chat session's beside its own
	// rows, and a session's without a chat address (the web chat, the
	// API) there alone, with nothing else of the session. Its platform
	// must be one of Platforms and served; defaults to none.
	ApprovalChat gh.Address
	// Owner names this replica on outbox claims. Defaults to
	// hostname-pid-random.
	Owner string
	// MaxAttempts is how many failed sends (429s aside) make a dead
	// letter. Defaults to 5.
	MaxAttempts int
	// SendTimeout bounds one send to a platform; a claim lasts four of
	// it. Defaults to 30s.
	SendTimeout time.Duration
	// Poll is how often the follower and dispatchers look for work
	// without a signal (commits made on another replica are not signalled
	// here). Defaults to 1s.
	Poll time.Duration
	// Now is the clock. Defaults to time.Now.
	Now func() time.Time
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Metrics registers the outbox's Prometheus series
	// (gatehouse_outbox_sends_total). Defaults to nil: counted, not
	// exported.
	Metrics prometheus.Registerer
	// SendOutcome, when set, hears every send's outcome (nil or the
	// error): the gateway takes it as evidence of the platform's health.
	// Defaults to nil.
	SendOutcome func(ctx context.Context, platform string, err error)
}

func (c Config) withDefaults() Config {
	if c.Owner == "" {
		c.Owner = kernel.NewOwner()
	}
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = 5
	}
	if c.SendTimeout <= 0 {
		c.SendTimeout = 30 * time.Second
	}
	if c.Poll <= 0 {
		c.Poll = time.Second
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Outbox is the follower and the dispatchers of one process. It starts
// nothing itself: its owner (the gateway) runs Follow once, and Dispatch
// for a platform while it holds that platform's lease, and stops them by
// ending their contexts.
type Outbox struct {
	cfg   Config
	k     *kernel.Kernel
	st    store.Store
	kicks map[string]chan struct{} // per platform: outbox rows were added
	sends *prometheus.CounterVec
	// copies follows the cards of sessions without a chat address for
	// the approval chat (approvals.go).
	copies approvalCopies
}

// New builds an outbox.
func New(cfg Config) *Outbox {
	if cfg.Kernel == nil || cfg.Store == nil {
		panic("outbox: New needs a Kernel and a Store")
	}
	cfg = cfg.withDefaults()
	ob := &Outbox{cfg: cfg, k: cfg.Kernel, st: cfg.Store, kicks: map[string]chan struct{}{},
		copies: approvalCopies{watched: map[string]bool{}, chatted: map[string]bool{}},
		sends: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gatehouse_outbox_sends_total",
			Help: "Outbox sends by result: sent, rate_limited (429, rescheduled), retry (rescheduled), dead (dead letter)."},
			[]string{"platform", "kind", "result"})}
	for _, p := range cfg.Platforms {
		ob.kicks[p] = make(chan struct{}, 1)
	}
	if cfg.Metrics != nil {
		cfg.Metrics.MustRegister(ob.sends)
	}
	return ob
}

// Wake tells every dispatcher that rows were added (a reply enqueued
// outside the follower, such as a pairing code).
func (ob *Outbox) Wake() {
	for _, c := range ob.kicks {
		select {
		case c <- struct{}{}:
		default:
		}
	}
}

// Text is the payload of an outbox message row (store.OutboxMessage): the
// answer's text, split and formatted for the platform when it is sent.
type Text struct {
	Text string `json:"text"`
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
