package kernel

import (
	"context"
	"encoding/json"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/store"
)

// Grants ("approve for this chat", see gh.GrantCreated): the tool worker
// records one under its lease (grant.created with the grants row, composed
// with InTx and CommitTx); a revocation comes from outside any run (the
// API, /admin, a chat's Revoke button or command) and is written here.

// RevokeKey is the idempotency key of the grant.revoked of a grant.
func RevokeKey(grantID string) string { return "grantrevoke:" + grantID }

// ActiveGrant returns the session's grant for tool and bound that covers a
// call at now, if any.
func (k *Kernel) ActiveGrant(ctx context.Context, sessionID, tool, bound string, now time.Time) (store.Grant, bool, error) {
	return k.st.ActiveGrant(ctx, sessionID, tool, bound, now)
}

// RevokeGrant ends a grant now, by by on surface: the row is marked and
// grant.revoked is appended to the grant's session, in one transaction;
// no run is queued (nothing is owed an answer). revoked is false when the
// grant had been revoked already (it keeps its first revocation). An
// unknown id is a CodeNotFound error.
func (k *Kernel) RevokeGrant(ctx context.Context, id, by, surface string) (g store.Grant, revoked bool, err error) {
	now := k.now()
	err = k.st.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
		if g, revoked, err = tx.RevokeGrant(ctx, id, by, now); err != nil || !revoked {
			return err
		}
		payload, err := json.Marshal(gh.GrantRevoked{GrantID: g.ID, Tool: g.Tool, By: by, Surface: surface})
		if err != nil {
			return gh.Wrap(gh.CodeInternal, err, "encode grant.revoked")
		}
		_, err = tx.Append(ctx, store.AppendParams{SessionID: g.SessionID, Kind: gh.KindGrantRevoked, Payload: payload, Key: RevokeKey(g.ID), Now: now})
		return err
	})
	if err == nil && revoked {
		k.Notify(g.SessionID)
	}
	return g, revoked, err
}
