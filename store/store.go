package store

import (
	"context"
	"encoding/json"
	"strconv"
	"time"

	gh "github.com/gatehouse/gatehouse"
)

// AppendParams is one event to append to a session's log.
type AppendParams struct {
	SessionID string
	// Tenant, when set, must match the session's tenant.
	Tenant string
	Kind   gh.Kind
	// Payload is a validated JSON object.
	Payload json.RawMessage
	Key     string
	Now     time.Time
	// Input moves the session's input high-water mark to this event.
	Input bool
	// QueueRun makes sure the session has a run queued or running: a
	// queued run is inserted when there is none. A running run is left
	// alone (its Finish re-queues), and so is a run awaiting approval: the
	// input gets a turn of its own, and a decision resumes the waiting
	// run (the kernel's, not the append's, business).
	QueueRun bool
	// MaxAttempts is stored on a newly queued run.
	MaxAttempts int
	// CheckGates (with QueueRun) asks whether the session has a gate
	// pending, read with the append (on Postgres in the same statement):
	// AppendResult.GatePending. A new append only; a repeat of the key
	// reports false.
	CheckGates bool
	// UnlessGatePending (with QueueRun) appends only when the session
	// has no gate pending, checked in the append (on Postgres in the same
	// statement). When one is pending nothing is written and
	// AppendResult.GatePending is set, so the caller can commit the input
	// with what a pending gate calls for (kernel.EdgeCommit); a repeat of
	// the key still returns the committed event.
	UnlessGatePending bool
	// Fence, when set, makes the append conditional on a lease, checked
	// in the append's own statement (no read before it): the session's
	// epoch is the lease's, and its run is running under the lease's
	// epoch and owner with the lease unexpired. When the append does not
	// happen — the fence failed, or the key was taken, or there is no
	// such session — nothing is written and AppendResult.Fenced is set:
	// the caller checks the lease itself to learn which.
	Fence *Fence
}

// Fence is the lease an append is conditional on (AppendParams.Fence).
type Fence struct {
	RunID int64
	Epoch int64
	Owner string
}

// StartedRun is the start of a claimed run's attempt (ClaimStart): the
// session's epoch raised (fencing every earlier lease), the attempt's
// run.started appended under the key KeyPrefix followed by the new epoch,
// the session's read watermark moved to it. Session has its new Epoch;
// its other fields (LastSeq, LastInputSeq, ReadWatermark, CompactionSeq)
// are as they were before the run.started event.
type StartedRun struct {
	Session gh.Session
	Started gh.Event
}

// ClaimStartParams is a claim (Store.ClaimStart): at Now, for Owner,
// leased until LeaseExpiresAt, its run.started keyed KeyPrefix and the
// session's new epoch.
type ClaimStartParams struct {
	Now            time.Time
	Owner          string
	LeaseExpiresAt time.Time
	KeyPrefix      string
}

// ClaimStarted is what ClaimStart did. Run is the run as started (or, when
// Exhausted, as found); More says another run looked claimable too.
type ClaimStarted struct {
	Found, More, TookOver, Exhausted bool
	Run                              gh.Run
	StartedRun
}

// TakeoverReason is why a run taken over from a worker whose lease
// lapsed is run again, when it had no reason of its own.
func TakeoverReason(attempts int) string {
	return "attempt " + strconv.Itoa(attempts) + " lost its lease"
}

// ClaimStartSteps is ClaimStart in a transaction of the Tx's steps, for a
// backend whose statements cost no round trip (SQLite).
func ClaimStartSteps(ctx context.Context, st Store, p ClaimStartParams) (ClaimStarted, error) {
	var out ClaimStarted
	err := st.InTx(ctx, func(ctx context.Context, tx Tx) error {
		out = ClaimStarted{}
		run, found, more, err := tx.ClaimCandidate(ctx, p.Now)
		if err != nil || !found {
			return err
		}
		out.Found, out.More, out.TookOver, out.Run = true, more, run.State == gh.RunRunning, run
		if out.TookOver && run.Attempts >= run.MaxAttempts {
			out.Exhausted = true
			return nil
		}
		if out.TookOver && run.Reason == "" {
			run.Reason = TakeoverReason(run.Attempts)
		}
		run.Owner, run.LeaseExpiresAt = p.Owner, p.LeaseExpiresAt
		run.Attempts++
		payload, err := json.Marshal(gh.RunStarted{RunID: run.ID, Attempt: run.Attempts, TookOver: out.TookOver, Reason: run.Reason})
		if err != nil {
			return gh.Wrap(gh.CodeInternal, err, "encode run.started")
		}
		sess, err := tx.BumpEpoch(ctx, run.SessionID, p.Now)
		if err != nil {
			return err
		}
		res, err := tx.Append(ctx, AppendParams{SessionID: run.SessionID, Kind: gh.KindRunStarted, Payload: payload,
			Key: p.KeyPrefix + strconv.FormatInt(sess.Epoch, 10), Now: p.Now})
		if err != nil {
			return err
		}
		if err := tx.SetReadWatermark(ctx, run.SessionID, res.Event.Seq, p.Now); err != nil {
			return err
		}
		run.State, run.Epoch, run.ReadWatermark, run.Updated = gh.RunRunning, sess.Epoch, res.Event.Seq, p.Now
		run.Step, run.StepStarted = "start", p.Now
		if err := tx.UpdateRun(ctx, run); err != nil {
			return err
		}
		out.Run, out.StartedRun = run, StartedRun{Session: sess, Started: res.Event}
		return nil
	})
	return out, err
}

// AppendResult says what Append did.
type AppendResult struct {
	Event gh.Event
	// Existing is true when the key was already committed: Event is the
	// committed one and nothing was written.
	Existing bool
	// RunID is the session's queued or running run after the append (0
	// without QueueRun).
	RunID int64
	// Woke is true when the append made a run claimable that was not.
	Woke bool
	// GatePending is true when CheckGates or UnlessGatePending was asked
	// and the session has a gate still pending.
	GatePending bool
	// Fenced is true when a fenced append (AppendParams.Fence) wrote
	// nothing; Event is then empty.
	Fenced bool
}

// Reader reads committed state.
type Reader interface {
	GatewayReader
	PeopleReader
	GrantsReader
	IncidentsReader
	// GetSession returns the session or a CodeUnknownSession error.
	GetSession(ctx context.Context, id string) (gh.Session, error)
	// ListSessions returns sessions of tenant, newest first, at most limit.
	ListSessions(ctx context.Context, tenant string, limit int) ([]gh.Session, error)
	// Events returns up to limit events with seq > after, in seq order.
	Events(ctx context.Context, sessionID string, after int64, limit int) ([]gh.Event, error)
	// EventByKey returns the event committed under key, if any.
	EventByKey(ctx context.Context, sessionID, key string) (gh.Event, bool, error)
	// GetRun returns a run or a CodeNotFound error.
	GetRun(ctx context.Context, id int64) (gh.Run, error)
	// LatestRun returns the session's newest run, if any.
	LatestRun(ctx context.Context, sessionID string) (gh.Run, bool, error)
	// HasClaimable reports whether any run is claimable at now, without
	// taking a lock: idle workers check it before they open a write
	// transaction.
	HasClaimable(ctx context.Context, now time.Time) (bool, error)
	// Ledger returns the session's model calls, oldest first, at most limit.
	Ledger(ctx context.Context, sessionID string, limit int) ([]gh.LedgerRow, error)
	// RunCost sums the ledger rows of one run (every attempt, the part
	// before an approval): tokens and cost.
	RunCost(ctx context.Context, runID int64) (gh.Usage, float64, error)
	// Usage sums the ledger since a time, by "user" or by "model"
	// (provider:model); userKey, when set, keeps one user's calls.
	Usage(ctx context.Context, by string, since time.Time, userKey string) ([]gh.UsageRow, error)
	// GetGate returns a gate or a CodeNotFound error.
	GetGate(ctx context.Context, id string) (gh.Gate, error)
	// ListGates returns gates, newest first: of one session when sessionID
	// is set, in one state when state is set.
	ListGates(ctx context.Context, sessionID string, state gh.GateState, limit int) ([]gh.Gate, error)
	// DueGates returns pending gates whose expiry is at or before now.
	DueGates(ctx context.Context, now time.Time, limit int) ([]gh.Gate, error)
	// UnloggedGates returns decided gates whose gate.decided is not in the
	// log yet (a crash between the decision and its commit).
	UnloggedGates(ctx context.Context, limit int) ([]gh.Gate, error)
	// GetMemoryFact returns a fact, deleted or not, or a CodeNotFound error.
	GetMemoryFact(ctx context.Context, id int64) (MemoryFact, error)
	// MemoryFacts returns the user's live facts whose subject starts with
	// subjectPrefix ("" for all), most recently observed first, at most
	// limit (0: all).
	MemoryFacts(ctx context.Context, userKey, subjectPrefix string, limit int) ([]MemoryFact, error)
	// MemoryFactsByID returns those of ids that are live facts of the
	// user, in no particular order.
	MemoryFactsByID(ctx context.Context, userKey string, ids []int64) ([]MemoryFact, error)
	// MemoryTermStats returns the user's live-fact counts and how many
	// live facts hold each of terms (absent: none).
	MemoryTermStats(ctx context.Context, userKey string, terms []string) (MemoryStats, error)
	// MemoryPostings returns the postings of terms over the user's live
	// facts, and the postings of also for the facts among those: a scorer
	// that knows a fact holding only also terms cannot matter does not
	// read them. terms and also should not overlap.
	MemoryPostings(ctx context.Context, userKey string, terms, also []string) ([]MemoryPosting, error)
	// MemoryVectors returns every live fact of the user with its text and,
	// when one made by model is stored, its vector (nil otherwise).
	MemoryVectors(ctx context.Context, userKey, model string) ([]MemoryVector, error)
	// GetMemoryJob returns a job or a CodeNotFound error.
	GetMemoryJob(ctx context.Context, id int64) (MemoryJob, error)
	// ListMemoryJobs returns jobs, oldest first: of one user when userKey
	// is set, in one state when state is set.
	ListMemoryJobs(ctx context.Context, userKey, state string, limit int) ([]MemoryJob, error)
}

// GateDecision is a compare-and-set on a pending gate.
type GateDecision struct {
	ID string
	gh.Decision
	Now time.Time
}

// Writer holds the writes. Inside a Tx they commit together; on a Store
// each call is its own transaction.
type Writer interface {
	GatewayWriter
	PeopleWriter
	GrantsWriter
	// CreateSession inserts s unless a session with its id exists; it
	// returns the stored session and whether it was created.
	CreateSession(ctx context.Context, s gh.Session) (gh.Session, bool, error)
	// Append assigns the next seq and appends. When p.Key is already
	// committed in the session, it returns that event with Existing set
	// and writes nothing. Unknown session (or tenant mismatch) is a
	// CodeUnknownSession error.
	Append(ctx context.Context, p AppendParams) (AppendResult, error)
	// AddLedger records one model call.
	AddLedger(ctx context.Context, row gh.LedgerRow) error
	// InsertGate stores a pending gate; a gate with that id already there
	// is left alone (inserted false).
	InsertGate(ctx context.Context, g gh.Gate) (bool, error)
	// DecideGate moves a pending gate to d's state — or to expired, by
	// "timeout", when its expiry has passed at d.Now — and returns it with
	// won true. A gate that was no longer pending comes back as it was
	// decided, with won false. Unknown gate: CodeNotFound.
	DecideGate(ctx context.Context, d GateDecision) (gh.Gate, bool, error)
	// MarkGateCommitted records that gate.decided is committed.
	MarkGateCommitted(ctx context.Context, id string) error
	// PutMemoryFact stores f as the user's fact about f.Subject, indexed
	// under terms, unless the stored state of that subject is newer: a
	// live fact observed after f.ObservedAt, or a fact forgotten at or
	// after it. A fact observed at the same instant as the live one
	// replaces it (a later pass over the same turn refines it). It returns
	// the subject's stored fact and whether f was written. Writes of one
	// user are serialised, so the rule holds whatever order they commit in.
	PutMemoryFact(ctx context.Context, f MemoryFact, terms []MemoryTerm) (MemoryFact, bool, error)
	// ForgetMemoryFacts soft-deletes those of ids that are live facts of
	// the user, at now, and returns them as deleted.
	ForgetMemoryFacts(ctx context.Context, userKey string, ids []int64, now time.Time) ([]MemoryFact, error)
	// SetMemoryVectors stores vectors of facts; one whose Text is no longer
	// the fact's text (it was superseded meanwhile) is skipped.
	SetMemoryVectors(ctx context.Context, vs []MemoryVector) error
	// InsertMemoryJob queues a job. A job for the same turn (user, session,
	// seq; session set) is left alone: it returns that job, inserted false.
	InsertMemoryJob(ctx context.Context, j MemoryJob) (MemoryJob, bool, error)
}

// Tx is one transaction. Its lock methods hold row locks until the end of
// the transaction, so a check and the write it guards cannot be split.
type Tx interface {
	Reader
	Writer
	// AddGateApproval records one person's approval of a gate that needs
	// a.Needed, locking the gate's row first so that concurrent approvals
	// of one gate count in turn. It records only an approval that leaves
	// the gate short: the same person again, or the approval that would
	// complete the count, records nothing (the last is the decision, made
	// by DecideGate). It returns the gate with the approvals recorded and
	// whether this one was. A gate no longer pending records nothing and
	// comes back as decided. Unknown gate: CodeNotFound.
	AddGateApproval(ctx context.Context, gateID string, a gh.GateApproval) (gh.Gate, bool, error)
	// TouchChat moves an existing chat's address row on (reply-to, user),
	// locking it until the transaction ends, and counts the chat's
	// updates handed on at or after since. found is false when the chat
	// has no row yet (then nothing is written): use UpsertAddress.
	TouchChat(ctx context.Context, e AddressEntry, since time.Time) (a AddressEntry, found bool, handedOn int, err error)
	// InsertReceiveAtCommit writes e when the transaction commits (on
	// Postgres it travels with the COMMIT). A first row of the same
	// update already there fails the commit with CodeConflict.
	InsertReceiveAtCommit(ctx context.Context, e ReceiveEntry) error
	// ClaimCandidate locks and returns a claimable run: first a running run
	// whose lease expired at now (crash recovery goes first), else the
	// oldest queued run available at now. Rows locked by other transactions
	// are skipped, so many claimers proceed at once. more says whether
	// another run looked claimable too (read with the claim: a worker
	// that finds none need not ask again before a wake-up).
	ClaimCandidate(ctx context.Context, now time.Time) (run gh.Run, found, more bool, err error)
	// LockSession locks and returns a session. Lock order is session, then
	// run, on every path that takes both, so two writers of one session
	// cannot deadlock.
	LockSession(ctx context.Context, id string) (gh.Session, error)
	// LockRun locks and returns a run (CodeNotFound when absent).
	LockRun(ctx context.Context, id int64) (gh.Run, error)
	// LockSessionRun is LockSession then LockRun in one statement (the
	// fence of every leased write): an unknown session is
	// CodeUnknownSession, an unknown run CodeNotFound.
	LockSessionRun(ctx context.Context, sessionID string, runID int64) (gh.Session, gh.Run, error)
	// LockActiveRun locks and returns the session's run that is queued or
	// running (its session lock; at most one), if any.
	LockActiveRun(ctx context.Context, sessionID string) (gh.Run, bool, error)
	// LockWaitingRuns locks and returns the session's runs awaiting
	// approval, oldest first; with resumeOnly, only those whose decision
	// came while the session was busy (gh.Run.ResumeRequested).
	LockWaitingRuns(ctx context.Context, sessionID string, resumeOnly bool) ([]gh.Run, error)
	// UpdateRun writes the mutable fields of r (state, attempts, owner,
	// epoch, lease expiry, read watermark, cancel flag, reason, available
	// time, updated time).
	UpdateRun(ctx context.Context, r gh.Run) error
	// UpdateRunAtCommit is UpdateRun sent with the commit (on Postgres,
	// no round trip of its own): the transaction does not see the change,
	// so nothing after it in the transaction may depend on it.
	UpdateRunAtCommit(ctx context.Context, r gh.Run) error
	// InsertRun inserts a run and returns it with its id.
	InsertRun(ctx context.Context, r gh.Run) (gh.Run, error)
	// BumpEpoch increments and returns the session with its new epoch.
	BumpEpoch(ctx context.Context, sessionID string, now time.Time) (gh.Session, error)
	// AppendAll is Append for each of ps in order (without QueueRun),
	// each with its own result; on Postgres all in one round trip. An
	// error is the transaction's.
	AppendAll(ctx context.Context, ps []AppendParams) ([]AppendResult, error)
	// SetReadWatermark raises the session's read watermark to seq (never
	// lowers it).
	SetReadWatermark(ctx context.Context, sessionID string, seq int64, now time.Time) error
	// Wake asks for claimers to be woken once the transaction commits.
	Wake()
	// ClaimMemoryBatch locks and returns a batch: the due jobs (queued, or
	// running with their lease lapsed, AvailableAt at or before c.Now) of
	// one (user, session), oldest first, at most c.Limit, from a group that
	// is ready (see MemoryBatchClaim); the ready group holding the oldest
	// due job first. Jobs locked by other transactions are skipped, so two
	// claimers never get the same job. None is ready: an empty batch.
	ClaimMemoryBatch(ctx context.Context, c MemoryBatchClaim) ([]MemoryJob, error)
	// LockMemoryJob locks and returns a job (CodeNotFound when absent).
	LockMemoryJob(ctx context.Context, id int64) (MemoryJob, error)
	// LockMemoryJobs locks and returns those of ids that exist, by id.
	LockMemoryJobs(ctx context.Context, ids []int64) ([]MemoryJob, error)
	// UpdateMemoryJob writes the mutable fields of j (state, attempts,
	// owner, available time, last error, texts, updated time).
	UpdateMemoryJob(ctx context.Context, j MemoryJob) error
}

// Store is a backend. Reads and writes outside InTx run in their own
// transaction each.
type Store interface {
	Reader
	Writer
	// StatsReader counts activity per time bucket (stats.go).
	StatsReader
	MetricsReader     // the scrape-time gauges (metrics.go)
	Secrets           // the gateway's own generated secrets (secrets.go)
	ChatSettingsStore // what each chat chose: its model, its thinking level (chatsettings.go)
	// InTx runs fn in one transaction and commits when fn returns nil.
	// When the database reports a conflict that a retry resolves (a
	// serialization failure, or two transactions racing on one
	// idempotency key), fn is run again from scratch, so fn must only
	// touch the database through tx.
	InTx(ctx context.Context, fn func(ctx context.Context, tx Tx) error) error
	// ClaimStart is a claim whole: Tx.ClaimCandidate, then the start of
	// the run it found (StartedRun), committed together (on Postgres one
	// statement, one round trip). A takeover of a run with no attempts
	// left is found but not started (ClaimStarted.Exhausted): the caller
	// ends that run.
	ClaimStart(ctx context.Context, p ClaimStartParams) (ClaimStarted, error)
	// WakeC returns a channel closed at the next wake-up: a run may have
	// become claimable, in this process or (Postgres) any replica.
	WakeC() <-chan struct{}
	// Ping checks that the database answers.
	Ping(ctx context.Context) error
	// Dialect names the backend ("sqlite" or "postgres").
	Dialect() string
	// Close releases connections and stops listening for wake-ups.
	Close() error
}

// Memory rows. Package memory gives them their meaning: a fact is one thing
// remembered about a user, with one row per (user, subject) that a newer
// observation of the subject replaces; a job is a model pass over a turn,
// queued in the same transaction as the turn's rule-pass facts.

// MemoryFact is one thing remembered about a user.
type MemoryFact struct {
	ID int64 `json:"id"`
	// UserKey names the user across sessions: tenant and user, e.g.
	// "web:ana" or "telegram:123".
	UserKey string `json:"userKey"`
	// Subject is the normalised key the fact is about ("contact:sara",
	// "pref:language", "name"). A user has one fact per subject.
	Subject string `json:"subject"`
	Text    string `json:"text"`
	// Kind is contact, preference, name or note.
	Kind string `json:"kind"`
	// Value is the fact's datum when it has one (an email address, a name).
	Value           string `json:"value,omitempty"`
	SourceSessionID string `json:"sourceSessionId,omitempty"`
	SourceSeq       int64  `json:"sourceSeq,omitempty"`
	// ObservedAt is when the turn that told it happened; it orders the
	// facts of one subject, whatever order they are written in.
	ObservedAt time.Time `json:"observedAt"`
	// Created is when this version was written.
	Created time.Time `json:"createdAt"`
	Deleted bool      `json:"deleted,omitempty"`
	// DeletedAt is when it was forgotten; a fact observed before that
	// cannot bring the subject back.
	DeletedAt time.Time `json:"deletedAt,omitzero"`
}

// MemoryTerm is one indexed term of a fact and how often it occurs.
type MemoryTerm struct {
	Term string
	TF   int
}

// MemoryPosting says that a live fact holds a term.
type MemoryPosting struct {
	Term   string
	FactID int64
	TF     int
	// Length is the fact's term count.
	Length int
}

// MemoryStats are what BM25 needs of a user's live facts.
type MemoryStats struct {
	// Facts counts the user's live facts; Terms sums their term counts.
	Facts int
	Terms int64
	// DF says how many live facts hold each asked term.
	DF map[string]int
}

// MemoryVector is a fact's embedding: Vector is opaque to the store, and
// Model names what made it.
type MemoryVector struct {
	FactID int64
	Text   string
	Model  string
	Vector []byte
}

// Memory job states.
const (
	MemoryJobQueued  = "queued"
	MemoryJobRunning = "running"
	MemoryJobDone    = "done"
	MemoryJobFailed  = "failed"
)

// MemoryBatchClaim says which due jobs a ClaimMemoryBatch may take. A
// (user, session) group is ready when it has MinJobs due jobs (or Limit,
// when that is fewer), or when its newest due job was created at or
// before IdleBefore: the session has gone quiet.
type MemoryBatchClaim struct {
	Now        time.Time
	MinJobs    int
	IdleBefore time.Time
	// Limit bounds the batch. Defaults to 1.
	Limit int
}

// MemoryJob is a queued model pass over one turn. Jobs of one user and
// session are claimed together, in batches (ClaimMemoryBatch).
type MemoryJob struct {
	ID        int64
	UserKey   string
	SessionID string
	Seq       int64
	// At is when the turn happened: the ObservedAt of what the pass finds.
	At                   time.Time
	UserText, AnswerText string
	State                string
	Attempts             int
	MaxAttempts          int
	// Owner is the claimer of the running attempt.
	Owner string
	// AvailableAt is when a queued job is due, or when a running
	// attempt's lease lapses.
	AvailableAt time.Time
	LastError   string
	Created     time.Time
	Updated     time.Time
}

// EncodeExecution is how a run's execution identity is stored: JSON, or
// empty for none.
func EncodeExecution(e *gh.Execution) string {
	if e == nil {
		return ""
	}
	b, _ := json.Marshal(e)
	return string(b)
}

// DecodeExecution reverses EncodeExecution; what cannot be read is none.
func DecodeExecution(s string) *gh.Execution {
	if s == "" {
		return nil
	}
	var e gh.Execution
	if json.Unmarshal([]byte(s), &e) != nil {
		return nil
	}
	return &e
}
