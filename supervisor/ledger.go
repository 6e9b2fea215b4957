package supervisor

import (
	"context"
	"log/slog"
	"sync"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/kernel"
	"github.com/gatehouse/gatehouse/models"
)

// callInfo travels in the context of an attempt's model calls so the
// ledger can say which session and run each call belonged to, and the
// attempt can total its cost from the ledger's rows.
type callInfo struct {
	sessionID string
	runID     int64
	userKey   string
	mu        sync.Mutex
	costUSD   float64
	// tokens count every call of the attempt, as the ledger rows do.
	tokens gh.Usage
	// pending rows are written with the attempt's next commit.
	pending []gh.LedgerRow
}

// take returns the rows not yet written and forgets them.
func (ci *callInfo) take() []gh.LedgerRow {
	if ci == nil {
		return nil
	}
	ci.mu.Lock()
	defer ci.mu.Unlock()
	out := ci.pending
	ci.pending = nil
	return out
}

func callInfoFrom(ctx context.Context) *callInfo {
	ci, _ := ctx.Value(callInfoKey{}).(*callInfo)
	return ci
}

type callInfoKey struct{}

func withCallInfo(ctx context.Context, ci *callInfo) context.Context {
	return context.WithValue(ctx, callInfoKey{}, ci)
}

// Ledger returns the models.Config.Ledger hook that records every model
// call. A call made by a turn is written with the turn's next commit (its
// answer, or its settle), so the ledger costs the turn no commit of its
// own; a call made outside a turn is written at once.
func Ledger(k *kernel.Kernel, log *slog.Logger) func(ctx context.Context, row models.LedgerRow) {
	if log == nil {
		log = slog.Default()
	}
	return func(ctx context.Context, row models.LedgerRow) {
		ci := callInfoFrom(ctx)
		r := gh.LedgerRow{
			Provider: row.Provider, Model: row.Model, Attempt: row.Attempt, InputTokens: row.InputTokens,
			OutputTokens: row.OutputTokens, CostUSD: row.CostUSD, DurationMs: row.Duration.Milliseconds(), Error: row.Err,
		}
		if ci != nil {
			r.SessionID, r.RunID, r.UserKey = ci.sessionID, ci.runID, ci.userKey
			ci.mu.Lock()
			ci.costUSD += row.CostUSD
			ci.tokens.InputTokens += row.InputTokens
			ci.tokens.OutputTokens += row.OutputTokens
			ci.pending = append(ci.pending, r)
			ci.mu.Unlock()
			return
		}
		// The row outlives a cancelled call: it happened and it cost.
		if err := k.RecordCall(context.WithoutCancel(ctx), r); err != nil {
			log.Warn("ledger row not written", "session", r.SessionID, "provider", r.Provider, "model", r.Model, "err", err)
		}
	}
}

// pendingCost is the cost of calls made but not yet written.
func (ci *callInfo) pendingCost() float64 {
	if ci == nil {
		return 0
	}
	ci.mu.Lock()
	defer ci.mu.Unlock()
	sum := 0.0
	for _, r := range ci.pending {
		sum += r.CostUSD
	}
	return sum
}
