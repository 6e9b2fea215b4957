package models

import (
	"context"
	"errors"
	"fmt"
	"time"

	gh "github.com/gatehouse/gatehouse"
)

// Message roles.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Stop reasons of a Response.
const (
	StopEndTurn   = "end_turn"
	StopToolUse   = "tool_use"
	StopMaxTokens = "max_tokens"
	StopError     = "error"
)

// Message is one entry of the conversation presented to a model.
type Message struct {
	// Role is "system", "user", "assistant" or "tool".
	Role string
	// Text is the message text (for role tool: the tool's output).
	Text string
	// ToolCalls are the calls an assistant message asked for.
	ToolCalls []gh.ToolCall
	// ToolCallID names the call a role tool message answers.
	ToolCallID string
	// IsError marks a role tool message whose tool failed.
	IsError bool
	// Thinking are an assistant message's reasoning blocks as its provider
	// sent them (Response.Thinking). Anthropic gets them back, unchanged and
	// first, when the request thinks too; other providers ignore them.
	Thinking []gh.ThinkingBlock
}

// Request is one model request.
type Request struct {
	// Model is the bare model name ("gpt-4.1-mini"). Registry.Call sets it
	// from each target of the chain; a Provider receives its own model name.
	Model     string
	Messages  []Message
	Tools     []gh.ToolSpec
	MaxTokens int // 0 means the provider's default (anthropic: 4096)
	// Thinking is the reasoning level asked for: "", "off", "low",
	// "medium" or "high" (gh.Thinking…). A provider applies it where the
	// model takes it (Config.ThinkingModels) and otherwise says so in
	// Response.Applied.Note; it never fails a call for it.
	Thinking string
}

// Response is the accumulated answer of one call.
type Response struct {
	Text       string
	ToolCalls  []gh.ToolCall
	StopReason string // "end_turn", "tool_use", "max_tokens" or "error"
	Usage      gh.Usage
	Provider   string
	Model      string
	// Thinking are the reasoning blocks of the answer, to be kept and sent
	// back with the assistant message (Message.Thinking).
	Thinking []gh.ThinkingBlock
	// Applied is what the answering provider sent of the request's options.
	Applied Applied
}

// Provider speaks one provider's wire protocol.
type Provider interface {
	// Name is the provider part of a selection ("openai").
	Name() string
	// Stream sends req and passes each text delta to onDelta (which may be
	// nil) as it arrives; the returned Response is the accumulated whole.
	// On failure it may return a partial Response (for its Usage) with the
	// error.
	Stream(ctx context.Context, req Request, onDelta func(text string)) (Response, error)
}

// Error codes.
const (
	CodeTimeout         = "model-timeout"          // no answer within RequestTimeout, or 408
	CodeRateLimited     = "model-rate-limited"     // 429
	CodeServerError     = "model-server-error"     // 5xx, or an error event in the stream
	CodeBadResponse     = "model-bad-response"     // unparseable, inconsistent or cut stream
	CodeUnauthorized    = "model-unauthorized"     // 401, 403
	CodeNotFound        = "model-not-found"        // 404 (usually a wrong model name)
	CodeBadRequest      = "model-bad-request"      // any other 4xx, or a request we cannot encode
	CodeUnreachable     = "model-unreachable"      // network error: refused, reset, DNS
	CodeCanceled        = "model-canceled"         // the caller's context ended
	CodeNotConfigured   = "model-not-configured"   // no selection, or a provider missing its key/file
	CodeUnknownProvider = "model-unknown-provider" // a selection names a provider nobody registered
	CodeUnknown         = "model-error"            // anything else
)

// Error is the one error type of this package.
type Error struct {
	Code       string
	Message    string
	Retryable  bool
	RetryAfter time.Duration // the server's Retry-After, when it sent one
	Err        error
}

func (e *Error) Error() string {
	s := e.Code
	if e.Message != "" {
		s += ": " + e.Message
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// ErrorCode returns the Code of the *Error in err's chain, or "" if none.
func ErrorCode(err error) string {
	var me *Error
	if errors.As(err, &me) {
		return me.Code
	}
	return ""
}

func newError(code string, retryable bool, err error, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), Retryable: retryable, Err: err}
}

// retryableCode says whether a code is retried by default (used for codes
// that come without an HTTP status, such as a scripted error).
func retryableCode(code string) bool {
	switch code {
	case CodeTimeout, CodeRateLimited, CodeServerError, CodeUnreachable:
		return true
	}
	return false
}
