package gates

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/store"
)

// Registry arbitrates presses.
type Registry interface {
	// Claim applies d to the pending gate id: (gate as decided, true) for the
	// winner; (gate as it was decided, false) for every later press. A press
	// after the gate's expiry expires it (state expired, by "timeout") and
	// gets won=false. Unknown gate: gh CodeNotFound. A registry that cannot
	// reach its server: gh CodeUnavailable, and nothing is decided.
	//
	// A decision that does not fit the gate (see [ValidateDecision]) is a
	// CodeInvalid error and decides nothing. The SQL compare-and-set is the
	// decision: with a nil error SQL holds the gate returned. With an error
	// the gate is the zero gate; a registry that decided in a copy of its
	// own (Redis) and could not make SQL agree keeps that claim only as a
	// proposal, which the next press carries into SQL, or SQL overrules.
	Claim(ctx context.Context, id string, d gh.Decision) (gh.Gate, bool, error)
}

// DeferredClaimer is implemented by a registry that decides outside SQL
// (the Redis registry) and can leave making SQL agree to its caller.
// [Service] uses it so that a decision costs one database transaction:
// the compare-and-set in SQL (store DecideGate, with the gate's DecidedAt
// as Now) commits with gate.decided, and SQL's answer is the truth.
type DeferredClaimer interface {
	// ClaimDeferred is Claim, except that SQL may still say pending when
	// it returns a decided gate: it returns a proposal, and the caller
	// must compare-and-set it in SQL before it reports any decision (the
	// winner's or the one a later press hears); SQL's answer is the
	// decision.
	ClaimDeferred(ctx context.Context, id string, d gh.Decision) (gh.Gate, bool, error)
}

// CommitMarker is implemented by a registry that keeps its own copy of each
// decision (the Redis registry). After committing gate.decided, [Service]
// calls MarkLogged with the gate as SQL has it (decided and logged), so
// that later presses learn it is logged without asking SQL. An error is
// only logged: a later press then commits again, idempotently.
type CommitMarker interface {
	MarkCommitted(ctx context.Context, g gh.Gate) error
}

// Limits on the text of a decision.
const (
	MaxIDLen      = 200
	MaxByLen      = 200
	MaxSurfaceLen = 200
	MaxReasonLen  = 2000
	MaxAnswerLen  = 2000
)

// The decision recorded when a gate expires.
const (
	ExpiredBy      = "timeout"
	ExpiredSurface = "gateway"
)

// Expiry is the decision the clock makes on a due gate.
var Expiry = gh.Decision{State: gh.GateExpired, By: ExpiredBy, Surface: ExpiredSurface}

func checkText(what, s string, max int, required bool) error {
	switch {
	case s == "" && required:
		return gh.Errorf(gh.CodeInvalid, "%s is required", what)
	case !utf8.ValidString(s) || strings.ContainsRune(s, 0):
		return gh.Errorf(gh.CodeInvalid, "%s must be valid text without NUL characters", what)
	case utf8.RuneCountInString(s) > max:
		return gh.Errorf(gh.CodeInvalid, "%s must be at most %d characters", what, max)
	}
	return nil
}

// CheckID validates a gate id.
func CheckID(id string) error { return checkText("gate id", id, MaxIDLen, true) }

// ValidateDecision checks that d may be applied to g at now:
//
//   - State is approved or denied on an approval gate, answered on a
//     clarify gate (with an Answer that is one of the gate's Options), or
//     expired on a gate whose expiry is at or before now (the sweeper's
//     path: [Service.Decide] refuses expired from a client);
//   - By (≤ 200 characters) and Surface (≤ 200) are not empty; Reason is
//     at most 2000 characters; only an answered decision has an Answer,
//     except an approval "for this chat" (Answer gh.ScopeChat).
//
// Anything else is a CodeInvalid error. It does not look at g.State: a
// valid press on a decided gate is answered with the decision made.
func ValidateDecision(g gh.Gate, d gh.Decision, now time.Time) error {
	if err := checkText("decision by", d.By, MaxByLen, true); err != nil {
		return err
	}
	if err := checkText("decision surface", d.Surface, MaxSurfaceLen, true); err != nil {
		return err
	}
	if err := checkText("decision reason", d.Reason, MaxReasonLen, false); err != nil {
		return err
	}
	if err := checkText("decision answer", d.Answer, MaxAnswerLen, false); err != nil {
		return err
	}
	// A question and an incident are answered with one of their options.
	clarify := g.Kind == gh.GateKindClarify || g.Kind == gh.GateKindIncident
	switch d.State {
	case gh.GateApproved, gh.GateDenied:
		if clarify {
			return gh.Errorf(gh.CodeInvalid, "gate %q asks a question: answer it with one of its options, not %s", g.ID, d.State)
		}
		// "Approve for this chat" is an approval whose answer is its scope.
		if d.Answer != "" && !(d.State == gh.GateApproved && d.Answer == gh.ScopeChat) {
			return gh.Errorf(gh.CodeInvalid, "only an answered decision carries an answer")
		}
	case gh.GateAnswered:
		if !clarify {
			return gh.Errorf(gh.CodeInvalid, "gate %q is an approval: approve or deny it", g.ID)
		}
		if !slices.Contains(g.Options, d.Answer) {
			return gh.Errorf(gh.CodeInvalid, "answer %q is not one of the options of gate %q", d.Answer, g.ID)
		}
	case gh.GateExpired:
		if g.ExpiresAt.After(now) {
			return gh.Errorf(gh.CodeInvalid, "gate %q expires at %s, not before", g.ID, g.ExpiresAt.Format(time.RFC3339))
		}
		if d.Answer != "" {
			return gh.Errorf(gh.CodeInvalid, "only an answered decision carries an answer")
		}
	default:
		return gh.Errorf(gh.CodeInvalid, "decision must be approved, denied or answered, not %q", d.State)
	}
	return nil
}

// DecisionOf returns the decision recorded on g.
func DecisionOf(g gh.Gate) gh.Decision {
	return gh.Decision{State: g.State, By: g.DecidedBy, Surface: g.Surface, Reason: g.Reason, Answer: g.Answer}
}

// SameDecision reports whether a and b record the same decision (the same
// press: state, who, where, what and when).
func SameDecision(a, b gh.Gate) bool {
	return a.State == b.State && a.DecidedBy == b.DecidedBy && a.Surface == b.Surface &&
		a.Reason == b.Reason && a.Answer == b.Answer && a.DecidedAt.Equal(b.DecidedAt)
}

// Clock returns now as the store keeps it: UTC, in microseconds.
func Clock(now func() time.Time) time.Time { return now().UTC().Truncate(time.Microsecond) }

// sqlRegistry decides with the store's compare-and-set.
type sqlRegistry struct {
	st  store.Store
	now func() time.Time

	mu       sync.Mutex
	inflight map[string]*claimCall
}

// claimCall is a compare-and-set of one gate in progress in this process.
type claimCall struct {
	done chan struct{}
	g    gh.Gate
	err  error
}

// NewSQL returns a registry that decides with store.DecideGate, a SQL
// compare-and-set: the embedded default, and correct across replicas that
// share a database. A press of a decided gate is a read; a press of a
// pending gate is a write transaction, except that presses of one gate in
// one process wait for the compare-and-set in flight and get its
// decision. Under a [Service] a press of a pending gate costs one write
// transaction in all: the compare-and-set commits with gate.decided
// ([DeferredClaimer]). now defaults to time.Now.
func NewSQL(st store.Store, now func() time.Time) Registry {
	if now == nil {
		now = time.Now
	}
	return &sqlRegistry{st: st, now: now, inflight: map[string]*claimCall{}}
}

// ClaimDeferred is Claim without its compare-and-set: [Service] makes it in
// the transaction that logs the decision, so a press of a pending gate
// costs one write transaction, not two. The decided gate it returns is
// what the press would make; SQL's compare-and-set says who won.
func (r *sqlRegistry) ClaimDeferred(ctx context.Context, id string, d gh.Decision) (gh.Gate, bool, error) {
	if err := CheckID(id); err != nil {
		return gh.Gate{}, false, err
	}
	g, err := r.st.GetGate(ctx, id)
	if err != nil {
		return gh.Gate{}, false, err
	}
	return r.claimRead(g, d)
}

// claimRead is ClaimDeferred from a gate read just now.
func (r *sqlRegistry) claimRead(g gh.Gate, d gh.Decision) (gh.Gate, bool, error) {
	now := Clock(r.now)
	if err := ValidateDecision(g, d, now); err != nil {
		return gh.Gate{}, false, err
	}
	if g.State != gh.GatePending {
		// Decided gates never change: the read is the answer.
		return g, false, nil
	}
	made := d
	if !g.ExpiresAt.After(now) {
		// As the compare-and-set will: a press after the expiry expires it.
		made = Expiry
	}
	g.State, g.DecidedBy, g.Surface, g.Reason, g.Answer, g.DecidedAt = made.State, made.By, made.Surface, made.Reason, made.Answer, now
	return g, made.State == d.State, nil
}

func (r *sqlRegistry) Claim(ctx context.Context, id string, d gh.Decision) (gh.Gate, bool, error) {
	if err := CheckID(id); err != nil {
		return gh.Gate{}, false, err
	}
	g, err := r.st.GetGate(ctx, id)
	if err != nil {
		return gh.Gate{}, false, err
	}
	made, _, err := r.claimRead(g, d)
	if err != nil || g.State != gh.GatePending {
		// Invalid, or decided already: decided gates never change, and
		// the read is the answer.
		return made, false, err
	}
	now := made.DecidedAt
	// Presses of one gate in this process queue behind the one
	// compare-and-set in flight rather than each taking a write
	// transaction to lose it.
	r.mu.Lock()
	if c, ok := r.inflight[id]; ok {
		r.mu.Unlock()
		select {
		case <-c.done:
		case <-ctx.Done():
			return gh.Gate{}, false, gh.Wrap(gh.CodeUnavailable, ctx.Err(), "gate %q: waiting for a decision in flight", id)
		}
		if c.err == nil && c.g.State != gh.GatePending {
			return c.g, false, nil
		}
		// It failed: decide ourselves.
		return r.st.DecideGate(ctx, store.GateDecision{ID: id, Decision: d, Now: now})
	}
	c := &claimCall{done: make(chan struct{})}
	r.inflight[id] = c
	r.mu.Unlock()
	var won bool
	c.g, won, c.err = r.st.DecideGate(ctx, store.GateDecision{ID: id, Decision: d, Now: now})
	r.mu.Lock()
	delete(r.inflight, id)
	r.mu.Unlock()
	close(c.done)
	return c.g, won, c.err
}
