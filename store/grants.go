package store

import (
	"context"
	"time"
)

// Grant is "approve for this chat": a tool's later calls in one session
// whose bound is Bound run without a card until ExpiresAt, unless revoked.
// Its creation is also grant.created in the session's log (and a revocation
// grant.revoked); this row is what the tool worker, /v1/grants and the chat
// commands read.
type Grant struct {
	ID        string `json:"id"`
	SessionID string `json:"sessionId"`
	// GateID is the gate whose approval made the grant.
	GateID string `json:"gateId"`
	Tool   string `json:"tool"`
	Bound  string `json:"bound"`
	Label  string `json:"label"`
	// GrantedBy and Surface are who approved for the chat, and where.
	GrantedBy string    `json:"grantedBy"`
	Surface   string    `json:"surface"`
	Created   time.Time `json:"createdAt"`
	ExpiresAt time.Time `json:"expiresAt"`
	RevokedBy string    `json:"revokedBy,omitempty"`
	RevokedAt time.Time `json:"revokedAt,omitzero"`
}

// Active reports whether g covers calls at now.
func (g Grant) Active(now time.Time) bool { return g.RevokedAt.IsZero() && g.ExpiresAt.After(now) }

// GrantsReader reads grants.
type GrantsReader interface {
	// GetGrant returns a grant, or a CodeNotFound error.
	GetGrant(ctx context.Context, id string) (Grant, error)
	// ActiveGrant returns the grant of the session for tool and bound that
	// is unrevoked and unexpired at now (the one lasting longest), if any.
	ActiveGrant(ctx context.Context, sessionID, tool, bound string, now time.Time) (Grant, bool, error)
	// ListGrants returns grants, newest first, at most limit: of one
	// session when sessionID is set; only those active at now when active.
	ListGrants(ctx context.Context, sessionID string, active bool, now time.Time, limit int) ([]Grant, error)
}

// GrantsWriter writes grants.
type GrantsWriter interface {
	// InsertGrant stores g unless a grant with its id exists: it returns
	// the stored grant and whether g was written.
	InsertGrant(ctx context.Context, g Grant) (Grant, bool, error)
	// RevokeGrant ends an unrevoked grant at now, by by: it returns the
	// grant and whether this call revoked it (false: it was revoked
	// already, and keeps its first revocation). Unknown id: CodeNotFound.
	RevokeGrant(ctx context.Context, id, by string, now time.Time) (Grant, bool, error)
}
