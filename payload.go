package gatehouse

import (
	"encoding/json"
	"slices"
	"time"
)

// Payloads of the event kinds. Every surface reads and writes these shapes;
// the web chat projects them.

// Delivery says how an input reaches the agent.
type Delivery string

// Deliveries.
const (
	// DeliveryQueue waits for the current turn to end (the default).
	DeliveryQueue Delivery = "queue"
	// DeliveryGuide is injected into the running turn at its next boundary.
	DeliveryGuide Delivery = "guide"
)

// Attachment is a file or link sent with an input.
type Attachment struct {
	Name string `json:"name,omitempty"`
	Type string `json:"type,omitempty"`
	URL  string `json:"url,omitempty"`
	Text string `json:"text,omitempty"`
}

// UserMessage is the payload of user.message.
type UserMessage struct {
	Text      string   `json:"text"`
	RequestID string   `json:"requestId,omitempty"`
	Delivery  Delivery `json:"delivery"`
	// RequestedDelivery is set when the delivery was changed on commit: a
	// guide with no live turn to join is committed as a queue input, and
	// the log says so.
	RequestedDelivery Delivery `json:"requestedDelivery,omitempty"`
	// Selection picks the model for the turn ("provider:model[,fallback]").
	Selection string `json:"selection,omitempty"`
	// Thinking picks how hard the model may reason before it answers, where
	// the provider supports it: "", "off", "low", "medium" or "high" (see
	// CheckThinking). "" leaves it to the provider.
	Thinking    string       `json:"thinking,omitempty"`
	Attachments []Attachment `json:"attachments,omitempty"`
	// Source is the surface it came from: api, web, telegram, discord, slack.
	Source string `json:"source,omitempty"`
	// User is who sent it, as the surface knows them.
	User string `json:"user,omitempty"`
}

// Thinking levels an input may choose (UserMessage.Thinking). Each provider
// maps them to its own option (Anthropic extended thinking, OpenAI
// reasoning_effort) for the models that take one; the empty level asks for
// nothing and leaves the provider's default.
const (
	ThinkingOff    = "off"
	ThinkingLow    = "low"
	ThinkingMedium = "medium"
	ThinkingHigh   = "high"
)

// CheckThinking returns an invalid error unless level is one an input may
// choose: "", off, low, medium or high. Levels are lower case on the wire,
// so a client's typo is refused rather than silently ignored.
func CheckThinking(level string) error {
	if level == "" || slices.Contains([]string{ThinkingOff, ThinkingLow, ThinkingMedium, ThinkingHigh}, level) {
		return nil
	}
	return Errorf(CodeInvalid, "thinking must be one of off, low, medium, high (or absent), not %q", level)
}

// LocalUser is the user key of input that names no person: the web chat
// and the HTTP API, which one operator uses.
const LocalUser = "local"

// UserKey names the person a message is from, across surfaces: the surface
// and the person on it ("telegram:u_…"). It is the key of their memory and
// contacts and of their budget. A nil message or one without a person is
// LocalUser.
func (m *UserMessage) UserKey() string {
	if m == nil || m.User == "" {
		return LocalUser
	}
	src := m.Source
	if src == "" {
		src = "api"
	}
	return src + ":" + m.User
}

// ToolCall is a model's request to run a tool.
type ToolCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// ToolSpec describes a tool to a model: its name, what it does, and the
// JSON Schema of its arguments object.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Schema      json.RawMessage `json:"schema,omitempty"`
}

// Usage counts tokens.
type Usage struct {
	InputTokens  int `json:"inputTokens"`
	OutputTokens int `json:"outputTokens"`
}

// Stop reasons of an assistant message.
const (
	StopEndTurn   = "end_turn"
	StopToolUse   = "tool_use"
	StopMaxTokens = "max_tokens"
	StopError     = "error"
	StopAborted   = "aborted"
)

// AssistantMessage is the payload of assistant.message, keyed by its
// generationId (u<promptSeq>-a<ordinal>), so a retried attempt cannot
// append a second answer for the same generation.
type AssistantMessage struct {
	GenerationID string `json:"generationId"`
	// RunID is the run whose attempt committed the message: a turn is
	// one run's, so a run resumed after a decision goes on with the
	// messages carrying its id, and an aside answered while its card
	// waited is another run's (0 in events from before it was recorded).
	RunID     int64      `json:"runId,omitempty"`
	Text      string     `json:"text,omitempty"`
	ToolCalls []ToolCall `json:"toolCalls,omitempty"`
	// InputSeqs lists the user.message seqs the request presented: an
	// input is answered exactly when a completed assistant message lists it.
	InputSeqs  []int64 `json:"inputSeqs"`
	StopReason string  `json:"stopReason"`
	Usage      Usage   `json:"usage"`
	Provider   string  `json:"provider,omitempty"`
	Model      string  `json:"model,omitempty"`
	// Thinking are the model's reasoning blocks, kept verbatim with their
	// signatures: Anthropic refuses a request after a tool result unless
	// the assistant turn that asked for the tools is sent back with them
	// unchanged, so they must outlive the attempt (an approval can pause
	// the turn for days).
	Thinking []ThinkingBlock `json:"thinking,omitempty"`
	// Memories are the remembered facts this turn's requests were given.
	Memories []RecalledMemory `json:"memories,omitempty"`
	// Sources are the knowledge library's passages the final answer
	// (stopReason end_turn) cites: of the passages the turn was given,
	// those whose document the answer names. Giving is not using — a
	// recalled passage may not bear on what was asked, and the model is
	// told to name the documents it used — so a passage counts only when
	// its document's name (or the name's last path element) appears in
	// the answer text; an answer that names none cites none. Never set on
	// an answer that asks for tools, nor on the gateway's own messages.
	Sources []Source `json:"sources,omitempty"`
	// Error and Hint explain a terminal failure (stopReason error).
	Error     string `json:"error,omitempty"`
	ErrorCode string `json:"errorCode,omitempty"`
	Hint      string `json:"hint,omitempty"`
}

// Source is a knowledge library passage an answer cites: enough to name
// it in a footnote ("handbook.md — Leave > Sick leave") and to open it
// (GET /v1/documents/{documentId} lists the document's passages, this one
// by passageId). It is a copy: the document may change or go later.
type Source struct {
	DocumentID int64 `json:"documentId"`
	// Document is the document's name in its collection.
	Document string `json:"document"`
	Title    string `json:"title,omitempty"`
	// Heading is the passage's heading path joined with " > ".
	Heading    string `json:"heading,omitempty"`
	PassageID  int64  `json:"passageId"`
	Collection string `json:"collection"`
}

// ThinkingBlock is one reasoning block of a model's answer, as the
// provider sent it. Type is "thinking" (Thinking and its Signature) or
// "redacted_thinking" (Data, encrypted by the provider).
type ThinkingBlock struct {
	Type      string `json:"type"`
	Thinking  string `json:"thinking,omitempty"`
	Signature string `json:"signature,omitempty"`
	Data      string `json:"data,omitempty"`
}

// ToolResult is the payload of tool.result, keyed by toolCallId.
type ToolResult struct {
	ToolCallID string `json:"toolCallId"`
	Name       string `json:"name"`
	Content    string `json:"content"`
	IsError    bool   `json:"isError,omitempty"`
	// External marks a result that is outside text (a fetched page, an
	// MCP server's output, a file, a mail server's words): committed
	// fenced, and it taints its turn, so that memory is not written
	// through a tool without a person's approval afterwards.
	External   bool  `json:"external,omitempty"`
	DurationMs int64 `json:"durationMs"`
}

// Compaction is the payload of compaction: older messages summarised.
type Compaction struct {
	Summary string `json:"summary"`
	// FirstKept is the seq of the first event kept verbatim after the summary.
	FirstKept int64 `json:"firstKept"`
	// Summarized counts the messages the summary replaces.
	Summarized int `json:"summarized"`
}

// ToolTiming is one tool run in a run.finished summary.
type ToolTiming struct {
	Tool       string `json:"tool"`
	DurationMs int64  `json:"durationMs"`
}

// ContextSize is the final context of an attempt.
type ContextSize struct {
	Messages int `json:"messages"`
	Tokens   int `json:"tokens"`
}

// TurnRetry is the payload of turn.retry: someone asked for the session's
// last turn to run again. It is an input, so it queues a run. A failed
// turn's retry (POST /v1/sessions/{id}/retry, or a regenerate of a failed
// answer) names the failed run: the run answers the inputs the failed turn
// left unanswered (a failed attempt answers none). A regenerate of an
// answer that did not fail (the OpenAI-compatible endpoint) also names the
// answer it replaces: the log is append-only, so that answer stays, but
// from the retry on it no longer answers its inputs and the model is not
// shown it, so the run answers them afresh.
type TurnRetry struct {
	// RunID is the run being retried: the failed one, or the one that
	// answered what is regenerated.
	RunID int64 `json:"runId"`
	// Replaces is the generationId of the final answer a regenerate
	// replaces; empty for a failed turn's retry.
	Replaces string `json:"replaces,omitempty"`
	// RequestID makes the retry idempotent, as an input's does.
	RequestID string `json:"requestId,omitempty"`
	By        string `json:"by"`
}

// RunStarted is the payload of run.started: committed with the claim of
// each attempt, so a client sees where a turn begins from the log alone.
// The attempt reads the log up to its own seq (the claim's watermark).
type RunStarted struct {
	RunID   int64 `json:"runId"`
	Attempt int   `json:"attempt"`
	// TookOver says the attempt took the run over from a worker whose
	// lease lapsed.
	TookOver bool `json:"tookOver,omitempty"`
	// Reason is why the run was retried or taken over, when it was.
	Reason string `json:"reason,omitempty"`
}

// RunFinished is the payload of run.finished: an attempt's own account. It
// is bookkeeping, not a message; the transcript skips it.
type RunFinished struct {
	RunID   int64  `json:"runId"`
	Attempt int    `json:"attempt"`
	Status  string `json:"status"`
	// ModelRequests counts the model requests of the attempt; the JSON
	// field keeps its first name, "turns", for logs already written.
	ModelRequests int     `json:"turns"`
	Tokens        Usage   `json:"tokens"`
	CostUSD       float64 `json:"costUsd,omitempty"`
	// TurnTokens and TurnCostUSD count every model call of the run so far,
	// from the ledger: a turn that paused for approval counts all its parts.
	TurnTokens  Usage        `json:"turnTokens"`
	TurnCostUSD float64      `json:"turnCostUsd,omitempty"`
	ToolTimings []ToolTiming `json:"toolTimings,omitempty"`
	Context     ContextSize  `json:"context"`
	StopReason  string       `json:"stopReason,omitempty"`
	Error       string       `json:"error,omitempty"`
	Provider    string       `json:"provider,omitempty"`
	Model       string       `json:"model,omitempty"`
	// Thinking is the thinking level the answering model ran with, and
	// Note what was asked for and not applied (the run's execution.thinking
	// and execution.note), for the web chat's run line.
	Thinking   string `json:"thinking,omitempty"`
	Note       string `json:"note,omitempty"`
	DurationMs int64  `json:"durationMs"`
}

// Notice is the payload of notice: something the user should be told that
// is not an answer (a fallback to another model, a downgraded delivery).
// A writer that words what it says sets Text; a writer below the surfaces
// (the kernel) commits facts instead (Pending) and leaves the wording to
// whoever shows it (cards.NoticeText), so the log's core knows no words.
type Notice struct {
	Code string `json:"code"`
	Text string `json:"text,omitempty"`
	// Pending is set on a NoticeCardPending: the card the message waits
	// behind.
	Pending *PendingCard `json:"pending,omitempty"`
}

// NoticeCardPending is the code of the notice a message typed while a card
// of its session is pending gets (committed by the kernel, worded by the
// surfaces).
const NoticeCardPending = "card-pending"

// PendingCard is what a NoticeCardPending says, as facts: the oldest card
// pending in the session, the surface the message came from and how many
// other cards wait.
type PendingCard struct {
	GateID   string `json:"gateId"`
	Kind     string `json:"kind,omitempty"`
	Tool     string `json:"tool,omitempty"`
	Question string `json:"question,omitempty"`
	// Fields are the card's fields that are not free text (a notice never
	// shows prose); Arguments stands in for them for a gate.opened from
	// before fields existed.
	Fields    []CardField     `json:"fields,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// Source is gh.UserMessage.Source of the message the notice answers.
	Source string `json:"source,omitempty"`
	// More counts the other cards pending in the session.
	More int `json:"more,omitempty"`
}

// LedgerRow records one model call: what it cost and how long it took.
// Every call writes one, failed ones included.
type LedgerRow struct {
	ID        int64  `json:"id"`
	SessionID string `json:"sessionId"`
	RunID     int64  `json:"runId"`
	// UserKey is whose turn made the call (memory's key: "local" for web
	// and API input).
	UserKey      string    `json:"userKey,omitempty"`
	Provider     string    `json:"provider"`
	Model        string    `json:"model"`
	Attempt      int       `json:"attempt"`
	InputTokens  int       `json:"inputTokens"`
	OutputTokens int       `json:"outputTokens"`
	CostUSD      float64   `json:"costUsd"`
	DurationMs   int64     `json:"durationMs"`
	Error        string    `json:"error,omitempty"`
	Created      time.Time `json:"createdAt"`
}

// RecalledMemory is a remembered fact a turn used.
type RecalledMemory struct {
	ID   int64  `json:"id"`
	Text string `json:"text"`
}

// Usage is the ledger summed by a key (a user or a provider:model).
type UsageRow struct {
	Key          string  `json:"key"`
	Calls        int     `json:"calls"`
	InputTokens  int     `json:"inputTokens"`
	OutputTokens int     `json:"outputTokens"`
	CostUSD      float64 `json:"costUsd"`
}
