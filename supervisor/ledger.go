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
	mu        sync.Mutex
	costUSD   float64
}

type callInfoKey struct{}

func withCallInfo(ctx context.Context, ci *callInfo) context.Context {
	return context.WithValue(ctx, callInfoKey{}, ci)
}

// Ledger returns the models.Config.Ledger hook that writes every model
// call to the kernel's ledger. Wire it when building the registry.
func Ledger(k *kernel.Kernel, log *slog.Logger) func(ctx context.Context, row models.LedgerRow) {
	return func(ctx context.Context, row models.LedgerRow) {
		ci, _ := ctx.Value(callInfoKey{}).(*callInfo)
		r := gh.LedgerRow{
			Provider: row.Provider, Model: row.Model, Attempt: row.Attempt, InputTokens: row.InputTokens,
			OutputTokens: row.OutputTokens, CostUSD: row.CostUSD, DurationMs: row.Duration.Milliseconds(), Error: row.Err,
		}
		if ci != nil {
			r.SessionID, r.RunID = ci.sessionID, ci.runID
			ci.mu.Lock()
			ci.costUSD += row.CostUSD
			ci.mu.Unlock()
		}
		// The row outlives a cancelled call: it happened and it cost.
		if err := k.RecordCall(context.WithoutCancel(ctx), r); err != nil {
			log.Warn("ledger row not written", "session", r.SessionID, "provider", r.Provider, "model", r.Model, "err", err)
		}
	}
}
