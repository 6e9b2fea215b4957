package gateway

import (
	"context"
	"net/http"
	"slices"
	"sync"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/gateway/chat"
	"github.com/gatehouse/gatehouse/gateway/outbox"
	"github.com/gatehouse/gatehouse/kernel"
	"github.com/gatehouse/gatehouse/store"
)

// Gateway is the platform-independent middle: [chat.Sink] for adapters, the
// outbox follower and one connection-and-dispatcher runner per platform
// (package outbox does the following and the sending).
type Gateway struct {
	cfg      Config
	k        *kernel.Kernel
	st       store.Store
	adapters map[string]chat.Adapter
	hooks    map[string]http.Handler // webhook handlers, built once
	allowed  map[string]map[string]bool

	out *outbox.Outbox

	mu     sync.Mutex
	states map[string]*adapterState

	metrics   *metrics
	batchOnce sync.Once
	batch     *receiveBatcher

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// adapterState is what /v1/adapters shows of a platform in this process.
type adapterState struct {
	state     string
	lastError string
	since     time.Time

	// holding: this replica holds the lease and runs the connection;
	// then the state comes from the evidence below. Otherwise it is
	// outside (standby, stopped, or retrying the lease with outsideErr).
	holding    bool
	outside    string
	outsideErr error
	// The evidence: when a round trip last succeeded and failed, and how.
	lastOK, lastFailed time.Time
	lastErr            error
	tokenRefused       bool
	loggedErr          string // the last failure logged at warn
}

// Adapter states.
const (
	StateStopped   = "stopped"
	StateStandby   = "standby" // another replica holds the lease
	StateConnected = "connected"
	StateRetrying  = "retrying"
)

// New builds a gateway; Start runs it.
func New(cfg Config) *Gateway {
	if cfg.Kernel == nil || cfg.Store == nil {
		panic("gateway: New needs a Kernel and a Store")
	}
	cfg = cfg.withDefaults()
	g := &Gateway{cfg: cfg, k: cfg.Kernel, st: cfg.Store, adapters: map[string]chat.Adapter{}, allowed: map[string]map[string]bool{},
		states: map[string]*adapterState{}, metrics: newMetrics(cfg.Metrics)}
	for _, a := range cfg.Adapters {
		g.adapters[a.Platform()] = a
		// outside too: evidence (a Test's probe) may come before Start.
		g.states[a.Platform()] = &adapterState{state: StateStopped, outside: StateStopped, since: cfg.Now()}
	}
	g.hooks = map[string]http.Handler{}
	for p, a := range g.adapters {
		if h := a.Handler(g); h != nil {
			g.hooks[p] = h
		}
	}
	if ac := &g.cfg.ApprovalChat; ac.Platform != "" {
		if g.adapters[ac.Platform] == nil || ac.ChatID == "" {
			cfg.Logger.Error("the approval chat's platform is not served: cards are not copied there", "platform", ac.Platform, "chat", ac.ChatID)
			*ac = gh.Address{}
		} else if ac.ChatType == "" {
			ac.ChatType = gh.ChatGroup // paced as a group: never faster than the platform allows
		}
	}
	g.out = outbox.New(outbox.Config{Kernel: cfg.Kernel, Store: cfg.Store, Platforms: g.Platforms(), PublicURL: cfg.PublicURL,
		ApprovalChat: g.cfg.ApprovalChat, Owner: cfg.Owner, MaxAttempts: cfg.MaxAttempts, SendTimeout: cfg.SendTimeout,
		Poll: cfg.Poll, Now: cfg.Now, Logger: cfg.Logger, Metrics: cfg.Metrics, SendOutcome: g.sendOutcome})
	for p, ids := range cfg.Allowed {
		set := map[string]bool{}
		for _, id := range ids {
			set[id] = true
		}
		g.allowed[p] = set
	}
	return g
}

// Start runs the outbox follower and, for each adapter, the runner that
// takes the platform's lease and then holds its connection and dispatcher.
func (g *Gateway) Start(ctx context.Context) error {
	ctx, g.cancel = context.WithCancel(context.WithoutCancel(ctx))
	g.wg.Add(2)
	go func() { defer g.wg.Done(); g.out.Follow(ctx) }()
	go func() { defer g.wg.Done(); g.prune(ctx) }()
	for _, a := range g.cfg.Adapters {
		g.wg.Add(1)
		go func() { defer g.wg.Done(); g.runPlatform(ctx, a) }()
	}
	return nil
}

// Stop ends connections and dispatchers (sends in flight finish), gives
// the platform leases up and waits, at most until ctx ends.
func (g *Gateway) Stop(ctx context.Context) error {
	if g.cancel == nil {
		return nil
	}
	g.cancel()
	done := make(chan struct{})
	go func() { g.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		return gh.Wrap(gh.CodeUnavailable, ctx.Err(), "gateway did not stop in time")
	}
	// Work an adapter's webhook started past its request (a deferred
	// answer) hands presses to the gateway: wait for it before the
	// committers.
	for _, a := range g.adapters {
		if d, ok := a.(chat.Drainer); ok {
			if err := d.Drain(ctx); err != nil {
				return gh.Wrap(gh.CodeUnavailable, err, "%s webhook work did not stop in time", a.Platform())
			}
		}
	}
	// The receive committers are started by receives, not by Start: wait
	// for them too, so no commit runs after the gateway said it stopped.
	return g.batcher().wait(ctx)
}

// Handlers returns each adapter's webhook handler by platform, for the
// HTTP server to mount at /hooks/<platform>.
func (g *Gateway) Handlers() map[string]http.Handler { return g.hooks }

// Platforms lists the configured platforms.
func (g *Gateway) Platforms() []string {
	var out []string
	for p := range g.adapters {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// Allowed reports whether the platform's allow-list (Config.Allowed) lets
// user talk to the agent. People let in by pairing are not on it: the
// receive and press paths look them up in the store as well.
func (g *Gateway) Allowed(platform, userID string) bool {
	set := g.allowed[platform]
	return set["*"] || (userID != "" && set[userID])
}

const (
	pruneEvery = time.Hour
	pruneBatch = 5000
)

// prune deletes what Retention no longer keeps, now and every hour, in
// batches so no transaction grows large.
func (g *Gateway) prune(ctx context.Context) {
	for {
		before := g.cfg.Now().Add(-g.cfg.Retention)
		for ctx.Err() == nil {
			n, err := g.st.PruneGateway(ctx, before, pruneBatch)
			if err != nil {
				if ctx.Err() == nil {
					g.cfg.Logger.Warn("pruning old receive-log and outbox rows failed; next pass in an hour", "err", err)
				}
				break
			}
			if n > 0 {
				g.cfg.Logger.Info("pruned old receive-log and outbox rows", "rows", n, "before", before)
			}
			if n < pruneBatch {
				break
			}
		}
		// Pairing codes are kept as long (the rate limit needs the last
		// hour only).
		if _, err := g.st.PrunePairingCodes(ctx, before, pruneBatch); err != nil && ctx.Err() == nil {
			g.cfg.Logger.Warn("pruning old pairing codes failed; next pass in an hour", "err", err)
		}
		sleep(ctx, pruneEvery)
		if ctx.Err() != nil {
			return
		}
	}
}
