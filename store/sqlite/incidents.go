package sqlite

import (
	"context"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/store/sqlite/internal/sqlrow"
)

func (t *reader) StuckRuns(ctx context.Context, before time.Time, limit int) ([]gh.Run, error) {
	// step_started_at is 0 on a run no renewal has recorded a step for.
	return sqlrow.QueryAll(ctx, t.q, "stuck runs", scanRun, `SELECT `+runCols+` FROM runs
		WHERE state = 'running' AND step_started_at > 0 AND step_started_at <= ? ORDER BY step_started_at, id LIMIT ?`, micros(before), limit)
}

func (t *reader) GatesOfKind(ctx context.Context, kind string, state gh.GateState, limit int) ([]gh.Gate, error) {
	return t.gates(ctx, kind+" gates", `SELECT `+gateCols+` FROM gates WHERE kind = ?3 AND (?1 = '' OR state = ?1)
		ORDER BY created_at DESC, id LIMIT ?2`, string(state), limit, kind)
}
