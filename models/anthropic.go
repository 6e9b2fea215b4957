package models

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	gh "github.com/gatehouse/gatehouse"
)

const providerAnthropic = "anthropic"

// anthropicProvider speaks the Anthropic Messages API (streaming).
type anthropicProvider struct {
	client        anthropic.Client
	notConfigured string
	// thinking are the models that take extended thinking.
	thinking thinkingModels
}

func newAnthropic(cfg Config) *anthropicProvider {
	p := &anthropicProvider{thinking: cfg.ThinkingModels}
	if cfg.AnthropicAPIKey == "" {
		p.notConfigured = "anthropic needs an API key (ANTHROPIC_API_KEY)"
	}
	// WithoutEnvironmentDefaults stops the SDK from reading ANTHROPIC_* and
	// credential files in $HOME; the key option is always passed as well.
	p.client = anthropic.NewClient(
		option.WithoutEnvironmentDefaults(),
		option.WithHTTPClient(cfg.HTTPClient),
		option.WithBaseURL(cfg.AnthropicBaseURL),
		option.WithAPIKey(cfg.AnthropicAPIKey),
		option.WithMaxRetries(0),
	)
	return p
}

func (p *anthropicProvider) Name() string { return providerAnthropic }

func (p *anthropicProvider) Stream(ctx context.Context, req Request, onDelta func(string)) (Response, error) {
	if p.notConfigured != "" {
		return Response{}, newError(CodeNotConfigured, false, nil, "%s", p.notConfigured)
	}
	if onDelta == nil {
		onDelta = func(string) {}
	}
	params, applied, err := anthropicParams(req, p.thinking.takes(providerAnthropic, req.Model))
	if err != nil {
		return Response{}, err
	}
	stream := p.client.Messages.NewStreaming(ctx, params)
	defer stream.Close()

	var (
		resp    = Response{Applied: applied}
		msg     anthropic.Message
		started bool
		stopped bool
		inputs  = map[int64]*strings.Builder{} // tool arguments as streamed
	)
	for stream.Next() {
		ev := stream.Current()
		if !started && ev.Type != "message_start" {
			return resp, newError(CodeBadResponse, false, nil, "stream began with %q, not message_start", ev.Type)
		}
		switch ev.Type {
		case "message_start":
			if started {
				return resp, newError(CodeBadResponse, false, nil, "second message_start in one stream")
			}
			started = true
		case "content_block_start", "content_block_stop", "message_delta":
		case "content_block_delta":
			switch ev.Delta.Type {
			case "text_delta":
				if ev.Delta.Text != "" {
					onDelta(ev.Delta.Text)
				}
			case "input_json_delta":
				b := inputs[ev.Index]
				if b == nil {
					b = &strings.Builder{}
					inputs[ev.Index] = b
				}
				b.WriteString(ev.Delta.PartialJSON)
			}
		case "message_stop":
			stopped = true
		case "":
			return resp, newError(CodeBadResponse, false, nil, "stream event without a type: %.200s", ev.RawJSON())
		default:
			// Newer event types are ignored, as the API asks clients to do.
		}
		if err := msg.Accumulate(ev); err != nil {
			return resp, newError(CodeBadResponse, false, err, "inconsistent stream")
		}
		u := msg.Usage
		resp.Usage = gh.Usage{
			InputTokens:  int(u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens),
			OutputTokens: int(u.OutputTokens),
		}
		if stopped {
			break
		}
	}
	if err := stream.Err(); err != nil {
		return resp, anthropicClassify(err)
	}
	if !stopped {
		return resp, newError(CodeBadResponse, false, nil, "stream ended before message_stop (cut or not a Messages stream)")
	}

	var text strings.Builder
	for i, b := range msg.Content {
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
		case "thinking":
			// Kept verbatim: the signature covers the text, and the next
			// request of a tool loop must carry both unchanged.
			resp.Thinking = append(resp.Thinking, gh.ThinkingBlock{Type: b.Type, Thinking: b.Thinking, Signature: b.Signature})
		case "redacted_thinking":
			resp.Thinking = append(resp.Thinking, gh.ThinkingBlock{Type: b.Type, Data: b.Data})
		case "tool_use":
			args := ""
			if in := inputs[int64(i)]; in != nil {
				args = strings.TrimSpace(in.String())
			}
			if args == "" {
				args = strings.TrimSpace(string(b.Input))
			}
			if args == "" {
				args = "{}"
			}
			if !json.Valid([]byte(args)) {
				return resp, newError(CodeBadResponse, false, nil, "tool call %s: input is not valid JSON: %.200s", b.Name, args)
			}
			if b.ID == "" || b.Name == "" {
				return resp, newError(CodeBadResponse, false, nil, "tool_use block without id or name")
			}
			resp.ToolCalls = append(resp.ToolCalls, gh.ToolCall{ID: b.ID, Name: b.Name, Arguments: json.RawMessage(args)})
		}
	}
	resp.Text = text.String()
	switch msg.StopReason {
	case anthropic.StopReasonToolUse:
		resp.StopReason = StopToolUse
	case anthropic.StopReasonMaxTokens, anthropic.StopReasonModelContextWindowExceeded:
		resp.StopReason = StopMaxTokens
	case anthropic.StopReasonRefusal:
		resp.StopReason = StopError
	case "":
		return resp, newError(CodeBadResponse, false, nil, "stream ended without a stop_reason")
	default:
		resp.StopReason = StopEndTurn
	}
	if len(resp.ToolCalls) > 0 && resp.StopReason == StopEndTurn {
		resp.StopReason = StopToolUse
	}
	return resp, nil
}

func anthropicClassify(err error) *Error {
	var apiErr *anthropic.Error
	if errors.As(err, &apiErr) {
		if apiErr.StatusCode >= 200 && apiErr.StatusCode < 300 {
			// An error event inside a stream that began well.
			switch apiErr.Type() {
			case "rate_limit_error":
				return newError(CodeRateLimited, true, err, "error event in the stream")
			case "overloaded_error", "api_error", "timeout_error":
				return newError(CodeServerError, true, err, "error event in the stream")
			}
			return newError(CodeServerError, false, err, "error event in the stream")
		}
		var h http.Header
		if apiErr.Response != nil {
			h = apiErr.Response.Header
		}
		return classifyStatus(apiErr.StatusCode, h, string(apiErr.Type()), err)
	}
	if strings.HasPrefix(err.Error(), "received error while streaming") {
		return newError(CodeServerError, false, err, "error event in the stream")
	}
	return classifyTransport(err)
}

// anthropicParams maps a Request to the Messages API: system messages go to
// the system field; consecutive messages of one role are merged into one
// (tool results travel as tool_result blocks of a user message). A thinking
// level becomes extended thinking when takesThinking (the model has it):
// budget_tokens by level, max_tokens raised to the budget plus the answer's
// own allowance (the API wants max_tokens above the budget), and each
// assistant message's thinking blocks sent back first, unchanged. Without
// thinking the blocks are left out, which the API always accepts.
func anthropicParams(req Request, takesThinking bool) (anthropic.MessageNewParams, Applied, error) {
	params := anthropic.MessageNewParams{
		Model:     anthropic.Model(req.Model),
		MaxTokens: int64(req.MaxTokens),
	}
	if params.MaxTokens <= 0 {
		params.MaxTokens = defaultAnthropicMaxTokens
	}
	var applied Applied
	switch {
	case req.Thinking == "" || req.Thinking == gh.ThinkingOff:
		// Off is the API's default: nothing to send.
		applied.Thinking = req.Thinking
	case !takesThinking:
		applied = notTaken(providerAnthropic, req.Model, req.Thinking, "extended thinking")
	case toolLoopWithoutThinking(req.Messages):
		// The API keeps one thinking mode through a tool loop and refuses
		// thinking when the tool calls being answered came without it
		// (the level changed mid-turn, or another model asked for them).
		applied.Note = fmt.Sprintf("thinking %s not applied: the tool calls this request answers were made without thinking, "+
			"and Anthropic keeps one thinking mode through a tool loop", req.Thinking)
	default:
		budget := anthropicThinkingBudget[req.Thinking]
		params.MaxTokens += int64(budget)
		params.Thinking = anthropic.ThinkingConfigParamOfEnabled(int64(budget))
		applied.Thinking, applied.ThinkingBudget = req.Thinking, budget
	}
	applied.MaxTokens = int(params.MaxTokens)
	add := func(role anthropic.MessageParamRole, blocks ...anthropic.ContentBlockParamUnion) {
		if len(blocks) == 0 {
			return
		}
		if n := len(params.Messages); n > 0 && params.Messages[n-1].Role == role {
			params.Messages[n-1].Content = append(params.Messages[n-1].Content, blocks...)
			return
		}
		params.Messages = append(params.Messages, anthropic.MessageParam{Role: role, Content: blocks})
	}
	for _, m := range req.Messages {
		switch m.Role {
		case RoleSystem:
			if m.Text != "" {
				params.System = append(params.System, anthropic.TextBlockParam{Text: m.Text})
			}
		case RoleUser:
			if m.Text != "" {
				add(anthropic.MessageParamRoleUser, anthropic.NewTextBlock(m.Text))
			}
		case RoleAssistant:
			var blocks []anthropic.ContentBlockParamUnion
			if applied.ThinkingBudget > 0 {
				// First, as the model wrote them: the API checks the
				// signatures and wants them ahead of the tool_use blocks.
				for _, tb := range m.Thinking {
					switch tb.Type {
					case "thinking":
						blocks = append(blocks, anthropic.NewThinkingBlock(tb.Signature, tb.Thinking))
					case "redacted_thinking":
						blocks = append(blocks, anthropic.NewRedactedThinkingBlock(tb.Data))
					}
				}
			}
			if m.Text != "" {
				blocks = append(blocks, anthropic.NewTextBlock(m.Text))
			}
			for _, tc := range m.ToolCalls {
				args := json.RawMessage(tc.Arguments)
				if len(strings.TrimSpace(string(args))) == 0 {
					args = json.RawMessage("{}")
				}
				if !json.Valid(args) {
					return params, applied, newError(CodeBadRequest, false, nil, "tool call %s: arguments are not valid JSON", tc.ID)
				}
				blocks = append(blocks, anthropic.NewToolUseBlock(tc.ID, args, tc.Name))
			}
			add(anthropic.MessageParamRoleAssistant, blocks...)
		case RoleTool:
			tr := anthropic.ToolResultBlockParam{ToolUseID: m.ToolCallID}
			if m.IsError {
				tr.IsError = anthropic.Bool(true)
			}
			if m.Text != "" {
				tr.Content = []anthropic.ToolResultBlockParamContentUnion{{OfText: &anthropic.TextBlockParam{Text: m.Text}}}
			}
			add(anthropic.MessageParamRoleUser, anthropic.ContentBlockParamUnion{OfToolResult: &tr})
		default:
			return params, applied, newError(CodeBadRequest, false, nil, "message role %q is not one of system, user, assistant, tool", m.Role)
		}
	}
	for _, t := range req.Tools {
		schema, err := schemaObject(t)
		if err != nil {
			return params, applied, err
		}
		in := anthropic.ToolInputSchemaParam{ExtraFields: map[string]any{}}
		for k, v := range schema {
			switch k {
			case "type":
			case "properties":
				in.Properties = v
			case "required":
				if list, ok := v.([]any); ok {
					for _, r := range list {
						if s, ok := r.(string); ok {
							in.Required = append(in.Required, s)
						}
					}
				}
			default:
				in.ExtraFields[k] = v
			}
		}
		tool := anthropic.ToolParam{Name: t.Name, InputSchema: in}
		if t.Description != "" {
			tool.Description = anthropic.String(t.Description)
		}
		params.Tools = append(params.Tools, anthropic.ToolUnionParam{OfTool: &tool})
	}
	return params, applied, nil
}

// toolLoopWithoutThinking reports whether the request answers tool calls
// (its last assistant message asked for tools and no user message came
// after it) whose assistant message carries no thinking blocks.
func toolLoopWithoutThinking(msgs []Message) bool {
	for i := len(msgs) - 1; i >= 0; i-- {
		switch msgs[i].Role {
		case RoleUser:
			return false
		case RoleAssistant:
			return len(msgs[i].ToolCalls) > 0 && len(msgs[i].Thinking) == 0
		}
	}
	return false
}
