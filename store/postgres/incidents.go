package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	gh "github.com/gatehouse/gatehouse"
)

func (t *executor) StuckRuns(ctx context.Context, before time.Time, limit int) ([]gh.Run, error) {
	rows, err := t.q.Query(ctx, `SELECT `+runCols+` FROM runs
		WHERE state = 'running' AND step_started_at <= $1 ORDER BY step_started_at, id LIMIT $2`, before, limit)
	if err != nil {
		return nil, dbErr(err, "stuck runs")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (gh.Run, error) { return scanRun(r) })
	return out, dbErr(err, "stuck runs")
}

func (t *executor) GatesOfKind(ctx context.Context, kind string, state gh.GateState, limit int) ([]gh.Gate, error) {
	return t.gates(ctx, kind+" gates", `SELECT `+gateCols+` FROM gates WHERE kind = $3 AND ($1 = '' OR state = $1)
		ORDER BY created_at DESC, id LIMIT $2`, string(state), limit, kind)
}
