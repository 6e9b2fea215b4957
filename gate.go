package gatehouse

import (
	"encoding/json"
	"strconv"
	"time"
)

// GateState is where an approval gate stands. Only pending moves, once.
type GateState string

// Gate states.
const (
	GatePending  GateState = "pending"
	GateApproved GateState = "approved"
	GateDenied   GateState = "denied"
	// GateExpired: nobody decided in time. The call does not run, and the
	// user is told it expired — never that it was refused.
	GateExpired GateState = "expired"
	// GateAnswered: a clarify gate got one of its options.
	GateAnswered GateState = "answered"
)

// Gate kinds.
const (
	GateKindApproval = "approval"
	GateKindClarify  = "clarify"
	// GateKindIncident is a stuck turn's card (package incidents): its
	// options are IncidentClose and IncidentDiagnose, its decision never
	// resumes the run, and no run waits for it.
	GateKindIncident = "incident"
	// GateKindLibrary asks an approver to add a file sent in a chat to
	// the shared knowledge collection (package gateway/uploads): Approve
	// or Deny, like an approval, but outside any run — no run waits for
	// it, and its decision resumes none.
	GateKindLibrary = "library"
)

// GateOutsideRun reports whether gates of kind are about a session
// rather than in one of its runs (incidents, library uploads): they do
// not hold a session's input, a cancel does not close them, and their
// decisions are logged by the package that opened them
// (each registers its kind with gates.Service.Register).
func GateOutsideRun(kind string) bool { return kind == GateKindIncident || kind == GateKindLibrary }

// The options of an incident's card.
const (
	IncidentClose    = "Close"
	IncidentDiagnose = "Diagnose"
)

// Gate is a tool call waiting for a person.
type Gate struct {
	ID         string          `json:"id"`
	SessionID  string          `json:"sessionId"`
	RunID      int64           `json:"runId"`
	ToolCallID string          `json:"toolCallId"`
	Tool       string          `json:"tool"`
	Arguments  json.RawMessage `json:"arguments"`
	// ArgsHash binds the approval to these exact arguments.
	ArgsHash string `json:"argsHash"`
	Kind     string `json:"kind"`
	// Question and Options belong to a clarify gate.
	Question  string    `json:"question,omitempty"`
	Options   []string  `json:"options,omitempty"`
	State     GateState `json:"state"`
	DecidedBy string    `json:"decidedBy,omitempty"`
	Surface   string    `json:"surface,omitempty"`
	Reason    string    `json:"reason,omitempty"`
	Answer    string    `json:"answer,omitempty"`
	DecidedAt time.Time `json:"decidedAt,omitzero"`
	ExpiresAt time.Time `json:"expiresAt"`
	Created   time.Time `json:"createdAt"`
	// Committed is true once the decision is committed to the log as
	// gate.decided. (The stored column and JSON field keep the first
	// name, "logged".)
	Committed bool `json:"logged"`
	// Approvals are the approvals recorded so far on a gate that needs
	// more than one person's (GATEHOUSE_APPROVERS_NEEDED), oldest first.
	Approvals []GateApproval `json:"approvals,omitempty"`
}

// GateApproval is one person's approval of a gate that needs several.
type GateApproval struct {
	// Person is who approved, as a user key (gh.LocalUser for the
	// operator): the same person twice is one approval.
	Person  string `json:"person"`
	By      string `json:"by"`
	Surface string `json:"surface"`
	// Needed is how many approvals the gate needed when this one was
	// recorded.
	Needed int       `json:"needed"`
	At     time.Time `json:"at"`
}

// GateApprovalAdded is the payload of gate.approval: one approval of a gate
// short of the approvals it needs (the gate stays pending), keyed
// "gate-approval:<gate id>:<person>".
type GateApprovalAdded struct {
	GateID  string `json:"gateId"`
	Tool    string `json:"tool"`
	By      string `json:"by"`
	Surface string `json:"surface"`
	Count   int    `json:"count"`
	Needed  int    `json:"needed"`
}

// Decision is a press of Approve or Deny (or an option, or the clock).
type Decision struct {
	State GateState `json:"decision"`
	By    string    `json:"by"`
	// Person is who decides, as a user key, for counting approvals of a
	// gate that needs several people's. Defaults to By.
	Person  string `json:"person,omitempty"`
	Surface string `json:"surface"`
	Reason  string `json:"reason,omitempty"`
	Answer  string `json:"answer,omitempty"`
}

// GateOpened is the payload of gate.opened.
type GateOpened struct {
	GateID     string          `json:"gateId"`
	ToolCallID string          `json:"toolCallId"`
	Tool       string          `json:"tool"`
	Arguments  json.RawMessage `json:"arguments"`
	ArgsHash   string          `json:"argsHash"`
	Kind       string          `json:"kind"`
	Question   string          `json:"question,omitempty"`
	Options    []string        `json:"options,omitempty"`
	ExpiresAt  time.Time       `json:"expiresAt"`
	// Workspace is the directory the turn started in: an approved call
	// runs there even if the session switched workspace meanwhile.
	Workspace string `json:"workspace,omitempty"`
	// Fields are what the card shows: each argument that decides what the
	// effect does, as the tool reads it (see [CardField]). Every surface
	// renders these, so a card says the same everywhere. Events from
	// before fields existed have none; surfaces then show Arguments.
	Fields []CardField `json:"fields,omitempty"`
	// Requesters are the user keys (UserMessage.UserKey) of the people
	// whose messages the turn that asked for the call answers: each of
	// them may decide the gate, besides the approvers named for the
	// tool. Events from before requesters were recorded have none.
	Requesters []string `json:"requesters,omitempty"`
	// GrantBound, when set, is the bound the tool declares for these
	// arguments (tools.Grantable): the card then also offers "Approve for
	// this chat", and a grant covers later calls with the same bound.
	// GrantLabel says the bound in words ("the same recipients: …").
	GrantBound string `json:"grantBound,omitempty"`
	GrantLabel string `json:"grantLabel,omitempty"`
}

// CardField is one line of an approval card: an argument as the tool will
// act on it ("To", "evil@attacker.example (name \"Sara\")"), whole and
// unescaped; each surface escapes it for display.
type CardField struct {
	Label string `json:"label"`
	Value string `json:"value"`
	// FreeText marks prose (a mail's body, a file's content): on a chat
	// platform it may be clipped to fit, marked, with a link to the whole
	// card. Every other field is shown whole or the call is refused
	// before any card.
	FreeText bool `json:"freeText,omitempty"`
}

// GateOpenedKey is the idempotency key of the n-th gate.opened of a tool
// call (n from 1).
func GateOpenedKey(toolCallID string, n int) string {
	return "gateopen:" + toolCallID + ":" + strconv.Itoa(n)
}

// GateOpenedEvent is gate.opened for the pending gate g, keyed key: the
// row's fields (id, call, tool, arguments and their hash, kind, question,
// options, expiry) taken from g, so the card can never say other than the
// row decides, and what only the card carries (Workspace, Fields,
// Requesters, the grant offer) taken from card.
func GateOpenedEvent(key string, g Gate, card GateOpened) NewEvent {
	card.GateID, card.ToolCallID, card.Tool, card.Arguments, card.ArgsHash = g.ID, g.ToolCallID, g.Tool, g.Arguments, g.ArgsHash
	card.Kind, card.Question, card.Options, card.ExpiresAt = g.Kind, g.Question, g.Options, g.ExpiresAt
	p, _ := json.Marshal(card)
	return NewEvent{Kind: KindGateOpened, Payload: p, Key: key}
}

// GateDecidedEvent is gate.decided for g as decided, keyed "gate:<id>":
// the one payload every decision commits (package gates writes them all:
// a press, the clock, a cancel closing its turn's cards, an incident
// retired, a library card), so a retry of any of them is the same event.
func GateDecidedEvent(g Gate) NewEvent {
	p, _ := json.Marshal(GateDecided{GateID: g.ID, RunID: g.RunID, ToolCallID: g.ToolCallID, Tool: g.Tool, Decision: g.State,
		By: g.DecidedBy, Surface: g.Surface, Reason: g.Reason, Answer: g.Answer})
	return NewEvent{Kind: KindGateDecided, Payload: p, Key: "gate:" + g.ID}
}

// GateApprovalEvent is gate.approval for a's approval of g, the count'th
// of needed, keyed "gate-approval:<id>:<person>" (one per person).
func GateApprovalEvent(g Gate, a GateApproval, count, needed int) NewEvent {
	p, _ := json.Marshal(GateApprovalAdded{GateID: g.ID, Tool: g.Tool, By: a.By, Surface: a.Surface, Count: count, Needed: needed})
	return NewEvent{Kind: KindGateApproval, Payload: p, Key: "gate-approval:" + g.ID + ":" + a.Person}
}

// GateDecided is the payload of gate.decided, keyed "gate:<id>".
type GateDecided struct {
	GateID string `json:"gateId"`
	// RunID is the run the gate's turn waits in: the decision resumes
	// that run (0 in events from before it was recorded, and for gates
	// outside a run).
	RunID      int64     `json:"runId,omitempty"`
	ToolCallID string    `json:"toolCallId"`
	Tool       string    `json:"tool"`
	Decision   GateState `json:"decision"`
	By         string    `json:"by"`
	Surface    string    `json:"surface"`
	Reason     string    `json:"reason,omitempty"`
	Answer     string    `json:"answer,omitempty"`
}
