package sqlite

import (
	"context"
	"database/sql"
	"time"

	"github.com/gatehouse/gatehouse/store"
	"github.com/gatehouse/gatehouse/store/sqlite/internal/sqlrow"
)

// QueueStats implements store.MetricsReader, on the read pool: the runs
// over the runs_queued index, the outbox over outbox_open.
func (s *Store) QueueStats(ctx context.Context) (store.QueueStats, error) {
	var out store.QueueStats
	var oldest sql.NullInt64
	err := s.r.QueryRowContext(ctx, `SELECT count(*), min(CASE WHEN available_at <= ?1 THEN available_at END) FROM runs WHERE state = 'queued'`,
		micros(time.Now())).Scan(&out.Queued, &oldest)
	if err != nil {
		return out, dbErr(err, "queue stats: runs")
	}
	if oldest.Valid {
		out.OldestAvailable = fromMicros(oldest.Int64)
	}
	out.Outbox, err = sqlrow.QueryAll(ctx, s.r, "queue stats: outbox", func(r rowScanner) (q store.OutboxQueue, err error) {
		var at int64
		err = r.Scan(&q.Platform, &q.Open, &at)
		q.Oldest = fromMicros(at)
		return q, err
	}, `SELECT platform, count(*), min(created_at) FROM outbox WHERE state IN ('pending', 'sending') GROUP BY platform ORDER BY platform`)
	return out, err
}
