package sqlite

import (
	"context"
	"slices"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/store"
	"github.com/gatehouse/gatehouse/store/sqlite/internal/sqlrow"
)

// Each stats read is bounded by an indexed time column (migration 00013,
// and ledger_time), and buckets with integer arithmetic on the
// microsecond times: (t - since) / step.
const (
	statsReceivesSQL = `SELECT (received_at - ?1) / ?3, outcome, count(*) FROM receive_log
		WHERE received_at >= ?1 AND received_at < ?2 GROUP BY 1, 2 ORDER BY 1, 2`
	statsTurnsSQL = `SELECT (updated_at - ?1) / ?3, state, count(*) FROM runs
		WHERE state IN ('done', 'failed', 'cancelled') AND updated_at >= ?1 AND updated_at < ?2 GROUP BY 1, 2 ORDER BY 1, 2`
	// The durations come ordered by bucket; P95 is taken in Go one bucket
	// at a time.
	statsDurationsSQL = `SELECT (updated_at - ?1) / ?3, (updated_at - created_at) / 1000 FROM runs
		WHERE state IN ('done', 'failed', 'cancelled') AND updated_at >= ?1 AND updated_at < ?2 ORDER BY 1`
	statsOpenedSQL = `SELECT (created_at - ?1) / ?3, kind, count(*) FROM gates
		WHERE created_at >= ?1 AND created_at < ?2 AND kind <> 'incident' GROUP BY 1, 2 ORDER BY 1, 2`
	statsDecidedSQL = `SELECT (decided_at - ?1) / ?3, state, count(*) FROM gates
		WHERE state <> 'pending' AND kind <> 'incident' AND decided_at >= ?1 AND decided_at < ?2 GROUP BY 1, 2 ORDER BY 1, 2`
	statsSpendSQL = `SELECT (created_at - ?1) / ?3, count(*), total(cost_usd) FROM ledger
		WHERE created_at >= ?1 AND created_at < ?2 GROUP BY 1 ORDER BY 1`
)

// Stats implements store.StatsReader, on the read pool.
func (s *Store) Stats(ctx context.Context, q store.StatsQuery) (store.Stats, error) {
	var out store.Stats
	if q.Buckets() == 0 {
		return out, gh.Errorf(gh.CodeInvalid, "sqlite: stats need a window and a step")
	}
	args := []any{micros(q.Since), micros(q.Until), q.Step.Microseconds()}
	counts := func(what, query string, dst *[]store.StatsCount) error {
		rows, err := sqlrow.QueryAll(ctx, s.r, what, func(r rowScanner) (c store.StatsCount, err error) {
			err = r.Scan(&c.Bucket, &c.Key, &c.Count)
			return c, err
		}, query, args...)
		*dst = rows
		return err
	}
	if err := counts("stats: receives", statsReceivesSQL, &out.Receives); err != nil {
		return out, err
	}
	if err := counts("stats: turns", statsTurnsSQL, &out.Turns); err != nil {
		return out, err
	}
	if err := counts("stats: gates opened", statsOpenedSQL, &out.GatesOpened); err != nil {
		return out, err
	}
	if err := counts("stats: gates decided", statsDecidedSQL, &out.GatesDecided); err != nil {
		return out, err
	}
	spend, err := sqlrow.QueryAll(ctx, s.r, "stats: spend", func(r rowScanner) (v store.StatsValue, err error) {
		err = r.Scan(&v.Bucket, &v.Count, &v.Value)
		return v, err
	}, statsSpendSQL, args...)
	if err != nil {
		return out, err
	}
	out.Spend = spend
	out.TurnP95, err = s.turnP95(ctx, args)
	return out, err
}

// turnP95 reads the settled runs' durations bucket by bucket, holding
// one bucket's at a time.
func (s *Store) turnP95(ctx context.Context, args []any) ([]store.StatsValue, error) {
	rows, err := s.r.QueryContext(ctx, statsDurationsSQL, args...)
	if err != nil {
		return nil, dbErr(err, "stats: turn times")
	}
	defer rows.Close()
	var out []store.StatsValue
	var ms []int64
	bucket := -1
	flush := func() {
		if len(ms) > 0 {
			slices.Sort(ms)
			out = append(out, store.StatsValue{Bucket: bucket, Count: int64(len(ms)), Value: float64(store.P95(ms))})
		}
		ms = ms[:0]
	}
	for rows.Next() {
		var b int
		var d int64
		if err := rows.Scan(&b, &d); err != nil {
			return nil, dbErr(err, "stats: turn times")
		}
		if b != bucket {
			flush()
			bucket = b
		}
		ms = append(ms, max(d, 0))
	}
	flush()
	return out, dbErr(rows.Err(), "stats: turn times")
}
