package modeltest

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"
)

// AnthropicVersion is the anthropic-version the fake requires.
const AnthropicVersion = "2023-06-01"

// Anthropic is a fake Anthropic Messages API: POST /v1/messages with
// stream=true, answered with event:/data: SSE pairs (message_start,
// content_block_start, content_block_delta with text_delta or
// input_json_delta, content_block_stop, message_delta with stop_reason and
// usage, message_stop).
//
// It refuses a wrong X-Api-Key (401), a missing or unknown anthropic-version
// (400), an unknown model (404), a missing max_tokens, a non-streaming
// request, a message role other than user/assistant (system belongs in the
// system field), a conversation not starting with user or not alternating,
// empty text blocks, a tool_result that answers no tool_use of the
// previous assistant message, and a tool_use left without its result.
//
// Extended thinking is checked as the real API checks it: thinking must be
// {type: enabled, budget_tokens ≥ 1024 and < max_tokens} or {type:
// disabled}, and temperature may not be set with it. A thinking block sent
// back must carry the signature the fake gave that very text, and a
// redacted_thinking block data the fake issued; both only in assistant
// messages, before their other blocks. With thinking enabled, a request
// that answers tool calls (its last message holds tool_result blocks) is
// refused unless the assistant message that asked for them starts with its
// thinking blocks.
type Anthropic struct {
	*fake
	apiKey string
	models []string
	srv    *httptest.Server
	secret []byte // signs thinking blocks

	redacted sync.Map // data of the redacted_thinking blocks issued
}

// NewAnthropic starts a fake that accepts apiKey and the given models (any
// model if none). It is closed when the test ends.
func NewAnthropic(tb testing.TB, apiKey string, models ...string) *Anthropic {
	f := &Anthropic{fake: newFake(tb), apiKey: apiKey, models: models, secret: make([]byte, 16)}
	_, _ = rand.Read(f.secret)
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	tb.Cleanup(f.Close)
	return f
}

// BaseURL is the value for an Anthropic base URL option (no path).
func (f *Anthropic) BaseURL() string { return f.srv.URL }

// Close stops the server, releasing hanging requests.
func (f *Anthropic) Close() {
	select {
	case <-f.done:
	default:
		close(f.done)
	}
	f.srv.Close()
}

func anthropicErrorType(status int) string {
	switch status {
	case 400:
		return "invalid_request_error"
	case 401:
		return "authentication_error"
	case 403:
		return "permission_error"
	case 404:
		return "not_found_error"
	case 413:
		return "request_too_large"
	case 429:
		return "rate_limit_error"
	case 529:
		return "overloaded_error"
	}
	return "api_error"
}

func anthropicError(w http.ResponseWriter, status int, retryAfter, msg string) {
	w.Header().Set("request-id", "req_fake")
	writeJSON(w, status, retryAfter, map[string]any{
		"type":       "error",
		"error":      map[string]any{"type": anthropicErrorType(status), "message": msg},
		"request_id": "req_fake",
	})
}

func (f *Anthropic) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rec := Request{Time: time.Now(), Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body}
	var req anthropicRequest
	jsonErr := json.Unmarshal(body, &req)
	rec.Model = req.Model
	i := f.record(rec)
	sw := &statusWriter{ResponseWriter: w, f: f.fake, i: i}
	if status := f.handle(sw, r, body, jsonErr, &req); !sw.done {
		f.setStatus(i, status)
	}
}

type anthropicRequest struct {
	Model       string            `json:"model"`
	MaxTokens   int               `json:"max_tokens"`
	Stream      bool              `json:"stream"`
	System      json.RawMessage   `json:"system"`
	Messages    []json.RawMessage `json:"messages"`
	Tools       []json.RawMessage `json:"tools"`
	Temperature *float64          `json:"temperature"`
	Thinking    *struct {
		Type         string `json:"type"`
		BudgetTokens int    `json:"budget_tokens"`
	} `json:"thinking"`
}

// thinking reports whether the request enabled extended thinking.
func (r *anthropicRequest) thinking() bool { return r.Thinking != nil && r.Thinking.Type == "enabled" }

// sign is the signature the fake gives a thinking text.
func (f *Anthropic) sign(thinking string) string {
	m := hmac.New(sha256.New, f.secret)
	m.Write([]byte(thinking))
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

func (f *Anthropic) handle(w http.ResponseWriter, r *http.Request, body []byte, jsonErr error, req *anthropicRequest) int {
	fail := func(status int, msg string) int {
		anthropicError(w, status, "", msg)
		return status
	}
	if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
		return fail(http.StatusNotFound, "Not Found")
	}
	if r.Header.Get("X-Api-Key") != f.apiKey {
		return fail(http.StatusUnauthorized, "invalid x-api-key")
	}
	if v := r.Header.Get("anthropic-version"); v != AnthropicVersion {
		return fail(http.StatusBadRequest, fmt.Sprintf("anthropic-version: %q is not a valid version", v))
	}
	if jsonErr != nil {
		return fail(http.StatusBadRequest, "There was an issue with the JSON body of your request.")
	}
	if req.Model == "" {
		return fail(http.StatusBadRequest, "model: Field required")
	}
	if len(f.models) > 0 && !slices.Contains(f.models, req.Model) {
		return fail(http.StatusNotFound, "model: "+req.Model)
	}
	if req.MaxTokens < 1 {
		return fail(http.StatusBadRequest, "max_tokens: Field required")
	}
	if !req.Stream {
		return fail(http.StatusBadRequest, "this fake only serves stream=true")
	}
	if msg := checkAnthropicSystem(req.System); msg != "" {
		return fail(http.StatusBadRequest, msg)
	}
	if msg := checkAnthropicThinking(req); msg != "" {
		return fail(http.StatusBadRequest, msg)
	}
	if msg := f.checkMessages(req.Messages, req.thinking()); msg != "" {
		return fail(http.StatusBadRequest, msg)
	}
	if msg := checkAnthropicTools(req.Tools); msg != "" {
		return fail(http.StatusBadRequest, msg)
	}
	reply, ok := f.pop()
	if !ok {
		f.tb.Errorf("modeltest: Anthropic fake got an unexpected request: %s", body)
		return fail(http.StatusBadRequest, "modeltest: no reply programmed")
	}
	if reply.Status != 0 && reply.Status != http.StatusOK {
		anthropicError(w, reply.Status, reply.RetryAfter, fmt.Sprintf("programmed status %d", reply.Status))
		return reply.Status
	}
	if reply.Hang {
		f.wait(r)
		return 0
	}
	f.stream(w, r, req.Model, reply, req.thinking())
	return http.StatusOK
}

func (f *Anthropic) stream(w http.ResponseWriter, r *http.Request, model string, reply Reply, thinking bool) {
	in, out := reply.usage()
	s := startSSE(w)
	s.event("message_start", map[string]any{
		"type": "message_start",
		"message": map[string]any{
			"id": f.newID("msg_fake"), "type": "message", "role": "assistant", "model": model,
			"content": []any{}, "stop_reason": nil, "stop_sequence": nil,
			"usage": map[string]any{"input_tokens": in, "output_tokens": 1},
		},
	})
	s.event("ping", map[string]any{"type": "ping"})
	if reply.Reset {
		s.reset()
		return
	}
	if reply.Garbage {
		s.raw("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_bl\n\n")
		s.event("message_stop", map[string]any{"type": "message_stop"})
		return
	}
	index := 0
	if thinking && reply.Thinking != "" {
		s.event("content_block_start", map[string]any{
			"type": "content_block_start", "index": index,
			"content_block": map[string]any{"type": "thinking", "thinking": "", "signature": ""},
		})
		for _, d := range SplitText(reply.Thinking, 3) {
			s.event("content_block_delta", map[string]any{
				"type": "content_block_delta", "index": index,
				"delta": map[string]any{"type": "thinking_delta", "thinking": d},
			})
		}
		s.event("content_block_delta", map[string]any{
			"type": "content_block_delta", "index": index,
			"delta": map[string]any{"type": "signature_delta", "signature": f.sign(reply.Thinking)},
		})
		s.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
		index++
	}
	if thinking && reply.RedactedThinking != "" {
		data := "redacted:" + f.sign("redacted:"+reply.RedactedThinking)
		f.redacted.Store(data, true)
		s.event("content_block_start", map[string]any{
			"type": "content_block_start", "index": index,
			"content_block": map[string]any{"type": "redacted_thinking", "data": data},
		})
		s.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
		index++
	}
	deltas := reply.deltas()
	if len(deltas) > 0 || reply.Cut || reply.Stall {
		s.event("content_block_start", map[string]any{
			"type": "content_block_start", "index": index,
			"content_block": map[string]any{"type": "text", "text": ""},
		})
		for n, d := range deltas {
			s.event("content_block_delta", map[string]any{
				"type": "content_block_delta", "index": index,
				"delta": map[string]any{"type": "text_delta", "text": d},
			})
			if n == 0 && reply.Stall {
				f.wait(r)
				return
			}
			if n == 0 && reply.Cut {
				return
			}
		}
		if reply.Stall {
			f.wait(r)
			return
		}
		if reply.Cut {
			return
		}
		s.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
		index++
	}
	for _, tc := range reply.ToolCalls {
		id := tc.ID
		if id == "" {
			id = f.newID("toolu_fake")
		}
		s.event("content_block_start", map[string]any{
			"type": "content_block_start", "index": index,
			"content_block": map[string]any{"type": "tool_use", "id": id, "name": tc.Name, "input": map[string]any{}},
		})
		parts := append([]string{""}, splitN(tc.Arguments, 3)...)
		for _, p := range parts {
			s.event("content_block_delta", map[string]any{
				"type": "content_block_delta", "index": index,
				"delta": map[string]any{"type": "input_json_delta", "partial_json": p},
			})
		}
		s.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
		index++
	}
	stop := reply.StopReason
	if stop == "" {
		stop = "end_turn"
		if len(reply.ToolCalls) > 0 {
			stop = "tool_use"
		}
	}
	s.event("message_delta", map[string]any{
		"type":  "message_delta",
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": out},
	})
	s.event("message_stop", map[string]any{"type": "message_stop"})
}

func checkAnthropicSystem(raw json.RawMessage) string {
	if len(raw) == 0 || isString(raw) {
		return ""
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return "system: must be a string or a list of text blocks"
	}
	for i, b := range blocks {
		if b.Type != "text" || b.Text == "" {
			return fmt.Sprintf("system.%d: text content blocks must be non-empty", i)
		}
	}
	return ""
}

func checkAnthropicThinking(req *anthropicRequest) string {
	if req.Thinking == nil {
		return ""
	}
	switch req.Thinking.Type {
	case "disabled":
		return ""
	case "enabled":
	default:
		return "thinking.type: Input should be 'enabled' or 'disabled'"
	}
	if req.Thinking.BudgetTokens < 1024 {
		return "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"
	}
	if req.Thinking.BudgetTokens >= req.MaxTokens {
		return "`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking#max-tokens-and-context-window-size"
	}
	if req.Temperature != nil && *req.Temperature != 1 {
		return "`temperature` may only be set to 1 when thinking is enabled. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking#feature-compatibility"
	}
	return ""
}

func (f *Anthropic) checkMessages(raw []json.RawMessage, thinking bool) string {
	if len(raw) == 0 {
		return "messages: at least one message is required"
	}
	var prevRole string
	var pending []string // tool_use ids of the previous assistant message
	for i, r := range raw {
		var m struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		}
		if err := json.Unmarshal(r, &m); err != nil {
			return fmt.Sprintf("messages.%d: not an object", i)
		}
		if m.Role != "user" && m.Role != "assistant" {
			return fmt.Sprintf("messages.%d.role: Input should be 'user' or 'assistant'", i)
		}
		if i == 0 && m.Role != "user" {
			return "messages: first message must use the \"user\" role"
		}
		if m.Role == prevRole {
			return fmt.Sprintf("messages.%d: roles must alternate between \"user\" and \"assistant\"", i)
		}
		prevRole = m.Role
		var blocks []map[string]json.RawMessage
		switch {
		case isString(m.Content):
			var s string
			_ = json.Unmarshal(m.Content, &s)
			if s == "" {
				return fmt.Sprintf("messages.%d: content must be non-empty", i)
			}
		case isArray(m.Content):
			if err := json.Unmarshal(m.Content, &blocks); err != nil || len(blocks) == 0 {
				return fmt.Sprintf("messages.%d.content: must be a non-empty list of blocks", i)
			}
		default:
			return fmt.Sprintf("messages.%d.content: Field required", i)
		}
		var uses []string
		answered := map[string]bool{}
		others := false // a block other than thinking came
		for j, b := range blocks {
			var typ string
			_ = json.Unmarshal(b["type"], &typ)
			if typ == "thinking" || typ == "redacted_thinking" {
				if m.Role != "assistant" {
					return fmt.Sprintf("messages.%d.content.%d: %s blocks only in assistant messages", i, j, typ)
				}
				if others {
					return fmt.Sprintf("messages.%d.content.%d: %s blocks must come before the message's other blocks", i, j, typ)
				}
			} else {
				others = true
			}
			switch typ {
			case "thinking":
				var text, sig string
				_ = json.Unmarshal(b["thinking"], &text)
				_ = json.Unmarshal(b["signature"], &sig)
				if sig == "" || sig != f.sign(text) {
					return fmt.Sprintf("messages.%d.content.%d: Invalid `signature` in `thinking` block", i, j)
				}
			case "redacted_thinking":
				var data string
				_ = json.Unmarshal(b["data"], &data)
				if _, ok := f.redacted.Load(data); !ok {
					return fmt.Sprintf("messages.%d.content.%d: Invalid `data` in `redacted_thinking` block", i, j)
				}
			case "text":
				var text string
				_ = json.Unmarshal(b["text"], &text)
				if text == "" {
					return fmt.Sprintf("messages.%d.content.%d: text content blocks must be non-empty", i, j)
				}
			case "tool_use":
				if m.Role != "assistant" {
					return fmt.Sprintf("messages.%d.content.%d: tool_use only in assistant messages", i, j)
				}
				var id, name string
				_ = json.Unmarshal(b["id"], &id)
				_ = json.Unmarshal(b["name"], &name)
				if id == "" || name == "" || !isObject(b["input"]) {
					return fmt.Sprintf("messages.%d.content.%d: tool_use needs id, name and an input object", i, j)
				}
				uses = append(uses, id)
			case "tool_result":
				if m.Role != "user" {
					return fmt.Sprintf("messages.%d.content.%d: tool_result only in user messages", i, j)
				}
				var id string
				_ = json.Unmarshal(b["tool_use_id"], &id)
				if !slices.Contains(pending, id) {
					return fmt.Sprintf("messages.%d.content.%d: unexpected `tool_use_id` found in `tool_result` blocks: %s. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.", i, j, id)
				}
				answered[id] = true
			default:
				return fmt.Sprintf("messages.%d.content.%d: unsupported block type %q", i, j, typ)
			}
		}
		for _, id := range pending {
			if !answered[id] {
				return fmt.Sprintf("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s", i, id)
			}
		}
		pending = uses
	}
	if len(pending) > 0 {
		return fmt.Sprintf("`tool_use` ids were found without `tool_result` blocks immediately after: %v", pending)
	}
	if thinking {
		if msg := checkThinkingLoop(raw); msg != "" {
			return msg
		}
	}
	return ""
}

// checkThinkingLoop refuses, as the real API does with thinking enabled, a
// request that answers tool calls unless the assistant message that asked
// for them starts with a thinking or redacted_thinking block.
func checkThinkingLoop(raw []json.RawMessage) string {
	type block struct {
		Type string `json:"type"`
	}
	type message struct {
		Role    string  `json:"role"`
		Content []block `json:"content"`
	}
	n := len(raw)
	var last message
	if n < 2 || json.Unmarshal(raw[n-1], &last) != nil || last.Role != "user" ||
		!slices.Contains(last.Content, block{"tool_result"}) {
		return ""
	}
	var a message
	if json.Unmarshal(raw[n-2], &a) != nil || len(a.Content) == 0 {
		return ""
	}
	if first := a.Content[0].Type; first != "thinking" && first != "redacted_thinking" {
		return fmt.Sprintf("messages.%d.content.0.type: Expected `thinking` or `redacted_thinking`, but found `%s`. "+
			"When `thinking` is enabled, a final `assistant` message must start with a thinking block "+
			"(preceeding the lastmost set of `tool_use` and `tool_result` blocks). "+
			"We recommend you include thinking blocks from previous turns. To avoid this requirement, disable `thinking`.", n-2, first)
	}
	return ""
}

func checkAnthropicTools(raw []json.RawMessage) string {
	for i, r := range raw {
		var t struct {
			Name        string `json:"name"`
			InputSchema struct {
				Type string `json:"type"`
			} `json:"input_schema"`
		}
		if err := json.Unmarshal(r, &t); err != nil || !toolNameRE.MatchString(t.Name) {
			return fmt.Sprintf("tools.%d.name: invalid", i)
		}
		if t.InputSchema.Type != "object" {
			return fmt.Sprintf("tools.%d.input_schema.type: Input should be 'object'", i)
		}
	}
	return ""
}
