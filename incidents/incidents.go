package incidents

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/gates"
	"github.com/gatehouse/gatehouse/internal/sweeper"
	"github.com/gatehouse/gatehouse/kernel"
	"github.com/gatehouse/gatehouse/store"
)

// Config configures a Service.
type Config struct {
	// Kernel commits the incidents' events. Required.
	Kernel *kernel.Kernel
	// Store holds the runs and the gate rows: the kernel's store. Required.
	Store store.Store
	// StuckAfter is how long a run's step may stay the same before it is
	// an incident. Defaults to 10m.
	StuckAfter time.Duration
	// Sweep is how often the sweeper looks. Defaults to StuckAfter/10,
	// between 1s and 30s.
	Sweep time.Duration
	// CardTTL is how long an incident's card waits for a press before it
	// expires (the run is then left as it is). Defaults to 24h.
	CardTTL time.Duration
	// Diagnose asks a model about a stuck run and returns its answer. nil:
	// a Diagnose press is answered that no model is configured.
	Diagnose func(ctx context.Context, prompt string) (string, error)
	// DiagnoseTimeout bounds one diagnosis. Defaults to 2m.
	DiagnoseTimeout time.Duration
	// Gates opens and decides the cards (the gate's one home); the
	// service registers itself with it for gh.GateKindIncident. Required.
	Gates *gates.Service
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Now defaults to time.Now.
	Now func() time.Time
}

func (c Config) withDefaults() Config {
	if c.StuckAfter <= 0 {
		c.StuckAfter = 10 * time.Minute
	}
	if c.Sweep <= 0 {
		c.Sweep = min(max(c.StuckAfter/10, time.Second), 30*time.Second)
	}
	if c.CardTTL <= 0 {
		c.CardTTL = 24 * time.Hour
	}
	if c.DiagnoseTimeout <= 0 {
		c.DiagnoseTimeout = 2 * time.Minute
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Service opens incidents for stuck runs, carries out their decisions
// and lists them. Any number of replicas may run one over one database.
type Service struct {
	cfg Config
	st  store.Store
	k   *kernel.Kernel

	sweeper sweeper.Sweeper
	// diagnoses are the diagnoses in flight, waited for by Stop.
	diagnoses sync.WaitGroup
}

// New returns a service, registered with cfg.Gates as the kind of
// incident cards; Start runs its sweeper.
func New(cfg Config) *Service {
	if cfg.Kernel == nil || cfg.Store == nil || cfg.Gates == nil {
		panic("incidents: New needs a Kernel, a Store and Gates")
	}
	cfg = cfg.withDefaults()
	s := &Service{cfg: cfg, st: cfg.Store, k: cfg.Kernel}
	cfg.Gates.Register(gh.GateKindIncident, s)
	return s
}

// card is what an incident's gate records about its run (its Arguments).
type card struct {
	RunID       int64     `json:"runId"`
	Epoch       int64     `json:"epoch"`
	Step        string    `json:"step"`
	StepStarted time.Time `json:"stepStartedAt"`
	// N counts the cards of this run and epoch: a Diagnose opens the next.
	N int `json:"n"`
}

func cardOf(g gh.Gate) (card, error) {
	var c card
	if err := json.Unmarshal(g.Arguments, &c); err != nil {
		return c, gh.Wrap(gh.CodeInternal, err, "incident %s: read its card", g.ID)
	}
	return c, nil
}

// cardFor is the n-th card of run r as it stands.
func cardFor(r gh.Run, n int) card {
	return card{RunID: r.ID, Epoch: r.Epoch, Step: r.Step, StepStarted: r.StepStarted, N: n}
}

// key names card c: its run, epoch and step (a run stuck again after it
// moved on gets cards of its own) and its number (a Diagnose opens the
// next). It is the card's ToolCallID.
func key(c card) string {
	return "incident:" + strconv.FormatInt(c.RunID, 10) + ":" + strconv.FormatInt(c.Epoch, 10) + ":" +
		strconv.FormatInt(c.StepStarted.UnixMicro(), 10) + ":" + strconv.Itoa(c.N)
}

// openedKey is the key of card c's gate.opened: a gate's, for the "call"
// its ToolCallID names, so it is found as any gate's event is.
func openedKey(c card) string { return gh.GateOpenedKey(key(c), 1) }

// gateID names card c of a session: every replica names it alike.
func gateID(sessionID string, c card) string {
	h := sha256.Sum256([]byte(sessionID + "\x00" + key(c)))
	return "i_" + hex.EncodeToString(h[:10])
}

// stepWords says a step as a person reads it: "`web_fetch`", "a model call".
func stepWords(step string) string {
	switch {
	case step == "model":
		return "a model call"
	case strings.HasPrefix(step, "tool:"):
		return "`" + strings.TrimPrefix(step, "tool:") + "`"
	case step == "start" || step == "":
		return "the turn's start"
	}
	return "`" + step + "`"
}

// minutes says d in whole minutes, or seconds under one.
func minutes(d time.Duration) string {
	if d < time.Minute {
		if n := int(d.Round(time.Second) / time.Second); n != 1 {
			return fmt.Sprintf("%d seconds", n)
		}
		return "1 second"
	}
	m := int(d.Round(time.Minute) / time.Minute)
	if m == 1 {
		return "1 minute"
	}
	return fmt.Sprintf("%d minutes", m)
}

func (s *Service) now() time.Time { return s.cfg.Now().UTC().Truncate(time.Microsecond) }

// open opens card c of run r unless it is open already, and returns it
// (opened false when it was).
func (s *Service) open(ctx context.Context, r gh.Run, c card) (gh.Gate, bool, error) {
	var g gh.Gate
	var wrote []kernel.Committed
	err := s.k.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
		var err error
		g, wrote, err = s.openTx(ctx, tx, r, c)
		return err
	})
	if err != nil || len(wrote) == 0 {
		return g, false, err
	}
	s.cfg.Gates.Opened(ctx, g, wrote)
	s.cfg.Logger.Warn("a turn is stuck: incident opened", "session", r.SessionID, "run", r.ID, "step", r.Step, "since", r.StepStarted, "incident", g.ID)
	return g, true, nil
}

// openTx opens card c of r in tx through the gates service: its
// gate.opened event and its gate row. A card already committed is left
// as it is (nothing written).
func (s *Service) openTx(ctx context.Context, tx store.Tx, r gh.Run, c card) (gh.Gate, []kernel.Committed, error) {
	now := s.now()
	args, _ := json.Marshal(c)
	text := fmt.Sprintf("This turn has made no progress for %s (last step: %s started %s).",
		minutes(now.Sub(c.StepStarted)), stepWords(c.Step), c.StepStarted.UTC().Format("15:04 UTC"))
	if c.N > 1 {
		text = fmt.Sprintf("This turn is still stuck (last step: %s started %s).", stepWords(c.Step), c.StepStarted.UTC().Format("15:04 UTC"))
	}
	requesters, err := requestersOf(ctx, tx, r.SessionID)
	if err != nil {
		return gh.Gate{}, nil, err
	}
	g := gh.Gate{
		ID: gateID(r.SessionID, c), SessionID: r.SessionID, RunID: r.ID,
		ToolCallID: key(c), Tool: gh.GateKindIncident, Arguments: args, Kind: gh.GateKindIncident,
		Question: text, Options: []string{gh.IncidentClose, gh.IncidentDiagnose},
		State: gh.GatePending, ExpiresAt: now.Add(s.cfg.CardTTL), Created: now,
	}
	cs, err := s.cfg.Gates.OpenOutsideTx(ctx, tx, gates.Opening{Gate: g, Card: gh.GateOpened{Requesters: requesters}, Key: openedKey(c)})
	return g, cs, err
}

// requestersOf finds who the stuck turn answers: the senders of the
// inputs its newest assistant message presented. They may decide its card
// on a chat platform, as they may its approvals.
func requestersOf(ctx context.Context, tx store.Tx, sessionID string) ([]string, error) {
	tail, err := tailEvents(ctx, tx, sessionID)
	if err != nil {
		return nil, err
	}
	users := map[int64]gh.UserMessage{}
	var inputs []int64
	for _, e := range tail {
		switch e.Kind {
		case gh.KindUserMessage:
			var m gh.UserMessage
			if json.Unmarshal(e.Payload, &m) == nil {
				users[e.Seq] = m
				inputs = []int64{e.Seq} // a turn with no answer yet answers its newest input
			}
		case gh.KindAssistantMessage:
			var a gh.AssistantMessage
			if json.Unmarshal(e.Payload, &a) == nil && len(a.InputSeqs) > 0 {
				inputs = a.InputSeqs
			}
		}
	}
	var out []string
	for _, seq := range inputs {
		if m, ok := users[seq]; ok && !slices.Contains(out, m.UserKey()) {
			out = append(out, m.UserKey())
		}
	}
	return out, nil
}

// tailLen is how much of a session's log the incident reads: the stuck
// turn's calls, their receipts and inputs are at its end.
const tailLen = 500

func tailEvents(ctx context.Context, r store.Reader, sessionID string) ([]gh.Event, error) {
	sess, err := r.GetSession(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	return r.Events(ctx, sessionID, max(0, sess.LastSeq-tailLen), tailLen)
}
