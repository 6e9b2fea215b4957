package gateway

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/gateway/chat"
	"github.com/gatehouse/gatehouse/gateway/people"
	"github.com/gatehouse/gatehouse/gateway/uploads"
	"github.com/gatehouse/gatehouse/kernel"
	"github.com/gatehouse/gatehouse/models"
	"github.com/gatehouse/gatehouse/store"
)

// Decider decides approval gates; gates.Service is one.
type Decider interface {
	Decide(ctx context.Context, id string, d gh.Decision) (gh.Gate, bool, error)
}

// Config configures a Gateway.
type Config struct {
	// Kernel commits inputs and reads the log. Required.
	Kernel *kernel.Kernel
	// Store is the store holding the gateway's own tables (receive log,
	// outbox, addresses). Required; the kernel's store.
	Store store.Store
	// Gates decides presses on approval cards. Defaults to nil: a press is
	// answered that approvals are not enabled.
	Gates Decider
	// Adapters are the platforms to serve, at most one per platform.
	Adapters []chat.Adapter
	// PublicURL is the web UI's address as people reach it
	// (GATEHOUSE_PUBLIC_URL): a card whose free text had to be clipped
	// links to the whole card there. Defaults to empty: the card says to
	// open the web chat's /admin instead.
	PublicURL string
	// Allowed lists, per platform, the user ids allowed to talk to the
	// agent and decide its approvals; "*" allows everyone. A platform
	// with no entry allows nobody: every message is dropped not_allowed.
	Allowed map[string][]string
	// Approvers are who, besides the requester, may decide a gate from a
	// chat platform (see [people.Approvers]). Defaults to the zero value: the
	// requester alone.
	Approvers people.Approvers
	// ApprovalChat, when its Platform is set, is an approvers' chat every
	// card of a chat session is also sent to (GATEHOUSE_APPROVAL_CHAT):
	// the first decision on any surface wins, and every copy is edited
	// to the outcome. Its platform must be one of Adapters.
	ApprovalChat gh.Address
	// ChatModels are the selections /model lets a chat pick
	// (GATEHOUSE_CHAT_MODELS). Defaults to none: /model shows the
	// configured model and picks nothing.
	ChatModels models.ChatChoices
	// Model is the configured selection (GATEHOUSE_MODEL), which answers
	// a chat that picked none; /model names it. Defaults to empty.
	Model string
	// Uploads answers /library: files sent in a chat added to the
	// knowledge library. Defaults to nil: /library answers that the
	// library is not enabled.
	Uploads *uploads.Service
	// Pairing gives a stranger who writes in a direct chat a one-time
	// code, sent back as a reply, that an admin approves to let them in
	// (see people.Admin). Defaults to false: strangers are dropped not_allowed.
	// People let in earlier stay allowed either way.
	Pairing bool
	// Location is the gateway's time zone (GATEHOUSE_TIMEZONE): the one a
	// person who set none of their own (/tz) has, which /tz names.
	// Defaults to time.Local; give the supervisor's (Config.Location).
	Location *time.Location
	// FloodLimit is how many messages one chat may hand on per minute;
	// more are dropped as flood. Defaults to 30.
	FloodLimit int
	// MidTurn is how a message that arrives while its session's turn runs
	// is delivered: gh.DeliveryQueue (answered after the turn, the
	// default) or gh.DeliveryGuide (joins the running turn).
	MidTurn gh.Delivery
	// Owner names this replica on platform leases and outbox claims.
	// Defaults to hostname-pid-random.
	Owner string
	// LeaseTTL is how long a platform lease lasts unrenewed; it is renewed
	// every third of it. Defaults to 30s.
	LeaseTTL time.Duration
	// MaxAttempts is how many failed sends (429s aside) make a dead
	// letter. Defaults to 5.
	MaxAttempts int
	// SendTimeout bounds one send to a platform. Defaults to 30s.
	SendTimeout time.Duration
	// Retention is how long receive-log rows and sent or dead outbox rows
	// are kept; an hourly pass deletes older ones. It must outlast the
	// platforms' redelivery (Telegram keeps updates 24 h). Defaults to
	// 30 days.
	Retention time.Duration
	// Poll is how often the follower and dispatchers look for work
	// without a signal (commits made on another replica are not signalled
	// here). Defaults to 1s.
	Poll time.Duration
	// ProbeInterval is how long a platform this replica holds may stay
	// silent (no poll, socket event or send either way) before the
	// gateway asks it a cheap authenticated call (chat.Prober), so its
	// state stays evidence. Defaults to 30s.
	ProbeInterval time.Duration
	// Now is the clock. Defaults to time.Now.
	Now func() time.Time
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Metrics registers the gateway's Prometheus series. Defaults to nil:
	// not exported.
	Metrics prometheus.Registerer
}

func (c Config) withDefaults() Config {
	if c.Location == nil {
		c.Location = time.Local
	}
	if c.FloodLimit <= 0 {
		c.FloodLimit = 30
	}
	if c.MidTurn == "" {
		c.MidTurn = gh.DeliveryQueue
	}
	if c.Owner == "" {
		c.Owner = kernel.NewOwner()
	}
	if c.LeaseTTL <= 0 {
		c.LeaseTTL = 30 * time.Second
	}
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = 5
	}
	if c.SendTimeout <= 0 {
		c.SendTimeout = 30 * time.Second
	}
	if c.Retention <= 0 {
		c.Retention = 30 * 24 * time.Hour
	}
	if c.Poll <= 0 {
		c.Poll = time.Second
	}
	if c.ProbeInterval <= 0 {
		c.ProbeInterval = 30 * time.Second
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}
