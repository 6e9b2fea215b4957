package openaiapi

import (
	"encoding/json"
	"errors"
	"net/http"

	gh "github.com/gatehouse/gatehouse"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared/constant"
)

// The response bodies, as OpenAI sends them. Only what Gatehouse fills is
// written (see doc.go for why not openai-go's response types); the object
// names and the usage come from openai-go.

type completion struct {
	ID      string                  `json:"id"`
	Object  constant.ChatCompletion `json:"object"`
	Created int64                   `json:"created"`
	Model   string                  `json:"model"`
	Choices []completionChoice      `json:"choices"`
	Usage   openai.CompletionUsage  `json:"usage"`
}

type completionChoice struct {
	Index        int           `json:"index"`
	Message      answerMessage `json:"message"`
	FinishReason string        `json:"finish_reason"`
	Logprobs     *struct{}     `json:"logprobs"`
}

type answerMessage struct {
	Role    constant.Assistant `json:"role"`
	Content string             `json:"content"`
	Refusal *string            `json:"refusal"`
}

type chunk struct {
	ID      string                       `json:"id"`
	Object  constant.ChatCompletionChunk `json:"object"`
	Created int64                        `json:"created"`
	Model   string                       `json:"model"`
	Choices []chunkChoice                `json:"choices"`
	// Usage is on the last chunk only, when the request asked for it
	// (stream_options.include_usage), with no choices.
	Usage *openai.CompletionUsage `json:"usage,omitempty"`
}

type chunkChoice struct {
	Index        int       `json:"index"`
	Delta        delta     `json:"delta"`
	FinishReason *string   `json:"finish_reason"`
	Logprobs     *struct{} `json:"logprobs"`
}

type delta struct {
	Role    constant.Assistant `json:"role,omitempty"`
	Content *string            `json:"content,omitempty"`
}

type model struct {
	ID      string         `json:"id"`
	Object  constant.Model `json:"object"`
	Created int64          `json:"created"`
	OwnedBy string         `json:"owned_by"`
}

type modelList struct {
	Object constant.List `json:"object"`
	Data   []model       `json:"data"`
}

// apiError is OpenAI's error body.
type apiError struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    string  `json:"code"`
}

// Error codes of this endpoint beyond Gatehouse's own.
const (
	codeMismatch      = "conversation_mismatch"
	codeModelNotFound = "model_not_found"
)

// endpointError is an error with the OpenAI code and status it is
// answered with, where Gatehouse's code alone does not say it.
type endpointError struct {
	status int
	code   string
	err    error
}

func (e *endpointError) Error() string { return e.err.Error() }
func (e *endpointError) Unwrap() error { return e.err }

// mismatch is the 409 of a history that does not match the log.
func mismatch(format string, args ...any) error {
	return &endpointError{status: http.StatusConflict, code: codeMismatch, err: gh.Errorf(gh.CodeConflict, format, args...)}
}

// statusOf maps an error to its HTTP status, OpenAI error type and code.
func statusOf(err error) (int, string, string) {
	var ee *endpointError
	if errors.As(err, &ee) {
		return ee.status, typeOf(ee.status), ee.code
	}
	code := gh.ErrorCode(err)
	status := http.StatusInternalServerError
	switch code {
	case gh.CodeInvalid, gh.CodeInvalidPayload, gh.CodeUnknownKind:
		status = http.StatusBadRequest
	case gh.CodeUnauthorized:
		return http.StatusUnauthorized, "authentication_error", "invalid_api_key"
	case gh.CodeExternalSession:
		status = http.StatusForbidden
	case gh.CodeUnknownSession, gh.CodeNotFound:
		status = http.StatusNotFound
	case gh.CodeIdempotencyConflict, gh.CodeConflict:
		status = http.StatusConflict
	case gh.CodePayloadTooLarge:
		status = http.StatusRequestEntityTooLarge
	case gh.CodeUnavailable:
		status = http.StatusServiceUnavailable
	}
	return status, typeOf(status), string(code)
}

func typeOf(status int) string {
	if status >= 500 {
		return "server_error"
	}
	return "invalid_request_error"
}

// writeError answers err in OpenAI's shape and logs it once: server faults
// as errors, client mistakes at debug level.
func (h *Handler) writeError(w http.ResponseWriter, r *http.Request, err error) {
	status, _, _ := statusOf(err)
	h.writeStatus(w, r, status, err)
}

func (h *Handler) writeStatus(w http.ResponseWriter, r *http.Request, status int, err error) {
	body := h.errorBody(r, err)
	if s, _, _ := statusOf(err); s != status {
		body.Error.Type = typeOf(status)
	}
	writeJSON(w, status, body)
}

// errorBody is err as OpenAI's error body; an internal failure's
// details stay in the log.
func (h *Handler) errorBody(r *http.Request, err error) apiError {
	status, typ, code := statusOf(err)
	msg := gh.ErrorMessage(err)
	if status >= 500 {
		h.log.Error("openai request failed", "method", r.Method, "path", r.URL.Path, "code", code, "err", err)
		if gh.ErrorCode(err) == gh.CodeInternal {
			msg = "internal error"
		}
	} else {
		h.log.Debug("openai request refused", "method", r.Method, "path", r.URL.Path, "code", code, "err", err)
	}
	return apiError{Error: errorDetail{Message: msg, Type: typ, Code: code}}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
