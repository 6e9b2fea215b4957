package supervisor_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/httpapi"
	"github.com/gatehouse/gatehouse/internal/testing/stacktest"
	"github.com/gatehouse/gatehouse/internal/testing/testenv"
	"github.com/gatehouse/gatehouse/kernel"
	"github.com/gatehouse/gatehouse/models"
	"github.com/gatehouse/gatehouse/models/modeltest"
	"github.com/gatehouse/gatehouse/store"
	"github.com/gatehouse/gatehouse/tools"
	"github.com/gatehouse/gatehouse/toolworker"
)

// say commits an input that chooses its model and thinking level.
func (e *env) say(session, text, selection, thinking string, delivery ...gh.Delivery) int64 {
	e.t.Helper()
	if _, _, err := e.k.CreateSession(e.ctx, gh.Session{ID: session}); err != nil {
		e.t.Fatal(err)
	}
	d := gh.DeliveryQueue
	if len(delivery) > 0 {
		d = delivery[0]
	}
	p, _ := json.Marshal(gh.UserMessage{Text: text, Delivery: d, Selection: selection, Thinking: thinking})
	c, err := e.k.EdgeCommit(e.ctx, kernel.EdgeInput{SessionID: session, Event: gh.NewEvent{Kind: gh.KindUserMessage, Payload: p}})
	if err != nil {
		e.t.Fatal(err)
	}
	return c.Event.Seq
}

// approve decides the session's one pending gate as approved.
func (e *env) approve(session string) {
	e.t.Helper()
	var g gh.Gate
	e.waitFor("the gate", func() bool {
		gs, _ := e.st.ListGates(e.ctx, session, gh.GatePending, 10)
		if len(gs) == 1 {
			g = gs[0]
		}
		return len(gs) == 1
	})
	e.waitFor("the pause", func() bool { r, _, _ := e.k.LatestRun(e.ctx, session); return r.State == gh.RunAwaitingApproval })
	g, _, err := e.st.DecideGate(e.ctx, store.GateDecision{ID: g.ID, Decision: gh.Decision{State: gh.GateApproved, By: "ana", Surface: "test"}, Now: time.Now()})
	if err != nil {
		e.t.Fatal(err)
	}
	p, _ := json.Marshal(gh.GateDecided{GateID: g.ID, ToolCallID: g.ToolCallID, Tool: g.Tool, Decision: g.State, By: "ana", Surface: "test"})
	if _, err := e.k.EdgeCommit(e.ctx, kernel.EdgeInput{SessionID: session, Event: gh.NewEvent{Kind: gh.KindGateDecided, Payload: p, Key: "gate:" + g.ID}}); err != nil {
		e.t.Fatal(err)
	}
}

// A turn with thinking high on Anthropic whose tool call waits for an
// approval: the thinking blocks are kept in the assistant.message, and the
// attempt that resumes after the decision (a new attempt, reading the log)
// sends them back first, unchanged, with thinking still high — the fake
// refuses the request otherwise, as the real API does. The run records the
// level applied.
func TestThinkingBlocksSurviveAnApprovalPause(t *testing.T) {
	an := modeltest.NewAnthropic(t, "ant-key", "claude-sonnet-4-5")
	send := toolworker.FuncTool{ToolName: "send", ToolTier: tools.Danger, Fn: func(context.Context, tools.Call) (string, error) { return "sent", nil }}
	e := setup(t, opts{tools: []tools.Tool{send}, models: models.Config{AnthropicAPIKey: "ant-key", AnthropicBaseURL: an.BaseURL()}})
	an.Push(modeltest.Reply{Thinking: "Sending needs the tool.", RedactedThinking: "opaque", ToolCalls: []modeltest.ToolCall{{ID: "toolu_1", Name: "send", Arguments: `{}`}}},
		modeltest.Reply{Thinking: "It went out.", Text: "Sent it."})
	e.say("s1", "send it", "anthropic:claude-sonnet-4-5", gh.ThinkingHigh)

	e.waitFor("the pause", func() bool { r, _, _ := e.k.LatestRun(e.ctx, "s1"); return r.State == gh.RunAwaitingApproval })
	if r, _, _ := e.k.LatestRun(e.ctx, "s1"); r.Execution == nil || r.Execution.Thinking != gh.ThinkingHigh {
		t.Fatalf("execution at the pause %+v", r.Execution)
	}
	e.approve("s1")
	run := e.settled("s1")
	if run.State != gh.RunDone {
		t.Fatalf("run %+v", run)
	}

	as := assistants(t, e.events("s1"))
	if len(as) != 2 || as[1].Text != "Sent it." {
		t.Fatalf("answers %+v", as)
	}
	kept := as[0].Thinking
	if len(kept) != 2 || kept[0].Type != "thinking" || kept[0].Thinking != "Sending needs the tool." || kept[0].Signature == "" ||
		kept[1].Type != "redacted_thinking" || kept[1].Data == "" {
		t.Fatalf("assistant.message thinking %+v", kept)
	}
	reqs := an.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	for i, r := range reqs {
		if th, _ := r.JSON()["thinking"].(map[string]any); th["type"] != "enabled" || th["budget_tokens"] != float64(24576) {
			t.Fatalf("request %d thinking %v", i+1, r.JSON()["thinking"])
		}
	}
	var body struct {
		Messages []struct {
			Role    string           `json:"role"`
			Content []map[string]any `json:"content"`
		} `json:"messages"`
	}
	json.Unmarshal(reqs[1].Body, &body)
	var blocks []map[string]any
	for _, m := range body.Messages {
		if m.Role == "assistant" {
			blocks = m.Content
		}
	}
	if len(blocks) != 3 || blocks[0]["type"] != "thinking" || blocks[0]["signature"] != kept[0].Signature || blocks[1]["type"] != "redacted_thinking" || blocks[2]["type"] != "tool_use" {
		t.Fatalf("assistant turn sent back: %v", blocks)
	}
	if x := run.Execution; x == nil || x.Provider != "anthropic" || x.Thinking != gh.ThinkingHigh || x.ThinkingBudget != 24576 || x.MaxTokens <= 24576 || x.Note != "" {
		t.Fatalf("run execution %+v", run.Execution)
	}
}

// OpenAI: a reasoning model gets reasoning_effort; a chat model does not,
// the turn is answered all the same, and the run says the level was not
// applied.
func TestThinkingOnOpenAIModels(t *testing.T) {
	e := setup(t, opts{})
	e.fake.SetDefault(modeltest.Reply{Text: "ok"})

	e.say("s1", "think", "openai:o3-mini", gh.ThinkingMedium)
	run := e.settled("s1")
	if got := e.fake.Requests()[0].JSON()["reasoning_effort"]; got != "medium" {
		t.Fatalf("o3-mini: reasoning_effort %v", got)
	}
	if x := run.Execution; run.State != gh.RunDone || x == nil || x.Model != "o3-mini" || x.Thinking != gh.ThinkingMedium || x.Note != "" {
		t.Fatalf("o3-mini run %s, execution %+v", run.State, run.Execution)
	}

	e.say("s2", "think", "openai:gpt-4o", gh.ThinkingHigh)
	run = e.settled("s2")
	if _, sent := e.fake.Requests()[1].JSON()["reasoning_effort"]; sent {
		t.Fatalf("gpt-4o was sent reasoning_effort: %s", e.fake.Requests()[1].Body)
	}
	if x := run.Execution; run.State != gh.RunDone || x == nil || x.Thinking != "" || !strings.Contains(x.Note, "thinking high not applied") {
		t.Fatalf("gpt-4o run %s, execution %+v", run.State, run.Execution)
	}
	if as := assistants(t, e.events("s2")); len(as) != 1 || as[0].Text != "ok" {
		t.Fatalf("gpt-4o answers %+v", as)
	}
}

// The newest input of a turn that chose a level decides it: a guide that
// joins the turn without one does not switch thinking off halfway through
// its tool loop. The next turn asks afresh.
func TestThinkingLevelOfTheNewestInputThatChose(t *testing.T) {
	b := newBlockingTool()
	e := setup(t, opts{tools: b.tools()})
	e.pushToolThenText("done, in blue")
	e.fake.Push(modeltest.Reply{Text: "next"})
	e.say("s1", "do the thing", "openai:o3", gh.ThinkingLow)
	<-b.started
	e.say("s1", "and use blue", "", "", gh.DeliveryGuide)
	close(b.release)
	e.waitFor("the turn's answer", func() bool { return len(assistants(t, e.events("s1"))) == 2 })
	e.settled("s1")
	e.say("s1", "and now?", "openai:o3", "")
	e.waitFor("the next turn's answer", func() bool { return len(assistants(t, e.events("s1"))) == 3 })
	e.settled("s1")
	var efforts []any
	for _, r := range e.fake.Requests() {
		efforts = append(efforts, r.JSON()["reasoning_effort"])
	}
	if len(efforts) != 3 || efforts[0] != "low" || efforts[1] != "low" || efforts[2] != nil {
		t.Fatalf("reasoning_effort per request %v, want [low low <nil>]", efforts)
	}
}

// Through the whole stack: the HTTP input chooses the level, and the
// session's run, as GET /v1/sessions/{id} shows it, records what was
// applied.
func TestThinkingFromHTTPInputToTheRun(t *testing.T) {
	e := stacktest.NewEnv(t, nil, stacktest.EnvOptions{HTTP: &httpapi.Config{}})
	post := func(body map[string]any) int {
		b, _ := json.Marshal(body)
		req, _ := http.NewRequest("POST", "http://"+e.Addr+"/v1/sessions/h1/input", bytes.NewReader(b))
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(e.Authorize(req))
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if code := post(map[string]any{"text": "hi", "thinking": "maximum"}); code != http.StatusBadRequest {
		t.Fatalf("bad level answered %d, want 400", code)
	}
	if code := post(map[string]any{"text": "think it over", "selection": "openai:gpt-5-mini", "thinking": "high"}); code != http.StatusAccepted {
		t.Fatalf("input answered %d", code)
	}
	var got struct {
		Run *gh.Run `json:"run"`
	}
	testenv.Eventually(t, "the run to settle", func() bool {
		req, _ := http.NewRequest("GET", "http://"+e.Addr+"/v1/sessions/h1", nil)
		res, err := http.DefaultClient.Do(e.Authorize(req))
		if err != nil {
			return false
		}
		defer res.Body.Close()
		got.Run = nil
		return json.NewDecoder(res.Body).Decode(&got) == nil && got.Run != nil && got.Run.State == gh.RunDone
	})
	if x := got.Run.Execution; x == nil || x.Model != "gpt-5-mini" || x.Thinking != gh.ThinkingHigh {
		t.Fatalf("run execution %+v", got.Run.Execution)
	}
	reqs := e.Model.Requests()
	if effort := reqs[len(reqs)-1].JSON()["reasoning_effort"]; effort != "high" {
		t.Fatalf("reasoning_effort %v", effort)
	}
}
