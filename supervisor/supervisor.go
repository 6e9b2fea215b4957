package supervisor

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/kernel"
	"github.com/gatehouse/gatehouse/memory"
	"github.com/gatehouse/gatehouse/models"
	"github.com/gatehouse/gatehouse/store"
	"github.com/gatehouse/gatehouse/supervisor/spool"
	"github.com/gatehouse/gatehouse/toolworker"
)

// DefaultBasePrompt opens every model request, followed by the date.
const DefaultBasePrompt = "You are a helpful assistant that people reach through Gatehouse, a chat gateway. " +
	"Answer plainly. Tools that act on the outside world run only after a person approves them."

// ZoneReader reads the time zone a person set (store.PeopleReader).
type ZoneReader interface {
	GetPersonZone(ctx context.Context, userKey string) (store.PersonZone, bool, error)
}

// Config configures the supervisor.
type Config struct {
	// Kernel is the log. Required.
	Kernel *kernel.Kernel
	// Models answers. Required.
	Models *models.Registry
	// Tools runs the model's tool calls (gates, journal, fencing). Defaults
	// to a worker with no tools.
	Tools *toolworker.Worker
	// Memory remembers what people tell the agent: after a turn answers,
	// its rule pass runs (names, contacts, preferences) and the model pass
	// is queued. Defaults to nil: nothing is remembered.
	Memory *memory.Memory
	// Knowledge is the knowledge library (*knowledge.Library): before a
	// turn's first request, the passages that bear on the question are
	// given fenced as data (knowledge.go). Defaults to nil: no library.
	Knowledge Recaller
	// ChatSettings are the choices each chat made (/model, /think, the web
	// chat's selector), read for a turn whose newest input chose no model
	// or whose inputs chose no thinking level: an input's own choice wins.
	// Defaults to nil: none, the configured model and no level.
	ChatSettings ChatSettingsReader
	// ChatModels are the selections a chat may pick: a stored selection
	// not among them (the list changed since it was picked) is ignored,
	// and the configured model answers. Defaults to empty: none counts.
	ChatModels models.ChatChoices
	// Workers bounds how many attempts run at once. Defaults to 4.
	Workers int
	// Claimers is how many claims may be in flight at once. A claim is
	// a transaction; with one claimer, turns start no faster than
	// claims commit one after another, and a busy replica's workers
	// wait on it. Each claimer polls on its own when idle. Defaults to
	// 2 (never more than Workers).
	Claimers int
	// Owner names this worker pool in leases. Defaults to host-pid-random.
	Owner string
	// Poll is the fallback wait between claims when no wake-up comes.
	// Defaults to 1s.
	Poll time.Duration
	// Location is the gateway's time zone (GATEHOUSE_TIMEZONE): the
	// base prompt's date and time are in it for a person who set none of
	// their own (Zones), and for web and API input. Defaults to the
	// server's (time.Local).
	Location *time.Location
	// Zones holds each person's own time zone (/tz); the store is one.
	// A turn reads the zone of the person it answers from it, so every
	// replica dates the same turn alike. Defaults to nil: everyone has
	// Location.
	Zones ZoneReader
	// BasePrompt opens every request. Defaults to DefaultBasePrompt.
	BasePrompt string
	// SpoolDir keeps answers the database refused to save, until the run's
	// next attempt commits them. Defaults to empty: no spool.
	SpoolDir string
	// DailyBudgetUSD caps what one user's turns may spend on model calls
	// in a day (in Location): once reached, model calls stop and the user
	// is told. Defaults to 0: no cap.
	DailyBudgetUSD float64
	// BudgetAlertShare is the share of the cap at which an alert notice is
	// committed for the admin. Defaults to 0.8.
	BudgetAlertShare float64
	// TurnTimeout bounds each running part of a turn (an attempt); time
	// spent waiting for a person is between attempts and not counted. A
	// turn over it stops and says so. Defaults to 0: no limit.
	TurnTimeout time.Duration
	// MaxModelRequests bounds model requests in one attempt. Defaults to 16.
	MaxModelRequests int
	// ContextWindow is the model's window in tokens. Defaults to 128000.
	ContextWindow int
	// CompactionShare is the share of the window above which older
	// messages are summarised. Defaults to 0.8.
	CompactionShare float64
	// KeepRecent is how many entries compaction keeps verbatim (at least).
	// Defaults to 8.
	KeepRecent int
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Now is the clock for the base prompt. Defaults to time.Now.
	Now func() time.Time
}

func (c Config) withDefaults() (Config, error) {
	if c.Kernel == nil || c.Models == nil {
		return c, gh.Errorf(gh.CodeInvalid, "supervisor: Kernel and Models are required")
	}
	if c.Tools == nil {
		c.Tools = toolworker.New(toolworker.Config{Kernel: c.Kernel, Logger: c.Logger})
	}
	if c.Workers <= 0 {
		c.Workers = 4
	}
	if c.Claimers <= 0 {
		c.Claimers = 2
	}
	c.Claimers = min(c.Claimers, c.Workers)
	if c.Owner == "" {
		c.Owner = kernel.NewOwner()
	}
	if c.Poll <= 0 {
		c.Poll = time.Second
	}
	if c.Location == nil {
		c.Location = time.Local
	}
	if c.BasePrompt == "" {
		c.BasePrompt = DefaultBasePrompt
	}
	if c.MaxModelRequests <= 0 {
		c.MaxModelRequests = 16
	}
	if c.ContextWindow <= 0 {
		c.ContextWindow = 128000
	}
	if c.CompactionShare <= 0 || c.CompactionShare >= 1 {
		c.CompactionShare = 0.8
	}
	if c.BudgetAlertShare <= 0 || c.BudgetAlertShare > 1 {
		c.BudgetAlertShare = 0.8
	}
	if c.KeepRecent <= 0 {
		c.KeepRecent = 8
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c, nil
}

// Supervisor is the worker pool. Start it; Stop drains it.
type Supervisor struct {
	cfg   Config
	k     *kernel.Kernel
	log   *slog.Logger
	spool *spool.Spool // answers the database refused, for the next attempt

	stopClaiming context.CancelFunc
	attemptsCtx  context.Context
	cancelAll    context.CancelCauseFunc
	wg           sync.WaitGroup
	loopDone     chan struct{}
	health       health
}

// errDraining cancels attempts that were still running when a drain ran
// out of time: they give their run back instead of settling it.
var errDraining = errors.New("supervisor draining")

// New builds a supervisor; nothing runs until Start.
func New(cfg Config) (*Supervisor, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Supervisor{cfg: cfg, k: cfg.Kernel, log: cfg.Logger, spool: spool.New(cfg.SpoolDir),
		health: health{resume: make(chan struct{}, 1), more: make(chan struct{}, 1)}}, nil
}

// Owner is the name this pool claims runs under.
func (s *Supervisor) Owner() string { return s.cfg.Owner }

// Start begins claiming runs in the background.
func (s *Supervisor) Start(ctx context.Context) error {
	claimCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	s.stopClaiming = stop
	s.attemptsCtx, s.cancelAll = context.WithCancelCause(context.WithoutCancel(ctx))
	s.loopDone = make(chan struct{})
	// The claimers share the worker slots.
	slots := make(chan struct{}, s.cfg.Workers)
	// Alive from its start: /livez answers as soon as the process says it
	// started, and the heartbeat goes stale only if the loop never goes
	// round.
	s.health.tick(time.Now())
	var loops sync.WaitGroup
	for i := range s.cfg.Claimers {
		loops.Go(func() { s.loop(claimCtx, slots, i == 0) })
	}
	go func() { loops.Wait(); close(s.loopDone) }()
	s.log.Info("supervisor started", "owner", s.cfg.Owner, "workers", s.cfg.Workers)
	return nil
}

// Stop drains: no new claims; attempts in flight finish until ctx ends,
// then are cancelled and give their runs back for any replica to take.
func (s *Supervisor) Stop(ctx context.Context) error {
	s.stopClaiming()
	<-s.loopDone
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		s.cancelAll(errDraining)
		<-done
		return ctx.Err()
	}
}

// loop claims runs while a worker slot is free; Claimers of them run. The
// primary one answers wake-ups and polls; the others claim only while a
// claim saw more runs waiting (a backlog), so one wake-up does not send
// every claimer to the database for a single run.
func (s *Supervisor) loop(ctx context.Context, slots chan struct{}, primary bool) {
	backoff := s.cfg.Poll
	woken := false
	// The ticker keeps the heartbeat while every worker is busy or claims
	// are paused: a busy pool is alive.
	alive := time.NewTicker(s.cfg.Poll)
	defer alive.Stop()
	for {
		if primary {
			// The heartbeat is the primary's: it is the one that must
			// answer wake-ups.
			s.health.tick(time.Now())
		}
		if s.health.paused.Load() {
			select {
			case <-s.health.resume:
			case <-alive.C:
			case <-ctx.Done():
				return
			}
			continue
		}
		select {
		case slots <- struct{}{}:
		case <-alive.C:
			continue
		case <-ctx.Done():
			return
		}
		wake := s.k.WakeC()
		lease, ok, err := s.k.ClaimAfter(ctx, s.cfg.Owner, woken)
		woken = false
		if err != nil || !ok {
			<-slots
			if ctx.Err() != nil {
				return
			}
			wait := s.cfg.Poll
			if err != nil {
				// The database is unavailable: back off, and say so once
				// per failure, not per spin.
				s.log.Error("claim failed", "err", err, "retry_in", backoff)
				wait, backoff = backoff, min(backoff*2, 30*time.Second)
			}
			woken = s.idle(ctx, primary, wake, wait)
			continue
		}
		backoff = s.cfg.Poll
		s.wg.Add(1)
		s.health.running.Add(1)
		go func() {
			defer s.wg.Done()
			defer func() { <-slots }()
			defer s.health.running.Add(-1)
			s.attempt(lease)
		}()
		if lease.More {
			// Another run is waiting: claim it now, and let another
			// claimer start on the one after it.
			select {
			case s.health.more <- struct{}{}:
			default:
			}
			woken = true
			continue
		}
		// Nothing else looked claimable at the claim: wait for a wake-up
		// (one that came since wake was taken ends the wait at once) or
		// the poll, rather than ask again now.
		woken = s.idle(ctx, primary, wake, s.cfg.Poll)
	}
}
