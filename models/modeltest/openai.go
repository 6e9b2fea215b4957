package modeltest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// OpenAI is a fake OpenAI-compatible server: POST /v1/chat/completions with
// stream=true, answered with SSE chunks that all carry one id, ending in
// "data: [DONE]".
//
// It refuses (as OpenAI or a strict local server does): a wrong bearer
// token (401), an unknown model (404), a non-streaming request, a system
// message after a non-system message (400, as llama.cpp-style templates
// do), a tool message that answers no pending call, an assistant tool call
// not followed by its tool result, and malformed tools. reasoning_effort
// must be none, minimal, low, medium or high, and is refused for the chat
// models that do not reason (gpt-4…, gpt-3.5…, chatgpt-…), as OpenAI
// refuses it.
type OpenAI struct {
	*fake
	apiKey string
	models []string
	srv    *httptest.Server
}

// NewOpenAI starts a fake that accepts apiKey and the given models (any
// model if none). It is closed when the test ends.
func NewOpenAI(tb testing.TB, apiKey string, models ...string) *OpenAI {
	f := &OpenAI{fake: newFake(tb), apiKey: apiKey, models: models}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	tb.Cleanup(f.Close)
	return f
}

// BaseURL is the value for an OpenAI base URL option: ".../v1".
func (f *OpenAI) BaseURL() string { return f.srv.URL + "/v1" }

// Close stops the server, releasing hanging requests.
func (f *OpenAI) Close() {
	select {
	case <-f.done:
	default:
		close(f.done)
	}
	f.srv.Close()
}

var toolNameRE = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

func openaiError(w http.ResponseWriter, status int, retryAfter, typ, code, msg string) {
	var c any
	if code != "" {
		c = code
	}
	writeJSON(w, status, retryAfter, map[string]any{
		"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": c},
	})
}

func (f *OpenAI) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rec := Request{Time: time.Now(), Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body}
	var req openaiRequest
	jsonErr := json.Unmarshal(body, &req)
	rec.Model = req.Model
	i := f.record(rec)
	sw := &statusWriter{ResponseWriter: w, f: f.fake, i: i}
	status := f.handle(sw, r, body, jsonErr, &req)
	if !sw.done {
		f.setStatus(i, status)
	}
}

type openaiRequest struct {
	Model           string            `json:"model"`
	Stream          bool              `json:"stream"`
	Messages        []json.RawMessage `json:"messages"`
	Tools           []json.RawMessage `json:"tools"`
	ReasoningEffort *string           `json:"reasoning_effort"`
}

// checkReasoning refuses what OpenAI refuses of reasoning_effort.
func checkReasoning(model string, effort *string) string {
	if effort == nil {
		return ""
	}
	if !slices.Contains([]string{"none", "minimal", "low", "medium", "high"}, *effort) {
		return fmt.Sprintf("Invalid value: '%s'. Supported values are: 'none', 'minimal', 'low', 'medium', and 'high'.", *effort)
	}
	for _, chat := range []string{"gpt-4", "gpt-3.5", "chatgpt-"} {
		if strings.HasPrefix(model, chat) {
			return "Unsupported parameter: 'reasoning_effort' is not supported with this model."
		}
	}
	return ""
}

func (f *OpenAI) handle(w http.ResponseWriter, r *http.Request, body []byte, jsonErr error, req *openaiRequest) int {
	model, stream, messages, tools := req.Model, req.Stream, req.Messages, req.Tools
	fail := func(status int, typ, code, msg string) int {
		openaiError(w, status, "", typ, code, msg)
		return status
	}
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		return fail(http.StatusNotFound, "invalid_request_error", "unknown_url", "Unknown request URL: "+r.Method+" "+r.URL.Path)
	}
	if f.apiKey != "" && r.Header.Get("Authorization") != "Bearer "+f.apiKey {
		return fail(http.StatusUnauthorized, "invalid_request_error", "invalid_api_key", "Incorrect API key provided.")
	}
	if jsonErr != nil {
		return fail(http.StatusBadRequest, "invalid_request_error", "", "We could not parse the JSON body of your request.")
	}
	if model == "" {
		return fail(http.StatusBadRequest, "invalid_request_error", "", "you must provide a model parameter")
	}
	if len(f.models) > 0 && !slices.Contains(f.models, model) {
		return fail(http.StatusNotFound, "invalid_request_error", "model_not_found", fmt.Sprintf("The model `%s` does not exist or you do not have access to it.", model))
	}
	if !stream {
		return fail(http.StatusBadRequest, "invalid_request_error", "", "this fake only serves stream=true")
	}
	if msg := checkOpenAIMessages(messages); msg != "" {
		return fail(http.StatusBadRequest, "invalid_request_error", "", msg)
	}
	if msg := checkOpenAITools(tools); msg != "" {
		return fail(http.StatusBadRequest, "invalid_request_error", "", msg)
	}
	if msg := checkReasoning(model, req.ReasoningEffort); msg != "" {
		return fail(http.StatusBadRequest, "invalid_request_error", "unsupported_parameter", msg)
	}
	reply, ok := f.pop()
	if !ok {
		f.tb.Errorf("modeltest: OpenAI fake got an unexpected request: %s", body)
		return fail(http.StatusBadRequest, "invalid_request_error", "", "modeltest: no reply programmed")
	}
	if reply.Status != 0 && reply.Status != http.StatusOK {
		typ := "server_error"
		if reply.Status < 500 {
			typ = "invalid_request_error"
		}
		if reply.Status == http.StatusTooManyRequests {
			typ = "rate_limit_exceeded"
		}
		openaiError(w, reply.Status, reply.RetryAfter, typ, "", fmt.Sprintf("programmed status %d", reply.Status))
		return reply.Status
	}
	if reply.Hang {
		f.wait(r)
		return 0
	}
	includeUsage := bytes.Contains(body, []byte(`"include_usage":true`))
	f.stream(w, r, model, reply, includeUsage)
	return http.StatusOK
}

func (f *OpenAI) stream(w http.ResponseWriter, r *http.Request, model string, reply Reply, includeUsage bool) {
	id := f.newID("chatcmpl-fake")
	created := time.Now().Unix()
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{
			"id": id, "object": "chat.completion.chunk", "created": created, "model": model,
			"system_fingerprint": "fp_fake",
			"choices":            []any{map[string]any{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish}},
		}
	}
	s := startSSE(w)
	s.data(chunk(map[string]any{"role": "assistant", "content": ""}, nil))
	if reply.Reset {
		s.reset()
		return
	}
	if reply.Garbage {
		s.raw("data: {\"id\":\"" + id + "\",\"choices\":[{\"delta\":{\"content\":\"trunc\n\n")
		s.raw("data: [DONE]\n\n")
		return
	}
	deltas := reply.deltas()
	for n, d := range deltas {
		s.data(chunk(map[string]any{"content": d}, nil))
		if n == 0 && reply.Stall {
			f.wait(r)
			return
		}
		if n == 0 && reply.Cut {
			return
		}
	}
	if len(deltas) == 0 && (reply.Stall || reply.Cut) {
		if reply.Stall {
			f.wait(r)
		}
		return
	}
	for i, tc := range reply.ToolCalls {
		cid := tc.ID
		if cid == "" {
			cid = f.newID("call_fake")
		}
		s.data(chunk(map[string]any{"tool_calls": []any{map[string]any{
			"index": i, "id": cid, "type": "function",
			"function": map[string]any{"name": tc.Name, "arguments": ""},
		}}}, nil))
		for _, part := range splitN(tc.Arguments, 3) {
			s.data(chunk(map[string]any{"tool_calls": []any{map[string]any{
				"index": i, "function": map[string]any{"arguments": part},
			}}}, nil))
		}
	}
	finish := reply.StopReason
	if finish == "" {
		finish = "stop"
		if len(reply.ToolCalls) > 0 {
			finish = "tool_calls"
		}
	}
	s.data(chunk(map[string]any{}, finish))
	if includeUsage {
		in, out := reply.usage()
		s.data(map[string]any{
			"id": id, "object": "chat.completion.chunk", "created": created, "model": model,
			"choices": []any{},
			"usage":   map[string]any{"prompt_tokens": in, "completion_tokens": out, "total_tokens": in + out},
		})
	}
	s.raw("data: [DONE]\n\n")
}

func checkOpenAIMessages(raw []json.RawMessage) string {
	if len(raw) == 0 {
		return "[] is too short - 'messages'"
	}
	var pending []string // tool_call ids awaiting a tool message
	seenOther := false
	for i, r := range raw {
		var m struct {
			Role       string          `json:"role"`
			Content    json.RawMessage `json:"content"`
			ToolCallID string          `json:"tool_call_id"`
			ToolCalls  []struct {
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function struct {
					Name      string  `json:"name"`
					Arguments *string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		}
		if err := json.Unmarshal(r, &m); err != nil {
			return fmt.Sprintf("messages[%d]: not an object", i)
		}
		if len(pending) > 0 && m.Role != "tool" {
			return fmt.Sprintf("An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: %v", pending)
		}
		switch m.Role {
		case "system", "developer":
			if seenOther {
				return "System message must be at the beginning."
			}
			if !isString(m.Content) {
				return fmt.Sprintf("messages[%d]: system content must be a string", i)
			}
			continue
		case "user":
			if !isString(m.Content) && !isArray(m.Content) {
				return fmt.Sprintf("messages[%d]: user content must be a string or an array", i)
			}
		case "assistant":
			hasContent := isString(m.Content) || isArray(m.Content)
			if !hasContent && len(m.ToolCalls) == 0 {
				return fmt.Sprintf("messages[%d]: assistant message needs content or tool_calls", i)
			}
			for j, tc := range m.ToolCalls {
				if tc.ID == "" || tc.Type != "function" || tc.Function.Name == "" || tc.Function.Arguments == nil {
					return fmt.Sprintf("messages[%d].tool_calls[%d]: needs id, type function, function.name and function.arguments", i, j)
				}
				if !json.Valid([]byte(*tc.Function.Arguments)) {
					return fmt.Sprintf("messages[%d].tool_calls[%d]: arguments are not JSON", i, j)
				}
				pending = append(pending, tc.ID)
			}
		case "tool":
			k := slices.Index(pending, m.ToolCallID)
			if k < 0 {
				return fmt.Sprintf("messages[%d]: messages with role 'tool' must be a response to a preceeding message with 'tool_calls' (tool_call_id %q)", i, m.ToolCallID)
			}
			pending = slices.Delete(pending, k, k+1)
			if !isString(m.Content) && !isArray(m.Content) {
				return fmt.Sprintf("messages[%d]: tool content must be a string", i)
			}
		default:
			return fmt.Sprintf("messages[%d]: invalid role %q", i, m.Role)
		}
		seenOther = true
	}
	if len(pending) > 0 {
		return fmt.Sprintf("tool_call_ids without response messages: %v", pending)
	}
	return ""
}

func checkOpenAITools(raw []json.RawMessage) string {
	for i, r := range raw {
		var t struct {
			Type     string `json:"type"`
			Function struct {
				Name       string          `json:"name"`
				Parameters json.RawMessage `json:"parameters"`
			} `json:"function"`
		}
		if err := json.Unmarshal(r, &t); err != nil || t.Type != "function" {
			return fmt.Sprintf("tools[%d]: must be a function tool", i)
		}
		if !toolNameRE.MatchString(t.Function.Name) {
			return fmt.Sprintf("tools[%d].function.name: invalid %q", i, t.Function.Name)
		}
		if len(t.Function.Parameters) > 0 && !isObject(t.Function.Parameters) {
			return fmt.Sprintf("tools[%d].function.parameters: must be an object", i)
		}
	}
	return ""
}

func firstByte(raw json.RawMessage) byte {
	b := bytes.TrimSpace(raw)
	if len(b) == 0 {
		return 0
	}
	return b[0]
}

func isString(raw json.RawMessage) bool { return firstByte(raw) == '"' }
func isArray(raw json.RawMessage) bool  { return firstByte(raw) == '[' }
func isObject(raw json.RawMessage) bool { return firstByte(raw) == '{' }
