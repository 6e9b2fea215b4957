package store

import (
	"context"
	"encoding/json"
	"time"

	gh "github.com/gatehouse/gatehouse"
)

// The gateway's rows: the receive log, the address book, the outbox, the
// cards shown for each gate and the leases on single platform connections.
// They live in the same database as the log so that an inbound update, its
// receive-log row and its user.message commit in one transaction.

// ReceiveEntry is one row of the receive log: an update and what became
// of it.
type ReceiveEntry struct {
	ID        int64  `json:"id"`
	Platform  string `json:"platform"`
	UpdateID  string `json:"updateId"`
	ChatID    string `json:"chatId"`
	ThreadID  string `json:"threadId,omitempty"`
	UserID    string `json:"userId"`
	UserName  string `json:"userName,omitempty"`
	MessageID string `json:"messageId,omitempty"`
	IsBot     bool   `json:"isBot,omitempty"`
	// Text is the start of the message, for the admin page.
	Text    string `json:"text,omitempty"`
	Outcome string `json:"outcome"`
	Reason  string `json:"reason,omitempty"`
	// Detail says more about a drop (what an unsupported update carried).
	Detail     string    `json:"detail,omitempty"`
	SessionID  string    `json:"sessionId,omitempty"`
	Seq        int64     `json:"seq,omitempty"`
	ReceivedAt time.Time `json:"receivedAt"`
}

// ReceiveFilter selects receive-log rows, newest first.
type ReceiveFilter struct {
	Platform string
	Outcome  string
	Reason   string
	// Before pages: rows with an id below it. 0 means from the newest.
	Before int64
	Limit  int
}

// AddressEntry is the address book's row for a session: where its replies
// go, and how far the gateway has followed its log into the outbox.
type AddressEntry struct {
	SessionID string `json:"sessionId"`
	gh.Address
	UserID string `json:"userId,omitempty"`
	// Cursor is the highest seq turned into outbox rows.
	Cursor  int64     `json:"cursor"`
	Created time.Time `json:"createdAt"`
	Updated time.Time `json:"updatedAt"`
}

// Outbox row kinds and states.
const (
	OutboxMessage    = "message"
	OutboxCard       = "card"
	OutboxCardUpdate = "card_update"
	// OutboxGrant is the notice of a grant ("approve for this chat"),
	// sent with a Revoke button while the grant is active.
	OutboxGrant = "grant"

	OutboxPending = "pending"
	OutboxSending = "sending"
	OutboxSent    = "sent"
	OutboxDead    = "dead"
)

// OutboxEntry is one delivery: a reply, an approval card or a card update,
// keyed by the (session, seq) of the event it delivers. A reply the
// gateway makes with no event behind it (a pairing code) has a negative
// seq, minus the receive-log row it answers: it goes out before the
// session's later rows.
type OutboxEntry struct {
	ID        int64  `json:"id"`
	SessionID string `json:"sessionId"`
	Seq       int64  `json:"seq"`
	Platform  string `json:"platform"`
	Kind      string `json:"kind"`
	// Payload is the gateway's description of what to send.
	Payload json.RawMessage `json:"payload"`
	State   string          `json:"state"`
	// Attempts counts failed sends that were not the platform's 429.
	Attempts int `json:"attempts"`
	// PartsSent counts the parts of a split message already delivered: a
	// retry resumes after them.
	PartsSent   int       `json:"partsSent"`
	MessageIDs  []string  `json:"messageIds,omitempty"`
	LastError   string    `json:"lastError,omitempty"`
	Owner       string    `json:"owner,omitempty"`
	LeaseUntil  time.Time `json:"leaseUntil,omitzero"`
	AvailableAt time.Time `json:"availableAt"`
	Created     time.Time `json:"createdAt"`
	Updated     time.Time `json:"updatedAt"`
}

// OutboxFilter selects outbox rows, newest first.
type OutboxFilter struct {
	Platform  string
	State     string
	SessionID string
	Limit     int
}

// GateCard is one approval card shown on a platform.
type GateCard struct {
	GateID    string    `json:"gateId"`
	SessionID string    `json:"sessionId"`
	Platform  string    `json:"platform"`
	ChatID    string    `json:"chatId"`
	ThreadID  string    `json:"threadId,omitempty"`
	MessageID string    `json:"messageId"`
	Created   time.Time `json:"createdAt"`
}

// PlatformLease is the lease on a connection only one replica may hold.
type PlatformLease struct {
	Name      string    `json:"name"`
	Owner     string    `json:"owner"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// GatewayReader reads the gateway's rows.
type GatewayReader interface {
	// ReceiveByUpdate returns the first (non-duplicate) row of an update.
	ReceiveByUpdate(ctx context.Context, platform, updateID string) (ReceiveEntry, bool, error)
	ListReceive(ctx context.Context, f ReceiveFilter) ([]ReceiveEntry, error)
	// LastReceive returns the newest row of a platform.
	LastReceive(ctx context.Context, platform string) (ReceiveEntry, bool, error)
	// CountHandedOn counts a chat's updates handed on at or after since.
	CountHandedOn(ctx context.Context, platform, chatID string, since time.Time) (int, error)
	AddressBySession(ctx context.Context, sessionID string) (AddressEntry, bool, error)
	// AddressesBehind lists sessions whose log has grown past their cursor.
	AddressesBehind(ctx context.Context, limit int) ([]AddressEntry, error)
	// OutboxDue lists a platform's sendable rows: for each session its
	// oldest row not yet sent or dead, when it is pending and available
	// at now. Rows of one session go out in seq order.
	OutboxDue(ctx context.Context, platform string, now time.Time, limit int) ([]OutboxEntry, error)
	ListOutbox(ctx context.Context, f OutboxFilter) ([]OutboxEntry, error)
	// CountOutbox counts a platform's rows in a state.
	CountOutbox(ctx context.Context, platform, state string) (int, error)
	// OutboxStuck lists a platform's rows left sending past their lease.
	OutboxStuck(ctx context.Context, platform string, now time.Time, limit int) ([]OutboxEntry, error)
	GateCards(ctx context.Context, gateID string) ([]GateCard, error)
	GetPlatformLease(ctx context.Context, name string) (PlatformLease, bool, error)
}

// GatewayWriter writes the gateway's rows.
type GatewayWriter interface {
	// InsertReceive adds a row. A second non-duplicate row for the same
	// (platform, update id) is not written: inserted is false and the row
	// is the first one. Rows with reason duplicate are always written.
	InsertReceive(ctx context.Context, e ReceiveEntry) (ReceiveEntry, bool, error)
	// UpsertAddress creates the row for (platform, chat, thread) with
	// e.SessionID, or moves the existing row's ReplyTo and UserID on; it
	// returns the row as stored and whether it was created. It locks the
	// row until the transaction ends: one chat's receives go one at a time.
	UpsertAddress(ctx context.Context, e AddressEntry) (AddressEntry, bool, error)
	// AdvanceCursor moves a session's cursor up to seq (never down).
	AdvanceCursor(ctx context.Context, sessionID string, seq int64, now time.Time) error
	// EnqueueOutbox adds a row unless (session, seq) has one.
	EnqueueOutbox(ctx context.Context, e OutboxEntry) (bool, error)
	// ClaimOutbox moves a pending row to sending for owner until until;
	// false when someone else took it first.
	ClaimOutbox(ctx context.Context, id int64, owner string, now, until time.Time) (OutboxEntry, bool, error)
	// UpdateOutbox writes a claimed row's outcome (state, attempts, parts,
	// ids, error, availability). It does nothing unless owner holds it.
	UpdateOutbox(ctx context.Context, e OutboxEntry) (bool, error)
	PutGateCard(ctx context.Context, c GateCard) error
	// AcquirePlatformLease takes or renews the lease called name for owner
	// until until; false when another owner holds it unexpired at now.
	AcquirePlatformLease(ctx context.Context, name, owner string, now, until time.Time) (bool, error)
	// ReleasePlatformLease gives the lease up, if owner holds it.
	ReleasePlatformLease(ctx context.Context, name, owner string) error
	// PruneGateway deletes, at most limit of each, receive-log rows
	// received before before and outbox rows sent or dead before before
	// (pending and sending rows are never pruned). It returns how many
	// rows went.
	PruneGateway(ctx context.Context, before time.Time, limit int) (int, error)
}
