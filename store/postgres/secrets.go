package postgres

import (
	"context"
	"time"

	"github.com/gatehouse/gatehouse/store"
)

var _ store.Secrets = (*Store)(nil)

// EnsureSecret implements store.Secrets in one statement: on a conflict
// the row is "updated" to itself, so RETURNING gives the stored value,
// and two replicas starting at once both get the one that was inserted.
func (s *Store) EnsureSecret(ctx context.Context, name, value string, now time.Time) (stored string, err error) {
	err = s.q.QueryRow(ctx, `INSERT INTO gateway_secrets (name, value, created_at) VALUES ($1, $2, $3)
		ON CONFLICT (name) DO UPDATE SET value = gateway_secrets.value RETURNING value`, name, value, now).Scan(&stored)
	return stored, dbErr(err, "ensure secret")
}
