package models

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/shared"

	gh "github.com/gatehouse/gatehouse"
)

const providerOpenAI = "openai"

// openaiProvider speaks OpenAI chat completions (streaming), which Ollama,
// vLLM, llama.cpp's server and hosted gateways serve too.
type openaiProvider struct {
	svc           openai.ChatCompletionService
	notConfigured string
	// official is true for api.openai.com, which wants max_completion_tokens;
	// compatible servers get max_tokens.
	official bool
	// thinking are the models that take reasoning_effort.
	thinking thinkingModels
}

func newOpenAI(cfg Config) *openaiProvider {
	p := &openaiProvider{thinking: cfg.ThinkingModels}
	if u, err := url.Parse(cfg.OpenAIBaseURL); err == nil && u.Hostname() == "api.openai.com" {
		p.official = true
		if cfg.OpenAIAPIKey == "" {
			p.notConfigured = "openai needs an API key (OPENAI_API_KEY), or a base URL (OPENAI_BASE_URL) of a local OpenAI-compatible server"
		}
	}
	// The service is built from explicit options only: openai.NewClient would
	// first read OPENAI_BASE_URL, OPENAI_ORG_ID, OPENAI_CUSTOM_HEADERS … from
	// the environment. An empty key sends no Authorization header.
	p.svc = openai.NewChatCompletionService(
		option.WithHTTPClient(cfg.HTTPClient),
		option.WithBaseURL(cfg.OpenAIBaseURL),
		option.WithAPIKey(cfg.OpenAIAPIKey),
		option.WithMaxRetries(0),
	)
	return p
}

func (p *openaiProvider) Name() string { return providerOpenAI }

func (p *openaiProvider) Stream(ctx context.Context, req Request, onDelta func(string)) (Response, error) {
	if p.notConfigured != "" {
		return Response{}, newError(CodeNotConfigured, false, nil, "%s", p.notConfigured)
	}
	if onDelta == nil {
		onDelta = func(string) {}
	}
	params, applied, err := p.params(req)
	if err != nil {
		return Response{}, err
	}
	stream := p.svc.NewStreaming(ctx, params)
	defer stream.Close()

	type call struct {
		id, name string
		args     strings.Builder
	}
	var (
		resp   = Response{Applied: applied}
		text   strings.Builder
		calls  = map[int64]*call{}
		id     string
		finish string
	)
	for stream.Next() {
		chunk := stream.Current()
		if !chunk.JSON.Choices.Valid() {
			return resp, newError(CodeBadResponse, false, nil, "stream chunk without choices: %.200s", chunk.RawJSON())
		}
		if chunk.ID != "" {
			if id != "" && chunk.ID != id {
				return resp, newError(CodeBadResponse, false, nil, "stream chunk id changed from %q to %q", id, chunk.ID)
			}
			id = chunk.ID
		}
		if chunk.JSON.Usage.Valid() {
			resp.Usage = gh.Usage{InputTokens: int(chunk.Usage.PromptTokens), OutputTokens: int(chunk.Usage.CompletionTokens)}
		}
		for _, ch := range chunk.Choices {
			if ch.Index != 0 {
				continue
			}
			if d := ch.Delta.Content; d != "" {
				text.WriteString(d)
				onDelta(d)
			}
			if d := ch.Delta.Refusal; d != "" {
				text.WriteString(d)
				onDelta(d)
			}
			for _, tc := range ch.Delta.ToolCalls {
				idx := tc.Index
				if idx < 0 {
					idx = 0 // some servers send -1 for a single call
				}
				c := calls[idx]
				if c == nil {
					c = &call{}
					calls[idx] = c
				}
				if c.id == "" {
					c.id = tc.ID
				}
				if c.name == "" {
					c.name = tc.Function.Name
				}
				c.args.WriteString(tc.Function.Arguments)
			}
			if ch.FinishReason != "" {
				finish = ch.FinishReason
			}
		}
	}
	if err := stream.Err(); err != nil {
		return resp, p.classify(err)
	}
	if finish == "" {
		return resp, newError(CodeBadResponse, false, nil, "stream ended before a finish_reason (cut or not a chat completion stream)")
	}

	resp.Text = text.String()
	idxs := make([]int64, 0, len(calls))
	for i := range calls {
		idxs = append(idxs, i)
	}
	sort.Slice(idxs, func(a, b int) bool { return idxs[a] < idxs[b] })
	for _, i := range idxs {
		c := calls[i]
		if c.name == "" {
			return resp, newError(CodeBadResponse, false, nil, "tool call %d without a function name", i)
		}
		args := strings.TrimSpace(c.args.String())
		if args == "" {
			args = "{}"
		}
		if !json.Valid([]byte(args)) {
			return resp, newError(CodeBadResponse, false, nil, "tool call %s: arguments are not valid JSON: %.200s", c.name, args)
		}
		cid := c.id
		if cid == "" {
			cid = fmt.Sprintf("call_%d", i)
		}
		resp.ToolCalls = append(resp.ToolCalls, gh.ToolCall{ID: cid, Name: c.name, Arguments: json.RawMessage(args)})
	}
	switch finish {
	case "length":
		resp.StopReason = StopMaxTokens
	case "content_filter":
		resp.StopReason = StopError
	case "tool_calls", "function_call":
		resp.StopReason = StopToolUse
	default:
		resp.StopReason = StopEndTurn
	}
	if len(resp.ToolCalls) > 0 && resp.StopReason == StopEndTurn {
		resp.StopReason = StopToolUse // some local servers say "stop" after tool calls
	}
	return resp, nil
}

func (p *openaiProvider) classify(err error) *Error {
	var apiErr *openai.Error
	if errors.As(err, &apiErr) {
		var h http.Header
		if apiErr.Response != nil {
			h = apiErr.Response.Header
		}
		return classifyStatus(apiErr.StatusCode, h, apiErr.Message, err)
	}
	var se *ssestream.StreamError
	if errors.As(err, &se) {
		return newError(CodeServerError, true, err, "error event in the stream")
	}
	return classifyTransport(err)
}

func (p *openaiProvider) params(req Request) (openai.ChatCompletionNewParams, Applied, error) {
	params := openai.ChatCompletionNewParams{
		Model:         shared.ChatModel(req.Model),
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	}
	var applied Applied
	switch {
	case !p.thinking.takes(providerOpenAI, req.Model):
		// Chat models refuse reasoning_effort outright (400): it is not
		// sent, and the turn goes on without it.
		applied = notTaken(providerOpenAI, req.Model, req.Thinking, "reasoning_effort")
	case req.Thinking == gh.ThinkingOff:
		applied.Note = fmt.Sprintf("thinking off not applied: openai:%s always reasons; it ran at its default effort", req.Model)
	case req.Thinking != "":
		params.ReasoningEffort = shared.ReasoningEffort(req.Thinking)
		applied.Thinking = req.Thinking
	}
	if req.MaxTokens > 0 {
		applied.MaxTokens = req.MaxTokens
		if p.official {
			params.MaxCompletionTokens = openai.Int(int64(req.MaxTokens))
		} else {
			params.MaxTokens = openai.Int(int64(req.MaxTokens))
		}
	}
	for _, m := range req.Messages {
		switch m.Role {
		case RoleSystem:
			params.Messages = append(params.Messages, openai.SystemMessage(m.Text))
		case RoleUser:
			params.Messages = append(params.Messages, openai.UserMessage(m.Text))
		case RoleAssistant:
			var a openai.ChatCompletionAssistantMessageParam
			if m.Text != "" || len(m.ToolCalls) == 0 {
				a.Content.OfString = openai.String(m.Text)
			}
			for _, tc := range m.ToolCalls {
				args := string(tc.Arguments)
				if strings.TrimSpace(args) == "" {
					args = "{}"
				}
				a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
						ID:       tc.ID,
						Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: tc.Name, Arguments: args},
					},
				})
			}
			params.Messages = append(params.Messages, openai.ChatCompletionMessageParamUnion{OfAssistant: &a})
		case RoleTool:
			text := m.Text
			if m.IsError {
				text = "ERROR: " + text // chat completions has no error flag on tool results
			}
			params.Messages = append(params.Messages, openai.ToolMessage(text, m.ToolCallID))
		default:
			return params, applied, newError(CodeBadRequest, false, nil, "message role %q is not one of system, user, assistant, tool", m.Role)
		}
	}
	for _, t := range req.Tools {
		schema, err := schemaObject(t)
		if err != nil {
			return params, applied, err
		}
		fn := shared.FunctionDefinitionParam{Name: t.Name, Parameters: shared.FunctionParameters(schema)}
		if t.Description != "" {
			fn.Description = openai.String(t.Description)
		}
		params.Tools = append(params.Tools, openai.ChatCompletionFunctionTool(fn))
	}
	return params, applied, nil
}

// schemaObject decodes a tool's JSON Schema; an empty one is an object
// schema without properties.
func schemaObject(t gh.ToolSpec) (map[string]any, error) {
	if t.Name == "" {
		return nil, newError(CodeBadRequest, false, nil, "tool without a name")
	}
	if len(strings.TrimSpace(string(t.Schema))) == 0 {
		return map[string]any{"type": "object", "properties": map[string]any{}}, nil
	}
	var m map[string]any
	if err := json.Unmarshal(t.Schema, &m); err != nil || m == nil {
		return nil, newError(CodeBadRequest, false, err, "tool %s: schema is not a JSON object", t.Name)
	}
	return m, nil
}
