package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/store"
)

// Each stats read is bounded by an indexed time column (migration 00013,
// and ledger_time). $1 is the window's start, $2 its end, $3 the bucket
// width in seconds.
const (
	statsReceivesSQL = `SELECT floor(extract(epoch FROM received_at - $1::timestamptz) / $3::float8)::int, outcome, count(*) FROM receive_log
		WHERE received_at >= $1 AND received_at < $2 GROUP BY 1, 2 ORDER BY 1, 2`
	statsTurnsSQL = `SELECT floor(extract(epoch FROM updated_at - $1::timestamptz) / $3::float8)::int, state, count(*) FROM runs
		WHERE state IN ('done', 'failed', 'cancelled') AND updated_at >= $1 AND updated_at < $2 GROUP BY 1, 2 ORDER BY 1, 2`
	// percentile_disc is the nearest rank, as store.P95.
	statsP95SQL = `SELECT floor(extract(epoch FROM updated_at - $1::timestamptz) / $3::float8)::int, count(*),
			percentile_disc(0.95) WITHIN GROUP (ORDER BY greatest(floor(extract(epoch FROM updated_at - created_at) * 1000), 0))::float8
		FROM runs WHERE state IN ('done', 'failed', 'cancelled') AND updated_at >= $1 AND updated_at < $2 GROUP BY 1 ORDER BY 1`
	statsOpenedSQL = `SELECT floor(extract(epoch FROM created_at - $1::timestamptz) / $3::float8)::int, kind, count(*) FROM gates
		WHERE created_at >= $1 AND created_at < $2 AND kind <> 'incident' GROUP BY 1, 2 ORDER BY 1, 2`
	statsDecidedSQL = `SELECT floor(extract(epoch FROM decided_at - $1::timestamptz) / $3::float8)::int, state, count(*) FROM gates
		WHERE state <> 'pending' AND kind <> 'incident' AND decided_at >= $1 AND decided_at < $2 GROUP BY 1, 2 ORDER BY 1, 2`
	statsSpendSQL = `SELECT floor(extract(epoch FROM created_at - $1::timestamptz) / $3::float8)::int, count(*), coalesce(sum(cost_usd), 0)::float8 FROM ledger
		WHERE created_at >= $1 AND created_at < $2 GROUP BY 1 ORDER BY 1`
)

// Stats implements store.StatsReader: the six reads in one batch, one
// round trip.
func (s *Store) Stats(ctx context.Context, q store.StatsQuery) (store.Stats, error) {
	var out store.Stats
	if q.Buckets() == 0 {
		return out, gh.Errorf(gh.CodeInvalid, "postgres: stats need a window and a step")
	}
	step := q.Step.Seconds()
	var b pgx.Batch
	counts := func(what, query string, dst *[]store.StatsCount) {
		b.Queue(query, q.Since, q.Until, step).Query(func(rows pgx.Rows) error {
			var err error
			*dst, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (c store.StatsCount, err error) {
				err = r.Scan(&c.Bucket, &c.Key, &c.Count)
				return c, err
			})
			return dbErr(err, what)
		})
	}
	values := func(what, query string, dst *[]store.StatsValue) {
		b.Queue(query, q.Since, q.Until, step).Query(func(rows pgx.Rows) error {
			var err error
			*dst, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (v store.StatsValue, err error) {
				err = r.Scan(&v.Bucket, &v.Count, &v.Value)
				return v, err
			})
			return dbErr(err, what)
		})
	}
	counts("stats: receives", statsReceivesSQL, &out.Receives)
	counts("stats: turns", statsTurnsSQL, &out.Turns)
	values("stats: turn times", statsP95SQL, &out.TurnP95)
	counts("stats: gates opened", statsOpenedSQL, &out.GatesOpened)
	counts("stats: gates decided", statsDecidedSQL, &out.GatesDecided)
	values("stats: spend", statsSpendSQL, &out.Spend)
	if err := s.pool.SendBatch(ctx, &b).Close(); err != nil {
		return store.Stats{}, dbErr(err, "stats")
	}
	return out, nil
}
