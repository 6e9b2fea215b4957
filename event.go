package gatehouse

import (
	"encoding/json"
	"time"
)

// Kind names what an event records. The set is closed: the kernel refuses a
// kind it does not know, so a typo can never enter the log.
type Kind string

// Event kinds.
const (
	KindUserMessage      Kind = "user.message"      // input from a person (edge)
	KindGateDecided      Kind = "gate.decided"      // a decision on an approval gate (edge)
	KindGateApproval     Kind = "gate.approval"     // one approval of a gate that needs several (outside any run)
	KindTurnRetry        Kind = "turn.retry"        // a failed turn, or an answer to regenerate, asked to run again (edge; see TurnRetry)
	KindAssistantMessage Kind = "assistant.message" // a model answer; key generationId
	KindToolResult       Kind = "tool.result"       // one result per toolCallId
	KindGateOpened       Kind = "gate.opened"       // a tool call waits for approval
	KindCompaction       Kind = "compaction"        // summary; loads start here
	KindRunStarted       Kind = "run.started"       // an attempt began (bookkeeping)
	KindRunFinished      Kind = "run.finished"      // an attempt's own account (bookkeeping)
	KindNotice           Kind = "notice"            // something the user should be told (fallback, expiry)
	KindReceipt          Kind = "effect.receipt"    // effect journal state change
	KindGrantCreated     Kind = "grant.created"     // "approve for this chat" recorded (see GrantCreated)
	KindGrantRevoked     Kind = "grant.revoked"     // a grant ended before its time (see GrantRevoked)
)

// KindClass says on which commit path a kind may be written and whether it
// counts as input that a turn owes an answer to.
type KindClass struct {
	// Edge kinds arrive from outside (a person, a platform, a decision) and
	// are committed without a lease; committing one queues a run.
	Edge bool
	// Input kinds move the session's input high-water mark: a run that
	// settles below it is re-queued so the input is answered.
	Input bool
}

var kindClasses = map[Kind]KindClass{
	KindUserMessage: {Edge: true, Input: true},
	// A decision resumes the run its gate waits in (the kernel's
	// resumeTx); it is not input a new turn owes an answer to.
	KindGateDecided:      {Edge: true},
	KindTurnRetry:        {Edge: true, Input: true},
	KindAssistantMessage: {},
	KindToolResult:       {},
	KindGateOpened:       {},
	KindGateApproval:     {},
	KindCompaction:       {},
	KindRunStarted:       {},
	KindRunFinished:      {},
	KindNotice:           {},
	KindReceipt:          {},
	KindGrantCreated:     {},
	KindGrantRevoked:     {},
}

// ClassOf returns the class of k and whether k is known.
func ClassOf(k Kind) (KindClass, bool) {
	c, ok := kindClasses[k]
	return c, ok
}

// Kinds returns every known kind.
func Kinds() []Kind {
	out := make([]Kind, 0, len(kindClasses))
	for k := range kindClasses {
		out = append(out, k)
	}
	return out
}

// Event is one committed entry of a session's log. Seq is gap-free per
// session, starting at 1.
type Event struct {
	SessionID string          `json:"sessionId"`
	Seq       int64           `json:"seq"`
	Kind      Kind            `json:"kind"`
	Payload   json.RawMessage `json:"payload"`
	Key       string          `json:"key,omitempty"`
	CreatedAt time.Time       `json:"createdAt"`
}

// NewEvent is an event to be committed: the kernel assigns seq and time.
type NewEvent struct {
	Kind    Kind
	Payload json.RawMessage
	// Key is the idempotency key (requestId, update id, generationId,
	// toolCallId…). A repeat of the key in the same session returns the
	// committed event; the same key with another payload is a conflict.
	// Empty means no deduplication.
	Key string
}
