package gates

import (
	"context"
	"log/slog"
	"sync"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/internal/sweeper"
	"github.com/gatehouse/gatehouse/kernel"
	"github.com/gatehouse/gatehouse/store"
)

// Config configures a Service.
type Config struct {
	// Registry arbitrates presses. Required.
	Registry Registry
	// Kernel commits gate.decided. Required; its store is the one the
	// registry decides in (Store).
	Kernel *kernel.Kernel
	// Store is the store holding the gate rows. Required; the kernel's
	// store.
	Store store.Store
	// Sweep is how often the sweeper expires due gates and logs decisions
	// a crash left unlogged. Defaults to 1s.
	Sweep time.Duration
	// SweepBatch is how many gates one sweep query returns; a full batch
	// is followed at once by another. Defaults to 100.
	SweepBatch int
	// Needed is how many distinct people must approve a gate of tool
	// (GATEHOUSE_APPROVERS_NEEDED): approvals short of it are recorded
	// (store AddGateApproval) and logged as gate.approval, and leave the
	// gate pending; the approval that completes it decides, through the
	// one compare-and-set. Defaults to 1 for every tool.
	Needed func(tool string) int
	// Logger receives sweeper failures. Defaults to slog.Default().
	Logger *slog.Logger
	// Now is the clock that decides which gates are due. Defaults to
	// time.Now; it should be the registry's clock.
	Now func() time.Time
}

func (c Config) withDefaults() Config {
	if c.Sweep <= 0 {
		c.Sweep = time.Second
	}
	if c.SweepBatch <= 0 {
		c.SweepBatch = 100
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Service decides gates and makes sure every decision is in the log. It is
// safe for concurrent use, and any number of replicas may run one over
// the same database (and Redis).
type Service struct {
	cfg Config
	st  store.Store

	fmu     sync.Mutex
	flights map[string]*flight
	// logged remembers gates this process saw logged (a decided gate never
	// changes), so presses that the registry answers "not yet logged" in
	// the moment before it learnt otherwise cost no transaction.
	logged map[string]gh.Gate

	sweeper sweeper.Sweeper

	// kmu guards kinds, which the kinds' packages fill after
	// construction (Register).
	kmu   sync.RWMutex
	kinds map[string]Kind
}

// Register makes k log and carry out the decisions of gates of kind: a
// kind's package is built with the service and registers itself after
// (incidents.New, uploads.New), so the wiring has no cycle to hide.
// Register before the first gate of kind is decided.
//
// The kinds of a run (gh.GateKindApproval, gh.GateKindClarify) are the
// service's own: their decision's one effect is to resume the run
// (gate.decided with an edge commit, which queues it), and the tool
// worker carries out the call when the run reads the decision.
func (s *Service) Register(kind string, k Kind) {
	if !gh.GateOutsideRun(kind) {
		panic("gates: Register of " + kind + ": a run's gates are the service's own")
	}
	s.kmu.Lock()
	defer s.kmu.Unlock()
	if s.kinds == nil {
		s.kinds = map[string]Kind{}
	}
	s.kinds[kind] = k
}

// kind is the registered Kind of gates of kind, or nil for a run's.
func (s *Service) kind(kind string) (Kind, error) {
	if !gh.GateOutsideRun(kind) {
		return nil, nil
	}
	s.kmu.RLock()
	defer s.kmu.RUnlock()
	if k := s.kinds[kind]; k != nil {
		return k, nil
	}
	return nil, gh.Errorf(gh.CodeInternal, "gates: no package registered for gates of kind %q", kind)
}

// flight is one commit of a gate's decision in progress in this process:
// presses that find the same gate unlogged wait for it instead of racing
// it with transactions of their own.
type flight struct {
	done chan struct{}
	gate gh.Gate
	err  error
}

// NewService returns a service on cfg.Kernel, which it closes the gates
// of cancelled turns for (kernel.UseGateCloser); Start runs its sweeper.
func NewService(cfg Config) *Service {
	if cfg.Registry == nil || cfg.Kernel == nil || cfg.Store == nil {
		panic("gates: NewService needs a Registry, a Kernel and a Store")
	}
	cfg = cfg.withDefaults()
	s := &Service{cfg: cfg, st: cfg.Store, flights: map[string]*flight{}, logged: map[string]gh.Gate{}}
	// A cancel closes its turn's gates through the service: the one
	// compare-and-set decides between it and a press.
	cfg.Kernel.UseGateCloser(s)
	return s
}

// Decide claims the gate and makes sure the decision is in the log: a
// gate.decided event (payload gh.GateDecided, idempotency key "gate:"+id)
// committed with kernel.EdgeCommitTx together with store MarkGateLogged in
// ONE store transaction; the edge commit queues the session's run. The
// winner does this; a loser whose gate is decided but not yet logged does
// it too (idempotent by the key), so a crash between claim and commit is
// repaired by the next press or by the sweeper. After the commit it calls
// kernel.Notify(sessionID).
//
// The transaction first compare-and-sets the decision in SQL (store
// DecideGate, with the decision's own time), and the event is written
// from the SQL row: SQL is the truth, so the log can never disagree with
// it. With a registry that implements [DeferredClaimer] (Redis), that
// compare-and-set is the winner's only write, and a decision costs one
// transaction. Presses of one gate in this process share one commit: a
// loser that finds the decision being logged waits for it rather than
// racing it.
//
// It returns the gate as decided and whether this press decided it. A
// client cannot ask for expired (CodeInvalid): only the clock expires a
// gate. With a nil error the decision is in the log. The SQL
// compare-and-set is the decision, and a registry's (Redis's) only a
// proposal: with an error, the gate is decided only when SQL holds that
// decision (made, not yet logged: the next press or the sweeper logs it);
// otherwise it is the zero gate and the press must not be reported as
// deciding anything.
//
// An approval of a gate that needs several people's (Config.Needed) that
// leaves it short comes back with the gate still pending, its Approvals
// listing who approved so far, won false and a nil error: nothing was
// decided and nothing runs.
func (s *Service) Decide(ctx context.Context, id string, d gh.Decision) (gh.Gate, bool, error) {
	if d.State == gh.GateExpired {
		return gh.Gate{}, false, gh.Errorf(gh.CodeInvalid, "a gate expires by its timeout; a press cannot expire it")
	}
	if s.countsApprovals(d) {
		if err := CheckID(id); err != nil {
			return gh.Gate{}, false, err
		}
		g, err := s.st.GetGate(ctx, id)
		if err != nil {
			return gh.Gate{}, false, err
		}
		if g, short, err := s.approve(ctx, g, d); short || err != nil {
			return g, false, err
		}
	}
	return s.decide(ctx, id, d)
}

// countsApprovals reports whether d may be one of several approvals.
func (s *Service) countsApprovals(d gh.Decision) bool {
	return d.State == gh.GateApproved && s.cfg.Needed != nil
}

// approve records d, an approval of g, when g needs more people's than
// have approved it with d (see Config.Needed): short is true when the
// gate stays pending, and the gate comes back with its approvals. Else
// d is the decision, and the caller makes it.
func (s *Service) approve(ctx context.Context, g gh.Gate, d gh.Decision) (gh.Gate, bool, error) {
	n, now := s.cfg.Needed(g.Tool), Clock(s.cfg.Now)
	if n <= 1 || g.State != gh.GatePending || !g.ExpiresAt.After(now) {
		// One approval decides; a decided gate answers as it was; a
		// gate past its time expires in the claim.
		return g, false, nil
	}
	if err := ValidateDecision(g, d, now); err != nil {
		return gh.Gate{}, false, err
	}
	a := gh.GateApproval{Person: d.Person, By: d.By, Surface: d.Surface, Needed: n, At: now}
	if a.Person == "" {
		a.Person = d.By
	}
	var cur gh.Gate
	var wrote []kernel.Committed
	err := s.st.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
		wrote = nil
		c, added, err := tx.AddGateApproval(ctx, g.ID, a)
		if err != nil {
			return err
		}
		cur = c
		if !added {
			return nil
		}
		// Each approval short of the count is an event of the session's
		// log, outside any run: it wakes nothing, and the surfaces edit
		// the cards to show it.
		cs, err := s.cfg.Kernel.OutsideCommitTx(ctx, tx, c.SessionID, gh.GateApprovalEvent(c, a, len(c.Approvals), n))
		if err != nil {
			return err
		}
		for _, x := range cs {
			if !x.Duplicate {
				wrote = append(wrote, x)
			}
		}
		return nil
	})
	if err != nil {
		return gh.Gate{}, false, err
	}
	if wrote != nil {
		s.cfg.Kernel.Publish(cur.SessionID, wrote)
	}
	if cur.State != gh.GatePending {
		// Decided meanwhile: the claim below answers with that decision.
		return cur, false, nil
	}
	for _, x := range cur.Approvals {
		if x.Person == a.Person {
			return cur, true, nil // recorded now, or before: still short
		}
	}
	return cur, false, nil // this approval completes the count
}

// DecideRead is Decide for a gate the caller has just read (to check whose
// it is): with the SQL registry, the press needs no second read of it.
func (s *Service) DecideRead(ctx context.Context, g gh.Gate, d gh.Decision) (gh.Gate, bool, error) {
	if d.State == gh.GateExpired {
		return gh.Gate{}, false, gh.Errorf(gh.CodeInvalid, "a gate expires by its timeout; a press cannot expire it")
	}
	if s.countsApprovals(d) {
		cur, short, err := s.approve(ctx, g, d)
		if short || err != nil {
			return cur, false, err
		}
		if cur.ID != "" {
			g = cur
		}
	}
	sr, ok := s.cfg.Registry.(*sqlRegistry)
	if !ok {
		return s.decide(ctx, g.ID, d)
	}
	claimed, won, err := sr.claimRead(g, d)
	return s.settle(ctx, g.ID, claimed, won, err)
}

func (s *Service) decide(ctx context.Context, id string, d gh.Decision) (gh.Gate, bool, error) {
	if err := CheckID(id); err != nil {
		return gh.Gate{}, false, err
	}
	claim := s.cfg.Registry.Claim
	if dc, ok := s.cfg.Registry.(DeferredClaimer); ok {
		// SQL agrees in the log commit below: one transaction.
		claim = dc.ClaimDeferred
	}
	g, won, err := claim(ctx, id, d)
	return s.settle(ctx, id, g, won, err)
}

// settle makes sure a claim's decision is in the log (see Decide).
func (s *Service) settle(ctx context.Context, id string, g gh.Gate, won bool, err error) (gh.Gate, bool, error) {
	if err != nil {
		return g, won, err
	}
	if g.State == gh.GatePending {
		return g, false, gh.Errorf(gh.CodeInternal, "registry left gate %q pending after a claim", id)
	}
	if g.Committed {
		return g, won, nil
	}
	logged, err := s.ensureCommitted(ctx, g)
	if err != nil {
		return s.unlogged(ctx, g, won, err)
	}
	if !SameDecision(logged, g) {
		// SQL is the truth; the registry's answer was stale.
		won = false
		s.markCommitted(ctx, logged)
	}
	return logged, won, nil
}

// unlogged answers a press whose decision could not be logged (err). The
// SQL compare-and-set is the decision: the press hears one only if SQL
// holds it, so what a person is told can never be lost with the
// registry's copy (a Redis restart) or contradicted by a later press.
// Failing the log commit, it compare-and-sets the claim in SQL on its own
// (the Redis registry's claim, or the SQL registry's deferred one, made
// nothing durable yet); if that works, the gate comes back decided as SQL
// has it, with err, and the sweeper logs it. If SQL cannot be reached
// either, the press gets err and a zero gate: nothing it may report as
// decided. A Redis claim left behind is only a proposal, which the next
// press carries into SQL or SQL overrules.
func (s *Service) unlogged(ctx context.Context, g gh.Gate, won bool, err error) (gh.Gate, bool, error) {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), commitTimeout)
	defer cancel()
	sg, _, serr := s.st.DecideGate(sctx, store.GateDecision{ID: g.ID, Decision: DecisionOf(g), Now: g.DecidedAt})
	if serr != nil || sg.State == gh.GatePending {
		return gh.Gate{}, false, err
	}
	if !SameDecision(sg, g) {
		// SQL was decided otherwise: that is the decision.
		s.markCommitted(sctx, sg)
		return sg, false, err
	}
	return sg, won, err
}

const (
	loggedCacheSize = 4096
	// commitTimeout bounds a log commit, which does not end with the
	// context of the press that leads it.
	commitTimeout = 30 * time.Second
)

// ensureCommitted commits g's decision, or waits for this process's commit of
// it already in flight.
func (s *Service) ensureCommitted(ctx context.Context, g gh.Gate) (gh.Gate, error) {
	var lastErr error
	for range 3 {
		s.fmu.Lock()
		if lg, ok := s.logged[g.ID]; ok {
			s.fmu.Unlock()
			return lg, nil
		}
		f := s.flights[g.ID]
		if f == nil {
			f = &flight{done: make(chan struct{})}
			s.flights[g.ID] = f
			s.fmu.Unlock()
			// A decision made is logged even if the press that leads
			// the commit goes away (a client that disconnects).
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), commitTimeout)
			defer cancel()
			f.gate, f.err = s.commit(cctx, g)
			s.fmu.Lock()
			delete(s.flights, g.ID)
			if f.err == nil {
				if len(s.logged) >= loggedCacheSize {
					for k := range s.logged { // forget an arbitrary one
						delete(s.logged, k)
						break
					}
				}
				s.logged[g.ID] = f.gate
			}
			s.fmu.Unlock()
			close(f.done)
			if f.err == nil {
				// After the waiting presses are released: this process
				// answers them from memory meanwhile.
				s.markCommitted(cctx, f.gate)
			}
			return f.gate, f.err
		}
		s.fmu.Unlock()
		select {
		case <-f.done:
			if f.err == nil {
				return f.gate, nil
			}
			// The leading press failed: try again, leading this time if
			// nobody else is.
			lastErr = f.err
		case <-ctx.Done():
			return g, gh.Wrap(gh.CodeUnavailable, ctx.Err(), "gate %q: waiting for its decision to be logged", g.ID)
		}
	}
	return g, lastErr
}

// commit makes SQL agree with g's decision and logs it, in one transaction:
// lock the session (its tenant, and the lock order of every writer),
// compare-and-set the gate (a no-op when SQL is decided already: the SQL
// registry, a Redis Claim, an earlier commit), log the decision from the
// SQL row (logTx), mark it logged.
func (s *Service) commit(ctx context.Context, g gh.Gate) (gh.Gate, error) {
	at := g.DecidedAt
	if at.IsZero() {
		at = Clock(s.cfg.Now)
	}
	return s.decideAndLog(ctx, g, store.GateDecision{ID: g.ID, Decision: DecisionOf(g), Now: at}, false)
}

// decideAndLog compare-and-sets d in SQL and logs the decision SQL then
// holds, in one transaction; with onlyIfWon, a gate decided otherwise
// before is left to the commit of that decision. Everything after the
// commit (publish, the kind's Decided, the registry's copy) is done here
// too, so every decision — a press, the clock, a retired card — ends the
// same way.
func (s *Service) decideAndLog(ctx context.Context, g gh.Gate, d store.GateDecision, onlyIfWon bool) (gh.Gate, error) {
	// The session's tenant, from the kernel's memory when it has it. The
	// transaction then takes the gate's row before the session's (the
	// other writers take the session's first): a cancel closing the
	// gate at the same moment can deadlock with it, which the store
	// detects and retries.
	tenant, err := s.cfg.Kernel.SessionTenant(ctx, g.SessionID)
	if err != nil {
		return g, err
	}
	var out gh.Gate
	var wrote []kernel.Committed
	err = s.st.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
		wrote = nil
		cur, won, err := tx.DecideGate(ctx, d)
		if err != nil {
			return err
		}
		out = cur
		if cur.Committed || (onlyIfWon && !won) || cur.State == gh.GatePending {
			return nil
		}
		wrote, err = s.logTx(ctx, tx, tenant, cur)
		if err != nil {
			return err
		}
		out.Committed = true
		return nil
	})
	if err != nil {
		return g, err
	}
	if wrote != nil {
		// With the event: a stream in this process sends it unread.
		s.cfg.Kernel.Publish(out.SessionID, wrote)
		if k, _ := s.kind(out.Kind); k != nil {
			k.Decided(ctx, out)
		}
	}
	return out, nil
}

// logTx logs g's decision, made in tx, and marks it logged: a run's gate
// with gate.decided in an edge commit, which queues the run to resume; a
// gate outside a run by its kind (Kind.CommitDecisionTx), which also does
// what the decision does there and queues nothing. It returns what it
// committed new (nil for a decision logged before).
func (s *Service) logTx(ctx context.Context, tx store.Tx, tenant string, g gh.Gate) ([]kernel.Committed, error) {
	k, err := s.kind(g.Kind)
	if err != nil {
		return nil, err
	}
	var wrote []kernel.Committed
	if k != nil {
		if wrote, err = k.CommitDecisionTx(ctx, tx, g); err != nil {
			return nil, err
		}
	} else {
		c, err := s.cfg.Kernel.EdgeCommitTx(ctx, tx, kernel.EdgeInput{Tenant: tenant, SessionID: g.SessionID, Event: gh.GateDecidedEvent(g)})
		if err != nil {
			return nil, err
		}
		if !c.Duplicate {
			wrote = []kernel.Committed{c}
		}
	}
	return wrote, tx.MarkGateCommitted(ctx, g.ID)
}

// Kind logs and carries out the decisions of one kind of gate opened
// outside a run (Register; packages incidents and gateway/uploads
// implement it).
type Kind interface {
	// CommitDecisionTx commits gate.decided for g, decided in tx
	// (gh.GateDecidedEvent), and what the decision does there (Close
	// ends the run); what it committed is published after the commit.
	// A decision logged before returns nothing.
	CommitDecisionTx(ctx context.Context, tx store.Tx, g gh.Gate) ([]kernel.Committed, error)
	// Decided is told, after the commit, of a decision this process
	// logged: what runs outside the transaction (a diagnosis, adding a
	// file) starts here.
	Decided(ctx context.Context, g gh.Gate)
}

// markCommitted tells a registry that keeps its own copy that g is logged.
func (s *Service) markCommitted(ctx context.Context, g gh.Gate) {
	if m, ok := s.cfg.Registry.(CommitMarker); ok {
		if err := m.MarkCommitted(ctx, g); err != nil {
			s.cfg.Logger.Warn("gates: registry did not record that a decision is logged", "gate", g.ID, "err", err)
		}
	}
}

// SweepOnce expires the gates due now and logs the decisions a crash left
// unlogged. It carries on past a failing gate and returns the first
// error. Replicas may sweep at the same time: the compare-and-set and the
// idempotency key make every gate decided and logged once.
func (s *Service) SweepOnce(ctx context.Context) error {
	var first error
	fail := func(msg string, err error, attrs ...any) {
		if ctx.Err() != nil {
			return // stopping: not a failure of the gate
		}
		s.cfg.Logger.Warn(msg, append(attrs, "err", err)...)
		if first == nil {
			first = err
		}
	}
	for range 10 {
		due, err := s.st.DueGates(ctx, Clock(s.cfg.Now), s.cfg.SweepBatch)
		if err != nil {
			fail("gates: sweep: list due gates", err)
			break
		}
		progress := false
		for _, g := range due {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			got, _, err := s.decide(ctx, g.ID, Expiry)
			if err != nil {
				fail("gates: sweep: expire gate", err, "gate", g.ID)
				continue
			}
			progress = progress || got.State != gh.GatePending
		}
		if len(due) < s.cfg.SweepBatch || !progress {
			break
		}
	}
	for range 10 {
		unlogged, err := s.st.UnloggedGates(ctx, s.cfg.SweepBatch)
		if err != nil {
			fail("gates: sweep: list unlogged gates", err)
			break
		}
		progress := false
		for _, g := range unlogged {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if _, err := s.ensureCommitted(ctx, g); err != nil {
				fail("gates: sweep: log decision", err, "gate", g.ID)
				continue
			}
			progress = true
		}
		if len(unlogged) < s.cfg.SweepBatch || !progress {
			break
		}
	}
	if first == nil {
		first = ctx.Err()
	}
	return first
}

// Start runs the sweeper: a sweep at once, then every Sweep, until Stop or
// the end of ctx.
func (s *Service) Start(ctx context.Context) error {
	return s.sweeper.Start(ctx, "gates", s.cfg.Sweep, func(ctx context.Context) { _ = s.SweepOnce(ctx) })
}

// Stop stops the sweeper and waits for the sweep in progress, or for the
// end of ctx. A stopped service can be started again; Decide works
// whether or not the sweeper runs.
func (s *Service) Stop(ctx context.Context) error { return s.sweeper.Stop(ctx) }

// Seeder is implemented by a registry that keeps its own copy of a gate
// (Redis): seeding it when the gate opens spares the first press a database
// read. A registry that is not seeded seeds itself on the first press.
type Seeder interface {
	Seed(ctx context.Context, g gh.Gate) error
}

// seed tells the registry a gate was opened (committed). It never fails
// the caller: a gate that could not be seeded now is seeded on its first
// press.
func (s *Service) seed(ctx context.Context, g gh.Gate) {
	if sd, ok := s.cfg.Registry.(Seeder); ok {
		if err := sd.Seed(ctx, g); err != nil {
			s.cfg.Logger.Warn("gate not seeded in the registry; its first press will", "gate", g.ID, "err", err)
		}
	}
}
