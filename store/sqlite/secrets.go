package sqlite

import (
	"context"
	"time"

	"github.com/gatehouse/gatehouse/store"
)

var _ store.Secrets = (*Store)(nil)

// EnsureSecret implements store.Secrets in one statement: on a conflict
// the row is "updated" to itself, so RETURNING gives the stored value.
func (s *Store) EnsureSecret(ctx context.Context, name, value string, now time.Time) (stored string, err error) {
	err = s.InTx(ctx, func(ctx context.Context, t store.Tx) error {
		return dbErr(t.(*tx).q.QueryRowContext(ctx, `INSERT INTO gateway_secrets (name, value, created_at) VALUES (?, ?, ?)
			ON CONFLICT (name) DO UPDATE SET value = gateway_secrets.value RETURNING value`, name, value, micros(now)).Scan(&stored), "ensure secret")
	})
	return stored, err
}
