package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gatehouse/gatehouse/store"
)

// QueueStats implements store.MetricsReader: both reads in one batch, the
// runs over the runs_queued index, the outbox over outbox_open.
func (s *Store) QueueStats(ctx context.Context) (store.QueueStats, error) {
	var out store.QueueStats
	var b pgx.Batch
	b.Queue(`SELECT count(*), min(available_at) FILTER (WHERE available_at <= now()) FROM runs WHERE state = 'queued'`).QueryRow(func(r pgx.Row) error {
		var oldest *time.Time
		if err := r.Scan(&out.Queued, &oldest); err != nil {
			return dbErr(err, "queue stats: runs")
		}
		if oldest != nil {
			out.OldestAvailable = *oldest
		}
		return nil
	})
	b.Queue(`SELECT platform, count(*), min(created_at) FROM outbox WHERE state IN ('pending', 'sending') GROUP BY platform ORDER BY platform`).Query(func(rows pgx.Rows) error {
		var err error
		out.Outbox, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (q store.OutboxQueue, err error) {
			err = r.Scan(&q.Platform, &q.Open, &q.Oldest)
			return q, err
		})
		return dbErr(err, "queue stats: outbox")
	})
	err := s.pool.SendBatch(ctx, &b).Close()
	return out, err
}
