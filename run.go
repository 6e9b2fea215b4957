package gatehouse

import (
	"fmt"
	"time"
)

// DefaultTenant is the tenant of sessions created without one.
const DefaultTenant = "default"

// Session is one conversation: one log, at most one run queued or running
// (its session lock), and any number of runs awaiting approval.
type Session struct {
	ID      string    `json:"id"`
	Tenant  string    `json:"tenant"`
	Title   string    `json:"title,omitempty"`
	LastSeq int64     `json:"lastSeq"`
	Created time.Time `json:"createdAt"`
	Updated time.Time `json:"updatedAt"`
	// LastInputSeq is the seq of the newest input-class event.
	LastInputSeq int64 `json:"lastInputSeq"`
	// ReadWatermark is the highest seq an attempt recorded as read before
	// calling a model; input above it has not been seen by any model.
	ReadWatermark int64 `json:"readWatermark"`
	// CompactionSeq is the seq of the newest compaction event; loads start there.
	CompactionSeq int64 `json:"compactionSeq"`
	// Epoch increases with every claim of any run of the session.
	Epoch int64 `json:"epoch"`
}

// RunState is where a run stands.
type RunState string

// Run states. Queued, running and awaiting_approval are active. A session
// has at most one run queued or running, which is its session lock; a run
// awaiting approval holds no lock, so a message typed under its card is
// answered by a turn of its own while the card waits.
const (
	RunQueued           RunState = "queued"
	RunRunning          RunState = "running"
	RunAwaitingApproval RunState = "awaiting_approval"
	RunDone             RunState = "done"
	RunFailed           RunState = "failed"
	RunCancelled        RunState = "cancelled"
)

// Active reports whether a run in state s is not over: queued, running or
// awaiting approval.
func (s RunState) Active() bool {
	return s.Locks() || s == RunAwaitingApproval
}

// Locks reports whether a run in state s holds its session's lock: queued
// or running (at most one per session).
func (s RunState) Locks() bool { return s == RunQueued || s == RunRunning }

// Run is the unit of work a worker claims: "this session owes processing".
type Run struct {
	ID              int64     `json:"id"`
	SessionID       string    `json:"sessionId"`
	State           RunState  `json:"state"`
	Attempts        int       `json:"attempts"`
	MaxAttempts     int       `json:"maxAttempts"`
	Owner           string    `json:"owner,omitempty"`
	Epoch           int64     `json:"epoch"`
	LeaseExpiresAt  time.Time `json:"leaseExpiresAt,omitzero"`
	ReadWatermark   int64     `json:"readWatermark"`
	CancelRequested bool      `json:"cancelRequested,omitempty"`
	Reason          string    `json:"reason,omitempty"`
	AvailableAt     time.Time `json:"availableAt"`
	Created         time.Time `json:"createdAt"`
	Updated         time.Time `json:"updatedAt"`
	// Execution is what the run's last settled attempt resolved and ran
	// with, for audit; nil before an attempt settled.
	Execution *Execution `json:"execution,omitempty"`
	// Step is what the running attempt is doing ("start", "model",
	// "tool:<name>"), recorded by its lease renewals, and StepStarted
	// when it began: a step that does not change for long is a stuck
	// turn.
	Step        string    `json:"step,omitempty"`
	StepStarted time.Time `json:"stepStartedAt,omitzero"`
	// ResumeRequested is set on a run awaiting approval (or still running
	// when the decision came) whose gate was decided while the session's
	// lock was held by another run: it resumes when that run settles.
	ResumeRequested bool `json:"resumeRequested,omitempty"`
}

// Execution is a run's resolved execution identity: which provider and
// model answered, from which selection, with which request options.
type Execution struct {
	Provider string `json:"provider,omitempty"`
	Model    string `json:"model,omitempty"`
	// Selection is the model chain the turn resolved (the input's own, or
	// the configured one): "openai:gpt-x,anthropic:claude-y".
	Selection string `json:"selection,omitempty"`
	// Thinking is the reasoning level the answering model was run with:
	// the input's choice where the model takes one; "" when none was asked
	// or the model could not take it (Note says why).
	Thinking string `json:"thinking,omitempty"`
	// ThinkingBudget is the thinking token budget sent (Anthropic), 0 if none.
	ThinkingBudget int `json:"thinkingBudget,omitempty"`
	// MaxTokens is the output token limit sent, 0 if the provider's default.
	MaxTokens int `json:"maxTokens,omitempty"`
	// Note says what of the request was asked for but not applied, and why
	// ("thinking high not applied: openai:gpt-4o does not take
	// reasoning_effort").
	Note string `json:"note,omitempty"`
	// Tools counts the tools offered to the model.
	Tools int `json:"tools"`
}

// Lease is a worker's claim on a run. Every commit of the attempt carries
// its token; the store rejects a stale one in the same transaction.
type Lease struct {
	RunID     int64
	SessionID string
	Owner     string
	Epoch     int64
	ExpiresAt time.Time
	// PendingInput is true when the session has input above the previous
	// read watermark: something nobody has read yet.
	PendingInput bool
	// PrevReadWatermark is the highest seq a previous attempt recorded as
	// read before it called a model.
	PrevReadWatermark int64
	// CompactionSeq is the seq of the session's latest compaction at the
	// claim (0: none). Only a lease holder compacts, so the attempt loads
	// its log from there without reading the session again.
	CompactionSeq int64
	// ReadWatermark is the session's last seq at the claim, recorded with
	// the claim: the attempt reads the log up to it, and input above it
	// re-queues the session when the attempt settles.
	ReadWatermark int64
	// TookOver is true when this claim replaced an attempt whose lease
	// expired (its process died or hung).
	TookOver bool
	// Attempt is this attempt's number, starting at 1.
	Attempt int
	// CancelRequested is set by Renew when someone asked to cancel the run.
	CancelRequested bool
	// More is true when another run looked claimable at the claim: the
	// claimer may claim again at once, without asking first.
	More bool
}

// Token is the fencing token owner@epoch.
func (l Lease) Token() string { return fmt.Sprintf("%s@%d", l.Owner, l.Epoch) }

// Outcome is how an attempt settles its run.
type Outcome string

// Outcomes for Finish.
const (
	OutcomeDone             Outcome = "done"
	OutcomeFailed           Outcome = "failed"
	OutcomeCancelled        Outcome = "cancelled"
	OutcomeAwaitingApproval Outcome = "awaiting_approval"
)
