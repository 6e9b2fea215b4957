package models_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/models"
	"github.com/gatehouse/gatehouse/models/modeltest"
)

var lookupSpec = gh.ToolSpec{Name: "lookup", Schema: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}}}`)}

// followUp is the request after resp's tool calls: the assistant message
// as the caller keeps it (with thinking, unless dropped) and a result.
func followUp(req models.Request, resp models.Response, thinking []gh.ThinkingBlock) models.Request {
	req.Messages = append(append([]models.Message(nil), req.Messages...),
		models.Message{Role: models.RoleAssistant, Text: resp.Text, ToolCalls: resp.ToolCalls, Thinking: thinking})
	for _, c := range resp.ToolCalls {
		req.Messages = append(req.Messages, models.Message{Role: models.RoleTool, ToolCallID: c.ID, Text: "42"})
	}
	return req
}

// The first content block of each assistant message of a request body.
func assistantBlocks(t *testing.T, r modeltest.Request) [][]map[string]any {
	t.Helper()
	var body struct {
		Messages []struct {
			Role    string           `json:"role"`
			Content []map[string]any `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(r.Body, &body); err != nil {
		t.Fatal(err)
	}
	var out [][]map[string]any
	for _, m := range body.Messages {
		if m.Role == "assistant" {
			out = append(out, m.Content)
		}
	}
	return out
}

// With thinking high, Anthropic gets extended thinking with the high
// budget, and the answer's signed thinking blocks go back, unchanged and
// first, in the request that answers its tool call: the fake refuses the
// follow-up otherwise, as the real API does.
func TestAnthropicThinkingRoundTripsThroughAToolCall(t *testing.T) {
	e := newEnv(t, nil)
	e.an.Push(modeltest.Reply{
		Thinking: "The user wants a lookup; I should call the tool.", RedactedThinking: "hidden",
		ToolCalls: []modeltest.ToolCall{{ID: "toolu_1", Name: "lookup", Arguments: `{"q":"answer"}`}},
	}, modeltest.Reply{Thinking: "The tool said 42.", Text: "It is 42."})

	req := userReq("look it up")
	req.Tools, req.Thinking = []gh.ToolSpec{lookupSpec}, gh.ThinkingHigh
	resp, _, err := e.reg.Call(context.Background(), chain(t, "anthropic:claude-sonnet-4-5"), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	sent := e.an.Requests()[0].JSON()
	th, _ := sent["thinking"].(map[string]any)
	if th["type"] != "enabled" || th["budget_tokens"] != float64(24576) || sent["max_tokens"].(float64) <= 24576 || sent["temperature"] != nil {
		t.Fatalf("request thinking %v, max_tokens %v, temperature %v", sent["thinking"], sent["max_tokens"], sent["temperature"])
	}
	if a := resp.Applied; a.Thinking != gh.ThinkingHigh || a.ThinkingBudget != 24576 || a.MaxTokens != int(sent["max_tokens"].(float64)) || a.Note != "" {
		t.Fatalf("applied %+v", a)
	}
	if len(resp.Thinking) != 2 || resp.Thinking[0].Type != "thinking" || resp.Thinking[0].Thinking != "The user wants a lookup; I should call the tool." ||
		resp.Thinking[0].Signature == "" || resp.Thinking[1].Type != "redacted_thinking" || resp.Thinking[1].Data == "" {
		t.Fatalf("thinking blocks %+v", resp.Thinking)
	}

	final, _, err := e.reg.Call(context.Background(), chain(t, "anthropic:claude-sonnet-4-5"), followUp(req, resp, resp.Thinking), nil)
	if err != nil {
		t.Fatalf("follow-up with the thinking blocks: %v", err)
	}
	if final.Text != "It is 42." || final.Applied.Thinking != gh.ThinkingHigh {
		t.Fatalf("final %q, applied %+v", final.Text, final.Applied)
	}
	blocks := assistantBlocks(t, e.an.Requests()[1])
	if len(blocks) != 1 || len(blocks[0]) != 3 || blocks[0][0]["type"] != "thinking" || blocks[0][0]["signature"] != resp.Thinking[0].Signature ||
		blocks[0][1]["type"] != "redacted_thinking" || blocks[0][2]["type"] != "tool_use" {
		t.Fatalf("assistant blocks sent back: %v", blocks)
	}

	// Altered thinking is refused: the blocks must go back unchanged.
	tampered := append([]gh.ThinkingBlock(nil), resp.Thinking...)
	tampered[0].Thinking += " "
	e.an.Push(modeltest.Reply{Text: "unused"})
	_, _, err = e.reg.Call(context.Background(), chain(t, "anthropic:claude-sonnet-4-5"), followUp(req, resp, tampered), nil)
	wantCode(t, err, models.CodeBadRequest)
}

// The fake refuses a thinking request that answers tool calls whose
// assistant message lost its thinking blocks; the provider does not send
// one: it runs that request without thinking and says so, rather than
// fail the turn.
func TestAnthropicThinkingLostBlocksAreNotSentWithThinking(t *testing.T) {
	e := newEnv(t, nil)
	e.an.Push(modeltest.Reply{Thinking: "Call it.", ToolCalls: []modeltest.ToolCall{{ID: "toolu_1", Name: "lookup", Arguments: `{}`}}})
	req := userReq("look it up")
	req.Tools, req.Thinking = []gh.ToolSpec{lookupSpec}, gh.ThinkingMedium
	resp, _, err := e.reg.Call(context.Background(), chain(t, "anthropic:claude-sonnet-4-5"), req, nil)
	if err != nil {
		t.Fatal(err)
	}

	// What the real API answers to such a request.
	raw := followUpBody(t, "claude-sonnet-4-5")
	hr, _ := http.NewRequest("POST", e.an.BaseURL()+"/v1/messages", strings.NewReader(raw))
	hr.Header.Set("X-Api-Key", anthropicKey)
	hr.Header.Set("anthropic-version", modeltest.AnthropicVersion)
	res, err := http.DefaultClient.Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusBadRequest {
		t.Fatalf("fake answered %d to a thinking follow-up without the thinking blocks, want 400", res.StatusCode)
	}

	e.an.Push(modeltest.Reply{Thinking: "unused", Text: "Done."})
	final, _, err := e.reg.Call(context.Background(), chain(t, "anthropic:claude-sonnet-4-5"), followUp(req, resp, nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	reqs := e.an.Requests()
	if _, ok := reqs[len(reqs)-1].JSON()["thinking"]; ok || final.Text != "Done." {
		t.Fatalf("sent thinking without the blocks (%s), answer %q", reqs[len(reqs)-1].Body, final.Text)
	}
	if final.Applied.Thinking != "" || !strings.Contains(final.Applied.Note, "without thinking") {
		t.Fatalf("applied %+v, want no thinking and a note", final.Applied)
	}
}

func followUpBody(t *testing.T, model string) string {
	t.Helper()
	b, _ := json.Marshal(map[string]any{
		"model": model, "max_tokens": 16384, "stream": true,
		"thinking": map[string]any{"type": "enabled", "budget_tokens": 8192},
		"messages": []any{
			map[string]any{"role": "user", "content": "look it up"},
			map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": map[string]any{}}}},
			map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": "toolu_1", "content": "42"}}},
		},
	})
	return string(b)
}

// A model without extended thinking is sent none: the call answers, and
// the note says the level was not applied.
func TestAnthropicModelWithoutThinking(t *testing.T) {
	e := newEnv(t, nil)
	e.an.Push(modeltest.Reply{Thinking: "never streamed", Text: "Hi."})
	req := userReq("hi")
	req.Thinking = gh.ThinkingLow
	resp, _, err := e.reg.Call(context.Background(), chain(t, "anthropic:b"), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := e.an.Requests()[0].JSON()["thinking"]; ok {
		t.Fatalf("thinking sent to a model without it: %s", e.an.Requests()[0].Body)
	}
	if resp.Text != "Hi." || len(resp.Thinking) != 0 || resp.Applied.Thinking != "" || !strings.Contains(resp.Applied.Note, "anthropic:b does not take extended thinking") {
		t.Fatalf("resp %q, thinking %v, applied %+v", resp.Text, resp.Thinking, resp.Applied)
	}
}

// reasoning_effort goes to OpenAI's reasoning models only; a chat model
// (which OpenAI would refuse it for) answers without it, and the note
// says so.
func TestOpenAIReasoningEffort(t *testing.T) {
	oa := modeltest.NewOpenAI(t, openaiKey)
	reg, err := models.New(models.Config{OpenAIAPIKey: openaiKey, OpenAIBaseURL: oa.BaseURL(), RetryBase: 1})
	if err != nil {
		t.Fatal(err)
	}
	oa.SetDefault(modeltest.Reply{Text: "ok"})
	ask := func(sel, level string) models.Response {
		t.Helper()
		req := userReq("think")
		req.Thinking = level
		resp, _, err := reg.Call(context.Background(), chain(t, sel), req, nil)
		if err != nil {
			t.Fatalf("%s %s: %v", sel, level, err)
		}
		return resp
	}
	effort := func() any {
		reqs := oa.Requests()
		return reqs[len(reqs)-1].JSON()["reasoning_effort"]
	}

	if r := ask("openai:o3-mini", gh.ThinkingLow); effort() != "low" || r.Applied.Thinking != gh.ThinkingLow || r.Applied.Note != "" {
		t.Fatalf("o3-mini: reasoning_effort %v, applied %+v", effort(), r.Applied)
	}
	if r := ask("openai:gpt-5", gh.ThinkingHigh); effort() != "high" || r.Applied.Thinking != gh.ThinkingHigh {
		t.Fatalf("gpt-5: reasoning_effort %v, applied %+v", effort(), r.Applied)
	}
	if r := ask("openai:gpt-4o", gh.ThinkingHigh); effort() != nil || r.Applied.Thinking != "" || !strings.Contains(r.Applied.Note, "openai:gpt-4o does not take reasoning_effort") {
		t.Fatalf("gpt-4o: reasoning_effort %v, applied %+v", effort(), r.Applied)
	}
	if r := ask("openai:o3", gh.ThinkingOff); effort() != nil || r.Applied.Thinking != "" || !strings.Contains(r.Applied.Note, "always reasons") {
		t.Fatalf("o3 off: reasoning_effort %v, applied %+v", effort(), r.Applied)
	}
	if r := ask("openai:gpt-4o", gh.ThinkingOff); effort() != nil || r.Applied.Thinking != gh.ThinkingOff || r.Applied.Note != "" {
		t.Fatalf("gpt-4o off: reasoning_effort %v, applied %+v", effort(), r.Applied)
	}
	if r := ask("openai:gpt-4o", ""); effort() != nil || r.Applied != (models.Applied{}) {
		t.Fatalf("no level: reasoning_effort %v, applied %+v", effort(), r.Applied)
	}
}

// ThinkingModels replaces the built-in list: a local server's model can be
// named to get reasoning_effort.
func TestThinkingModelsConfigured(t *testing.T) {
	oa := modeltest.NewOpenAI(t, "")
	oa.SetDefault(modeltest.Reply{Text: "ok"})
	reg, err := models.New(models.Config{OpenAIBaseURL: oa.BaseURL(), ThinkingModels: []string{"openai:qwen3*"}})
	if err != nil {
		t.Fatal(err)
	}
	for model, want := range map[string]any{"qwen3:8b": "medium", "o3": nil} {
		req := userReq("think")
		req.Thinking = gh.ThinkingMedium
		if _, _, err := reg.Call(context.Background(), chain(t, "openai:"+model), req, nil); err != nil {
			t.Fatal(err)
		}
		reqs := oa.Requests()
		if got := reqs[len(reqs)-1].JSON()["reasoning_effort"]; got != want {
			t.Fatalf("%s: reasoning_effort %v, want %v", model, got, want)
		}
	}
}

func TestBadThinkingLevelFailsFast(t *testing.T) {
	e := newEnv(t, nil)
	req := userReq("hi")
	req.Thinking = "extreme"
	_, _, err := e.reg.Call(context.Background(), chain(t, "openai:a"), req, nil)
	wantCode(t, err, models.CodeBadRequest)
	if n := len(e.oa.Requests()); n != 0 {
		t.Fatalf("%d requests sent for a bad level", n)
	}
}

// The scripted provider reports the level it was asked for as applied.
func TestScriptedReportsThinking(t *testing.T) {
	reg, err := models.New(models.Config{Selection: "scripted:demo", ScriptFile: writeScript(t, `[{"match":"*","text":"hi"}]`)})
	if err != nil {
		t.Fatal(err)
	}
	req := userReq("hello")
	req.Thinking = gh.ThinkingMedium
	resp, _, err := reg.Call(context.Background(), nil, req, nil)
	if err != nil || resp.Applied.Thinking != gh.ThinkingMedium {
		t.Fatalf("applied %+v, %v", resp.Applied, err)
	}
}
