// Package tools holds the Tool interface, the tool registry and the built-in
// tools email_send (SMTP), workspace_list, workspace_read and
// workspace_write. web_fetch lives in tools/webfetch, shell_exec and its
// sandbox in tools/shell, and tools/builtin gathers every built-in tool. The
// MCP bridge in tools/mcp turns the tools of remote MCP servers into the
// same Tool interface.
//
// A tool only runs: it never opens a gate, writes a receipt or fences its
// output. The toolworker does that, in this order: Registry.Check (unknown
// tool, not runnable on this install, bad arguments: answered at once, no
// approval card), the commitment check, the tier (Danger waits for a
// person), the effect journal, then Run.
//
// The package reads no environment variables: every setting comes in a
// Config struct filled by cmd/gatehouse.
package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	gh "github.com/gatehouse/gatehouse"
)

// Tier says whether a tool may run at once or needs a person's approval.
type Tier string

// Tiers.
const (
	// Safe tools run at once: they read, they do not act outside.
	Safe Tier = "safe"
	// Danger tools act outside (send, write, execute) and run only after a
	// person approves the call.
	Danger Tier = "danger"
)

// Call is one call of a tool: the call as the model asked for it (its id,
// the tool's name and the arguments object) and what the run needs besides.
type Call struct {
	gh.ToolCall
	// IdempotencyKey is the effect-journal receipt id for this exact call.
	// A tool whose outside system accepts an idempotency key passes it on,
	// so a retried call cannot act twice. Empty for safe tools.
	IdempotencyKey string
	// Workspace is the directory the turn started in (absolute path).
	Workspace string
	// SessionID is the session the call was made in.
	SessionID string
	// Platform is the surface the asking person's message came from:
	// telegram, discord, slack, or web and api for the HTTP API.
	Platform string
	// User is the key of the person asking (gh.UserMessage.UserKey, e.g.
	// "telegram:u_…"; gh.LocalUser for web and API input): whose memory
	// and contacts the call reads and writes. Empty when no person is
	// known; a tool that needs one refuses.
	User string
	// Zone is the asking person's time zone (their /tz, else the
	// gateway's GATEHOUSE_TIMEZONE): a relative date in the arguments is
	// resolved in it. Nil: UTC.
	Zone *time.Location
	// Now is the time a relative date is resolved against: when the call
	// was first checked (gh.GateOpened.CheckedAt on a re-check), so the
	// check of an approved call comes to the same arguments. Zero: the
	// current time.
	Now time.Time
}

// MemoryWriter is implemented by a tool that writes what is kept about the
// asking person (remember, forget). Such a tool may be Safe, but in a turn
// that has read outside text (a result marked External, a document sent
// with the message) its call waits for a person's approval like a Danger
// tool's: a fetched page must not rewrite someone's contacts.
type MemoryWriter interface {
	WritesMemory() bool
}

// Result is what a tool answers. A failure the model should read and act on
// (a refused path, a bad address, a server that said no) is a Result with
// IsError set and a nil error from Run.
type Result struct {
	Content string
	IsError bool
	// External marks text that came from outside (a web page, a file, a
	// remote tool's output): the caller fences it as data before a model reads it.
	External bool
}

// Tool is one tool a model may call.
type Tool interface {
	Name() string
	Description() string
	Schema() json.RawMessage // JSON Schema of the arguments object
	Tier() Tier
	// Runnable reports whether this install can run the tool at all (shell
	// switched off, no SMTP configured …): nil, or an error saying why.
	Runnable() error
	// Idempotent reports whether Run honours Call.IdempotencyKey (safe to retry).
	Idempotent() bool
	// Run executes the call. It returns a non-nil error only when it cannot
	// say what happened: the context ended, or the effect may have taken
	// place although the tool saw a failure (ErrOutcomeUnknown). The Result
	// then still says what is known. Everything else is a Result.
	Run(ctx context.Context, call Call) (Result, error)
}

// ErrOutcomeUnknown is wrapped by the error Run returns when the effect may
// or may not have happened (a connection dropped after a mail was handed
// over). The effect journal must not run such a call again unless the tool
// is Idempotent.
var ErrOutcomeUnknown = errors.New("outcome unknown")

// ErrorResult is a Result that reports a failure to the model; the tools
// in subpackages (tools/shell, tools/webfetch) use it too.
func ErrorResult(format string, args ...any) Result {
	return Result{Content: fmt.Sprintf(format, args...), IsError: true}
}
