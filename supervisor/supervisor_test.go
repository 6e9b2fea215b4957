package supervisor_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/gates"
	"github.com/gatehouse/gatehouse/internal/testing/testenv"
	"github.com/gatehouse/gatehouse/kernel"
	"github.com/gatehouse/gatehouse/memory"
	"github.com/gatehouse/gatehouse/models"
	"github.com/gatehouse/gatehouse/models/modeltest"
	"github.com/gatehouse/gatehouse/store"
	"github.com/gatehouse/gatehouse/store/sqlite"
	"github.com/gatehouse/gatehouse/supervisor"
	"github.com/gatehouse/gatehouse/tools"
	"github.com/gatehouse/gatehouse/toolworker"
)

type env struct {
	t    *testing.T
	ctx  context.Context
	k    *kernel.Kernel
	st   store.Store // the store k is over
	sup  *supervisor.Supervisor
	fake *modeltest.OpenAI
}

type opts struct {
	wrap      func(store.Store) store.Store
	memory    bool
	zones     bool // the store holds each person's zone (Config.Zones)
	tools     []tools.Tool
	kernel    kernel.Config
	models    models.Config
	sup       supervisor.Config
	noDefault bool // leave the model unconfigured
}

func setup(t *testing.T, o opts) *env {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(t.TempDir(), "gatehouse.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if o.kernel.RetryBackoff == 0 {
		o.kernel.RetryBackoff = time.Millisecond
	}
	var kst store.Store = st
	if o.wrap != nil {
		kst = o.wrap(st)
	}
	k := kernel.New(kst, o.kernel)
	fake := modeltest.NewOpenAI(t, "test-key")
	mc := o.models
	if !o.noDefault && mc.Selection == "" {
		mc.Selection = "openai:test-model"
	}
	mc.OpenAIAPIKey, mc.OpenAIBaseURL = "test-key", fake.BaseURL()
	if mc.RetryBase == 0 {
		mc.RetryBase = time.Millisecond
	}
	if mc.MaxRetries == 0 {
		mc.MaxRetries = 1
	}
	mc.Ledger = supervisor.Ledger(k, nil)
	reg, err := models.New(mc)
	if err != nil {
		t.Fatal(err)
	}
	sc := o.sup
	sc.Kernel, sc.Models = k, reg
	sc.Tools = toolworker.New(toolworker.Config{Kernel: k, Tools: tools.NewRegistry(o.tools...),
		Gates: gates.NewService(gates.Config{Registry: gates.NewSQL(st, nil), Kernel: k, Store: st})})
	if o.memory {
		sc.Memory = memory.New(st, memory.Config{NoModelPass: true})
	}
	if o.zones {
		sc.Zones = st
	}
	if sc.Poll == 0 {
		sc.Poll = 20 * time.Millisecond
	}
	sup, err := supervisor.New(sc)
	if err != nil {
		t.Fatal(err)
	}
	if err := sup.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		sup.Stop(c)
	})
	return &env{t: t, ctx: ctx, k: k, st: kst, sup: sup, fake: fake}
}

func (e *env) input(session, text string, delivery gh.Delivery) int64 {
	e.t.Helper()
	if _, _, err := e.k.CreateSession(e.ctx, gh.Session{ID: session}); err != nil {
		e.t.Fatal(err)
	}
	if delivery == "" {
		delivery = gh.DeliveryQueue
	}
	p, _ := json.Marshal(gh.UserMessage{Text: text, Delivery: delivery})
	c, err := e.k.EdgeCommit(e.ctx, kernel.EdgeInput{SessionID: session, Event: gh.NewEvent{Kind: gh.KindUserMessage, Payload: p}})
	if err != nil {
		e.t.Fatal(err)
	}
	return c.Event.Seq
}

// settled waits until the session's newest run is no longer active.
func (e *env) settled(session string) gh.Run {
	e.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		r, ok, err := e.k.LatestRun(e.ctx, session)
		if err != nil {
			e.t.Fatal(err)
		}
		if ok && !r.State.Active() {
			return r
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("run of %s still %s", session, r.State)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (e *env) waitFor(what string, cond func() bool) {
	e.t.Helper()
	testenv.Eventually(e.t, what, cond)
}

func (e *env) events(session string) []gh.Event {
	e.t.Helper()
	evs, err := e.k.Events(e.ctx, session, 0, 1000)
	if err != nil {
		e.t.Fatal(err)
	}
	return evs
}

func kinds(evs []gh.Event) string {
	var out []string
	for _, e := range evs {
		out = append(out, string(e.Kind))
	}
	return strings.Join(out, " ")
}

func assistants(t *testing.T, evs []gh.Event) []gh.AssistantMessage {
	t.Helper()
	var out []gh.AssistantMessage
	for _, e := range evs {
		if e.Kind == gh.KindAssistantMessage {
			var a gh.AssistantMessage
			if err := json.Unmarshal(e.Payload, &a); err != nil {
				t.Fatal(err)
			}
			out = append(out, a)
		}
	}
	return out
}

func TestSimpleTurn(t *testing.T) {
	berlin, _ := time.LoadLocation("Europe/Berlin")
	e := setup(t, opts{sup: supervisor.Config{Location: berlin, Now: func() time.Time { return time.Date(2026, 11, 30, 23, 30, 0, 0, time.UTC) }}})
	e.fake.Push(modeltest.Reply{Text: "Hello there, friend."})
	e.input("s1", "hi", "")
	run := e.settled("s1")
	if run.State != gh.RunDone {
		t.Fatalf("run %+v", run)
	}
	// The run records what answered it, for audit.
	if x := run.Execution; x == nil || x.Provider != "openai" || x.Model != "test-model" || !strings.Contains(x.Selection, "openai:") {
		t.Fatalf("run execution %+v", run.Execution)
	}
	evs := e.events("s1")
	if got := kinds(evs); got != "user.message run.started assistant.message run.finished" {
		t.Fatalf("log: %s", got)
	}
	a := assistants(t, evs)[0]
	if a.Text != "Hello there, friend." || a.GenerationID != "u1-a1" || len(a.InputSeqs) != 1 || a.InputSeqs[0] != 1 || a.StopReason != gh.StopEndTurn || a.Provider != "openai" || a.Model != "test-model" {
		t.Fatalf("answer %+v", a)
	}
	var fin gh.RunFinished
	json.Unmarshal(evs[3].Payload, &fin)
	if fin.Status != "done" || fin.ModelRequests != 1 || fin.Tokens.InputTokens == 0 || fin.Provider != "openai" {
		t.Fatalf("run.finished %+v", fin)
	}
	// The base prompt comes first, with the date in the user's zone.
	req := e.fake.Requests()[0].JSON()
	first := req["messages"].([]any)[0].(map[string]any)
	if first["role"] != "system" || !strings.Contains(first["content"].(string), "Tuesday, 1 December 2026") || !strings.Contains(first["content"].(string), "Europe/Berlin") {
		t.Fatalf("first message %v", first)
	}
	rows, _ := e.k.Ledger(e.ctx, "s1", 0)
	if len(rows) != 1 || rows[0].RunID != run.ID || rows[0].Provider != "openai" || rows[0].Model != "test-model" {
		t.Fatalf("ledger %+v", rows)
	}
}

func TestToolTurn(t *testing.T) {
	var calls int
	var mu sync.Mutex
	lookup := toolworker.FuncTool{ToolName: "lookup", Desc: "look a word up", ArgSchema: json.RawMessage(`{"type":"object","properties":{"word":{"type":"string"}}}`),
		Fn: func(ctx context.Context, call tools.Call) (string, error) {
			mu.Lock()
			calls++
			mu.Unlock()
			var a struct{ Word string }
			json.Unmarshal(call.Arguments, &a)
			return "definition of " + a.Word, nil
		},
	}
	e := setup(t, opts{tools: []tools.Tool{lookup}})
	e.fake.Push(modeltest.Reply{ToolCalls: []modeltest.ToolCall{{ID: "call_1", Name: "lookup", Arguments: `{"word":"gate"}`}}},
		modeltest.Reply{Text: "A gate is a way through."})
	e.input("s1", "what is a gate?", "")
	e.settled("s1")
	evs := e.events("s1")
	if got := kinds(evs); got != "user.message run.started assistant.message tool.result assistant.message run.finished" {
		t.Fatalf("log: %s", got)
	}
	as := assistants(t, evs)
	if as[0].StopReason != gh.StopToolUse || as[0].GenerationID != "u1-a1" || as[1].GenerationID != "u1-a2" || as[1].Text != "A gate is a way through." {
		t.Fatalf("answers %+v", as)
	}
	var r gh.ToolResult
	json.Unmarshal(evs[3].Payload, &r)
	if r.ToolCallID != "u1-a1_0_call_1" || r.Content != "definition of gate" || r.IsError || evs[3].Key != "tool:u1-a1_0_call_1" {
		t.Fatalf("result %+v key %s", r, evs[3].Key)
	}
	if calls != 1 {
		t.Fatalf("tool ran %d times", calls)
	}
	// The model saw the result as the answer to its call.
	msgs := e.fake.Requests()[1].JSON()["messages"].([]any)
	last := msgs[len(msgs)-1].(map[string]any)
	if last["role"] != "tool" || last["tool_call_id"] != "u1-a1_0_call_1" {
		t.Fatalf("second request ends with %v", last)
	}
}

// blockingTool runs until released, so tests can act mid-turn.
type blockingTool struct {
	started chan struct{}
	release chan struct{}
}

func newBlockingTool() *blockingTool {
	return &blockingTool{started: make(chan struct{}, 10), release: make(chan struct{})}
}

func (b *blockingTool) tools() []tools.Tool {
	return []tools.Tool{toolworker.FuncTool{ToolName: "wait",
		Fn: func(ctx context.Context, _ tools.Call) (string, error) {
			b.started <- struct{}{}
			select {
			case <-b.release:
				return "waited", nil
			case <-ctx.Done():
				return "", ctx.Err()
			}
		}}}
}

func (e *env) pushToolThenText(text string) {
	e.fake.Push(modeltest.Reply{ToolCalls: []modeltest.ToolCall{{ID: fmt.Sprintf("call_%d", time.Now().UnixNano()), Name: "wait", Arguments: `{}`}}},
		modeltest.Reply{Text: text})
}

func TestQueuedInputMidTurnIsAnsweredNext(t *testing.T) {
	b := newBlockingTool()
	e := setup(t, opts{tools: b.tools()})
	e.pushToolThenText("first answer")
	e.fake.Push(modeltest.Reply{Text: "second answer"})
	first := e.input("s1", "first", "")
	<-b.started
	second := e.input("s1", "second, while you work", gh.DeliveryQueue)
	close(b.release)
	e.waitFor("the second answer", func() bool { return len(assistants(t, e.events("s1"))) == 3 })
	e.settled("s1")
	as := assistants(t, e.events("s1"))
	if as[1].Text != "first answer" || fmt.Sprint(as[1].InputSeqs) != fmt.Sprint([]int64{first}) {
		t.Fatalf("first turn answer %+v", as[1])
	}
	if as[2].Text != "second answer" || fmt.Sprint(as[2].InputSeqs) != fmt.Sprint([]int64{second}) || as[2].GenerationID != fmt.Sprintf("u%d-a1", second) {
		t.Fatalf("second turn answer %+v", as[2])
	}
	// The queued input was presented last, as the prompt.
	reqs := e.fake.Requests()
	msgs := reqs[len(reqs)-1].JSON()["messages"].([]any)
	if last := msgs[len(msgs)-1].(map[string]any); last["content"] != "second, while you work" {
		t.Fatalf("last message of the second turn: %v", last)
	}
}

func TestGuideJoinsTheRunningTurn(t *testing.T) {
	b := newBlockingTool()
	e := setup(t, opts{tools: b.tools()})
	e.pushToolThenText("done, with your note")
	first := e.input("s1", "do the thing", "")
	<-b.started
	guide := e.input("s1", "and use blue", gh.DeliveryGuide)
	close(b.release)
	e.settled("s1")
	as := assistants(t, e.events("s1"))
	if len(as) != 2 || fmt.Sprint(as[1].InputSeqs) != fmt.Sprint([]int64{first, guide}) {
		t.Fatalf("answers %+v", as)
	}
	reqs := e.fake.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests", len(reqs))
	}
	msgs := reqs[1].JSON()["messages"].([]any)
	if last := msgs[len(msgs)-1].(map[string]any); last["content"] != "and use blue" {
		t.Fatalf("guide not injected last: %v", last)
	}
	// One run did it all: the guide did not queue another.
	r, _, _ := e.k.LatestRun(e.ctx, "s1")
	if r.State != gh.RunDone {
		t.Fatalf("run %+v", r)
	}
}

func TestProviderFailureIsRetriedThenWarned(t *testing.T) {
	e := setup(t, opts{kernel: kernel.Config{MaxAttempts: 2}})
	e.fake.SetDefault(modeltest.Reply{Status: 500})
	e.input("s1", "hi", "")
	run := e.settled("s1")
	if run.State != gh.RunFailed || run.Attempts != 2 {
		t.Fatalf("run %+v", run)
	}
	evs := e.events("s1")
	as := assistants(t, evs)
	if len(as) != 1 || as[0].StopReason != gh.StopError || !strings.HasPrefix(as[0].Text, "⚠️") || as[0].Hint == "" || as[0].ErrorCode != models.CodeServerError {
		t.Fatalf("want exactly one ⚠️ message, got %+v", as)
	}
	if n := strings.Count(kinds(evs), "run.finished"); n != 2 {
		t.Fatalf("%d run.finished for 2 attempts: %s", n, kinds(evs))
	}
	// A later success answers the same input: the failure consumed nothing.
	e.fake.SetDefault(modeltest.Reply{Text: "better now"})
	e.input("s1", "again?", "")
	e.waitFor("an answer", func() bool { return len(assistants(t, e.events("s1"))) == 2 })
	as = assistants(t, e.events("s1"))
	// 1 hi, then each of the two failed attempts: run.started, its ⚠️
	// or run.finished…; the second input lands at 7.
	if as[1].Text != "better now" || fmt.Sprint(as[1].InputSeqs) != "[1 7]" {
		t.Fatalf("answer after failure %+v", as[1])
	}
}

func TestNoModelConfiguredFailsOnceWithHint(t *testing.T) {
	e := setup(t, opts{noDefault: true})
	e.input("s1", "hi", "")
	run := e.settled("s1")
	if run.State != gh.RunFailed || run.Attempts != 1 {
		t.Fatalf("run %+v (a missing model is not retried)", run)
	}
	as := assistants(t, e.events("s1"))
	if len(as) != 1 || as[0].ErrorCode != models.CodeNotConfigured || !strings.Contains(as[0].Hint, "GATEHOUSE_MODEL") {
		t.Fatalf("answer %+v", as)
	}
	// What to do is said once, on the API and the chat platforms too.
	if n := strings.Count(as[0].Text, "Set GATEHOUSE_MODEL"); n != 1 || !strings.HasPrefix(as[0].Text, "⚠️ No answer: No model is configured.") {
		t.Fatalf("the answer says what to do %d times: %q", n, as[0].Text)
	}
}

func TestBrokenModelAnswersNeverBecomeAnswers(t *testing.T) {
	for name, tc := range map[string]struct {
		reply modeltest.Reply
		code  string
	}{
		"timeout": {modeltest.Reply{Hang: true}, models.CodeTimeout},
		"garbage": {modeltest.Reply{Garbage: true}, models.CodeBadResponse},
		"cut":     {modeltest.Reply{Cut: true}, models.CodeBadResponse},
		"429":     {modeltest.Reply{Status: 429, RetryAfter: "0"}, models.CodeRateLimited},
	} {
		t.Run(name, func(t *testing.T) {
			e := setup(t, opts{kernel: kernel.Config{MaxAttempts: 1}, models: models.Config{RequestTimeout: 300 * time.Millisecond}})
			e.fake.SetDefault(tc.reply)
			e.input("s1", "hi", "")
			e.settled("s1")
			as := assistants(t, e.events("s1"))
			if len(as) != 1 || as[0].StopReason != gh.StopError || as[0].ErrorCode != tc.code {
				t.Fatalf("answers %+v", as)
			}
		})
	}
}

func TestFallbackIsNoticed(t *testing.T) {
	ant := modeltest.NewAnthropic(t, "ant-key")
	e := setup(t, opts{models: models.Config{Selection: "openai:test-model,anthropic:claude-x", AnthropicAPIKey: "ant-key", AnthropicBaseURL: ant.BaseURL()}})
	e.fake.SetDefault(modeltest.Reply{Status: 400})
	ant.Push(modeltest.Reply{Text: "from the fallback"})
	e.input("s1", "hi", "")
	e.settled("s1")
	evs := e.events("s1")
	if got := kinds(evs); got != "user.message run.started notice assistant.message run.finished" {
		t.Fatalf("log %s", got)
	}
	var n gh.Notice
	json.Unmarshal(evs[2].Payload, &n)
	if n.Code != "model-fallback" || !strings.Contains(n.Text, "anthropic:claude-x") {
		t.Fatalf("notice %+v", n)
	}
	if a := assistants(t, evs)[0]; a.Provider != "anthropic" || a.Text != "from the fallback" {
		t.Fatalf("answer %+v", a)
	}
}

func TestCompaction(t *testing.T) {
	e := setup(t, opts{sup: supervisor.Config{ContextWindow: 400, CompactionShare: 0.5, KeepRecent: 2}})
	long := strings.Repeat("words and more words ", 20)
	e.fake.SetDefault(modeltest.Reply{Text: "SUMMARY-OR-ANSWER " + long})
	for i := range 4 {
		e.input("s1", fmt.Sprintf("message %d %s", i, long), "")
		e.settled("s1")
	}
	evs := e.events("s1")
	if !strings.Contains(kinds(evs), "compaction") {
		t.Fatalf("no compaction: %s", kinds(evs))
	}
	loaded, err := e.k.Load(e.ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if len(loaded) >= len(evs) {
		t.Fatalf("load after compaction reads %d of %d events", len(loaded), len(evs))
	}
	reqs := e.fake.Requests()
	last := reqs[len(reqs)-1].JSON()["messages"].([]any)
	summary := false
	for _, m := range last {
		mm := m.(map[string]any)
		if mm["role"] != "system" {
			break
		}
		summary = summary || strings.Contains(fmt.Sprint(mm["content"]), "Summary of the earlier conversation")
	}
	if !summary {
		t.Fatalf("the last request does not start from the summary: %v", last[:3])
	}
	// Every input was still answered exactly once.
	answered := map[int64]int{}
	for _, a := range assistants(t, evs) {
		for _, s := range a.InputSeqs {
			answered[s]++
		}
	}
	for _, ev := range evs {
		if ev.Kind == gh.KindUserMessage && answered[ev.Seq] != 1 {
			t.Fatalf("input %d answered %d times", ev.Seq, answered[ev.Seq])
		}
	}
}

func TestCancelStopsARunningTurn(t *testing.T) {
	b := newBlockingTool()
	e := setup(t, opts{kernel: kernel.Config{LeaseTTL: 300 * time.Millisecond}, tools: b.tools()})
	e.pushToolThenText("never said")
	e.input("s1", "start", "")
	<-b.started
	if _, err := e.k.Cancel(e.ctx, "s1", "user pressed stop"); err != nil {
		t.Fatal(err)
	}
	run := e.settled("s1")
	if run.State != gh.RunCancelled {
		t.Fatalf("run %+v", run)
	}
	for _, a := range assistants(t, e.events("s1")) {
		if a.Text == "never said" {
			t.Fatal("a cancelled turn answered")
		}
	}
}

func TestDrainHandsTheRunBack(t *testing.T) {
	b := newBlockingTool()
	e := setup(t, opts{tools: b.tools()})
	e.pushToolThenText("finished by the next worker")
	e.input("s1", "start", "")
	<-b.started
	ctx, cancel := context.WithTimeout(e.ctx, 100*time.Millisecond)
	defer cancel()
	if err := e.sup.Stop(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("stop: %v", err)
	}
	r, _, _ := e.k.LatestRun(e.ctx, "s1")
	if r.State != gh.RunQueued || r.Attempts != 0 {
		t.Fatalf("drained run %+v", r)
	}
	// Another worker picks it up, fills the missing tool result and answers.
	close(b.release)
	sup2, _ := supervisor.New(supervisor.Config{Kernel: e.k, Models: mustModels(t, e.fake), Poll: 20 * time.Millisecond,
		Tools: toolworker.New(toolworker.Config{Kernel: e.k, Tools: tools.NewRegistry(b.tools()...),
			Gates: gates.NewService(gates.Config{Registry: gates.NewSQL(e.st, nil), Kernel: e.k, Store: e.st})})})
	sup2.Start(e.ctx)
	defer sup2.Stop(e.ctx)
	e.settled("s1")
	as := assistants(t, e.events("s1"))
	if len(as) != 2 || as[1].Text != "finished by the next worker" {
		t.Fatalf("answers %+v", as)
	}
}

func mustModels(t *testing.T, fake *modeltest.OpenAI) *models.Registry {
	reg, err := models.New(models.Config{Selection: "openai:test-model", OpenAIAPIKey: "test-key", OpenAIBaseURL: fake.BaseURL(), RetryBase: time.Millisecond, MaxRetries: 1})
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

func TestUnreadableEventIsSkipped(t *testing.T) {
	e := setup(t, opts{})
	e.fake.SetDefault(modeltest.Reply{Text: "still here"})
	e.k.CreateSession(e.ctx, gh.Session{ID: "s1"})
	// A user.message whose text is not a string cannot be decoded.
	if _, err := e.k.EdgeCommit(e.ctx, kernel.EdgeInput{SessionID: "s1", Event: gh.NewEvent{Kind: gh.KindUserMessage, Payload: json.RawMessage(`{"text":42}`)}}); err != nil {
		t.Fatal(err)
	}
	e.settled("s1")
	good := e.input("s1", "a readable one", "")
	e.waitFor("an answer", func() bool { return len(assistants(t, e.events("s1"))) == 1 })
	if as := assistants(t, e.events("s1")); fmt.Sprint(as[0].InputSeqs) != fmt.Sprint([]int64{good}) {
		t.Fatalf("answer %+v", as[0])
	}
}

func echoTool() []tools.Tool {
	return []tools.Tool{toolworker.FuncTool{ToolName: "lookup", Fn: func(context.Context, tools.Call) (string, error) { return "found", nil }}}
}

// A turn whose tools ran but whose follow-up model call failed is still
// owed an answer on the next attempt; it never ends silently.
func TestToolTurnSurvivesAFailedFollowUp(t *testing.T) {
	e := setup(t, opts{tools: echoTool(), kernel: kernel.Config{MaxAttempts: 3}})
	e.fake.Push(modeltest.Reply{ToolCalls: []modeltest.ToolCall{{ID: "call_1", Name: "lookup", Arguments: `{}`}}},
		modeltest.Reply{Status: 500}, modeltest.Reply{Text: "final answer"})
	e.input("s1", "look it up", "")
	e.waitFor("the final answer", func() bool {
		as := assistants(t, e.events("s1"))
		return len(as) > 0 && as[len(as)-1].Text == "final answer"
	})
	if run := e.settled("s1"); run.State != gh.RunDone {
		t.Fatalf("run %+v", run)
	}
}

// Providers repeat tool call ids across messages (call_0, call_1 …); a
// later turn's call must not collide with an earlier one's result.
func TestRepeatedToolCallIDsAcrossTurns(t *testing.T) {
	e := setup(t, opts{tools: echoTool()})
	for range 2 {
		e.fake.Push(modeltest.Reply{ToolCalls: []modeltest.ToolCall{{ID: "call_0", Name: "lookup", Arguments: `{}`}}}, modeltest.Reply{Text: "answered"})
	}
	e.input("s1", "first", "")
	e.settled("s1")
	e.input("s1", "second", "")
	e.waitFor("two answers", func() bool {
		n := 0
		for _, a := range assistants(t, e.events("s1")) {
			if a.Text == "answered" {
				n++
			}
		}
		return n == 2
	})
	results := 0
	for _, ev := range e.events("s1") {
		if ev.Kind == gh.KindToolResult {
			results++
		}
	}
	if results != 2 {
		t.Fatalf("%d tool results for two calls", results)
	}
}

// The fourth turn of a chat sends the model this turn's notes only — not
// the notes of the three before — all at the head of the list, and the
// memory it recalls is what bears on this question.
func TestTurnFourCarriesOnlyItsOwnNotes(t *testing.T) {
	e := setup(t, opts{memory: true, tools: echoTool()})
	e.fake.SetDefault(modeltest.Reply{Text: "ok"})
	inputs := []string{"My name is Ana.", "I prefer short answers.", "Sara is sara@example.com", "What is Sara's email?"}
	for i, text := range inputs {
		e.input("s1", text, "")
		e.waitFor(fmt.Sprintf("answer %d", i+1), func() bool { return len(assistants(t, e.events("s1"))) == i+1 })
		e.settled("s1")
	}
	reqs := e.fake.Requests()
	msgs := reqs[len(reqs)-1].JSON()["messages"].([]any)
	var system []string
	seenOther := false
	for _, m := range msgs {
		mm := m.(map[string]any)
		if mm["role"] == "system" {
			if seenOther {
				t.Fatalf("a system note after the conversation started: %v", mm["content"])
			}
			system = append(system, fmt.Sprint(mm["content"]))
		} else {
			seenOther = true
		}
	}
	if len(system) != 4 {
		t.Fatalf("turn four sent %d system notes, want 4 (base, environment, memory, pin): %q", len(system), system)
	}
	pins := 0
	for _, n := range system {
		if strings.HasPrefix(n, "The latest message to answer:") {
			pins++
			if !strings.Contains(n, "What is Sara's email?") {
				t.Fatalf("stale pin %q", n)
			}
		}
	}
	if pins != 1 || !strings.Contains(system[2], "sara@example.com") {
		t.Fatalf("notes %q", system)
	}
	as := assistants(t, e.events("s1"))
	if got := as[3].Memories; len(got) == 0 || !strings.Contains(got[0].Text, "sara@example.com") {
		t.Fatalf("turn four did not record the memory it used: %+v", got)
	}
}

func TestFinalAnswerSafeguards(t *testing.T) {
	e := setup(t, opts{})
	e.fake.Push(modeltest.Reply{Text: "First point.\n\n- second point\n- third point"})
	e.input("s1", "Explain it in one paragraph.", "")
	e.settled("s1")
	if a := assistants(t, e.events("s1"))[0]; a.Text != "First point. second point third point" {
		t.Fatalf("answer %q", a.Text)
	}
}

// A turn over its time limit stops and says so; the input is answered by
// that message and not retried.
func TestTurnTimeLimit(t *testing.T) {
	b := newBlockingTool()
	e := setup(t, opts{tools: b.tools(), sup: supervisor.Config{TurnTimeout: 300 * time.Millisecond}})
	e.pushToolThenText("never said")
	e.input("s1", "do the slow thing", "")
	run := e.settled("s1")
	if run.State != gh.RunDone || run.Attempts != 1 {
		t.Fatalf("run %+v", run)
	}
	as := assistants(t, e.events("s1"))
	last := as[len(as)-1]
	if !strings.Contains(last.Text, "time limit") || last.ErrorCode != "turn-timeout" || len(last.InputSeqs) != 1 {
		t.Fatalf("answers %+v", as)
	}
}

// The daily cap stops model calls once reached, with a clear message, and
// an alert notice comes first at the alert share.
func TestDailyBudget(t *testing.T) {
	e := setup(t, opts{
		models: models.Config{Prices: map[string]models.Price{"openai:test-model": {InputPerMTok: 1e6}}},
		sup:    supervisor.Config{DailyBudgetUSD: 12},
	})
	e.fake.SetDefault(modeltest.Reply{Text: "ok", InputTokens: 10, OutputTokens: 1})
	for i, text := range []string{"one", "two", "three"} {
		e.input("s1", text, "")
		e.waitFor(fmt.Sprintf("answer %d", i+1), func() bool { return len(assistants(t, e.events("s1"))) == i+1 })
		e.settled("s1")
	}
	as := assistants(t, e.events("s1"))
	if as[2].ErrorCode != "budget-exhausted" || !strings.Contains(as[2].Text, "cap") || as[1].Text != "ok" {
		t.Fatalf("answers %+v", as)
	}
	if n := len(e.fake.Requests()); n != 2 {
		t.Fatalf("%d model calls; the cap should have stopped the third", n)
	}
	alerts := 0
	for _, ev := range e.events("s1") {
		if ev.Kind == gh.KindNotice && strings.Contains(string(ev.Payload), "budget-alert") {
			alerts++
		}
	}
	if alerts != 1 {
		t.Fatalf("%d budget alerts", alerts)
	}
	usage, _ := e.k.Usage(e.ctx, "user", time.Now().Add(-time.Hour), "")
	if len(usage) != 1 || usage[0].Key != "local" || usage[0].CostUSD != 20 {
		t.Fatalf("usage %+v", usage)
	}
}

// refusingStore is the real store whose database refuses to save the next
// answers (an outage at the worst moment): fault injection at the storage
// edge, everything else is the real store.
type refusingStore struct {
	store.Store
	refuse atomic.Int32
}

func (r *refusingStore) InTx(ctx context.Context, fn func(context.Context, store.Tx) error) error {
	return r.Store.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
		return fn(ctx, refusingTx{Tx: tx, s: r})
	})
}

type refusingTx struct {
	store.Tx
	s *refusingStore
}

func (t refusingTx) Append(ctx context.Context, p store.AppendParams) (store.AppendResult, error) {
	if p.Kind == gh.KindAssistantMessage && t.s.refuse.Add(-1) >= 0 {
		return store.AppendResult{}, gh.Errorf(gh.CodeUnavailable, "database refused the write")
	}
	return t.Tx.Append(ctx, p)
}

func (t refusingTx) AppendAll(ctx context.Context, ps []store.AppendParams) ([]store.AppendResult, error) {
	for _, p := range ps {
		if p.Kind == gh.KindAssistantMessage && t.s.refuse.Add(-1) >= 0 {
			return nil, gh.Errorf(gh.CodeUnavailable, "database refused the write")
		}
	}
	return t.Tx.AppendAll(ctx, ps)
}

// An answer the database refused goes to the spool and is committed from
// there, once, when the store is back — the model is not asked again.
func TestRefusedAnswerIsSpooledAndCommittedOnce(t *testing.T) {
	spool := t.TempDir()
	rs := &refusingStore{}
	// The store refuses the answer for longer than the attempt's lease:
	// the attempt retries its settle while the lease lasts (kernel), then
	// keeps the answer in the spool for the next attempt.
	rs.refuse.Store(1 << 30)
	e := setup(t, opts{wrap: func(st store.Store) store.Store { rs.Store = st; return rs }, sup: supervisor.Config{SpoolDir: spool},
		kernel: kernel.Config{RetryBackoff: 1500 * time.Millisecond, LeaseTTL: 2 * time.Second}})
	e.fake.Push(modeltest.Reply{Text: "the one answer"})
	e.fake.SetDefault(modeltest.Reply{Text: "a second, paid-for answer"})
	e.input("s1", "hello", "")
	// While the store refuses, the answer waits in the spool.
	e.waitFor("the spooled answer", func() bool {
		files, _ := os.ReadDir(spool)
		return len(files) == 1
	})
	rs.refuse.Store(0)
	run := e.settled("s1")
	as := assistants(t, e.events("s1"))
	if run.State != gh.RunDone || len(as) != 1 || as[0].Text != "the one answer" {
		t.Fatalf("run %+v answers %+v", run, as)
	}
	if n := len(e.fake.Requests()); n != 1 {
		t.Fatalf("the model was asked %d times", n)
	}
	if left, _ := os.ReadDir(spool); len(left) != 0 {
		t.Fatalf("spool not emptied: %v", left)
	}
}

// A refusal shorter than the lease (a failover's gap) costs nothing: the
// settle is retried and the answer saved by the attempt that has it, with
// no spool, no second model call and no failed attempt.
func TestBrieflyRefusedAnswerIsSavedByTheRetry(t *testing.T) {
	spool := t.TempDir()
	rs := &refusingStore{}
	rs.refuse.Store(3)
	e := setup(t, opts{wrap: func(st store.Store) store.Store { rs.Store = st; return rs }, sup: supervisor.Config{SpoolDir: spool}})
	e.fake.Push(modeltest.Reply{Text: "the one answer"})
	e.fake.SetDefault(modeltest.Reply{Text: "a second, paid-for answer"})
	e.input("s1", "hello", "")
	run := e.settled("s1")
	as := assistants(t, e.events("s1"))
	if run.State != gh.RunDone || run.Attempts != 1 || len(as) != 1 || as[0].Text != "the one answer" {
		t.Fatalf("run %+v answers %+v", run, as)
	}
	if n := len(e.fake.Requests()); n != 1 {
		t.Fatalf("the model was asked %d times", n)
	}
	if rs.refuse.Load() >= 0 {
		t.Fatalf("the store refused %d times fewer than set: the test did not refuse", rs.refuse.Load()+1)
	}
	if files, _ := os.ReadDir(spool); len(files) != 0 {
		t.Fatalf("the answer was spooled: %v", files)
	}
}

// Memory's model pass runs later as a job: the model lists the facts of a
// turn and they are kept, observed at the turn's time.
func TestModelPassExtractsFacts(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(t.TempDir(), "m.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	fake := modeltest.NewOpenAI(t, "test-key")
	fake.Push(modeltest.Reply{Text: `Sure: {"facts":[{"kind":"preference","text":"Ana prefers tea to coffee","value":""}]}`})
	reg := mustModels(t, fake)
	m := memory.New(st, memory.Config{Batch: 1})
	said := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)
	if _, err := m.Remember(ctx, "local", memory.Turn{SessionID: "s1", Seq: 1, At: said, UserText: "Honestly, tea over coffee any day."}); err != nil {
		t.Fatal(err)
	}
	if n, err := m.RunJobs(ctx, supervisor.ModelExtractor(reg)); err != nil || n != 1 {
		t.Fatalf("jobs run %d: %v", n, err)
	}
	facts, _ := m.List(ctx, "local")
	found := false
	for _, f := range facts {
		if strings.Contains(f.Text, "tea") && f.ObservedAt.Equal(said) {
			found = true
		}
	}
	if !found {
		t.Fatalf("facts %+v", facts)
	}
}

// A contact the model pass finds is kept under its name, so a later
// "email Sara" finds her address.
func TestModelPassKeepsContactsByName(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(t.TempDir(), "m.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	fake := modeltest.NewOpenAI(t, "test-key")
	fake.Push(modeltest.Reply{Text: `{"facts":[{"kind":"contact","text":"Sara's email is sara@example.com","subject":"Sara","value":"sara@example.com"}]}`})
	m := memory.New(st, memory.Config{Batch: 1})
	if _, err := m.Remember(ctx, "telegram:u_1", memory.Turn{SessionID: "s1", Seq: 1, At: time.Now(), UserText: "my colleague Sara, reachable at sara@example.com"}); err != nil {
		t.Fatal(err)
	}
	if n, err := m.RunJobs(ctx, supervisor.ModelExtractor(mustModels(t, fake))); err != nil || n != 1 {
		t.Fatalf("jobs run %d: %v", n, err)
	}
	if got := m.Contacts(ctx, "telegram:u_1"); got["sara"] != "sara@example.com" && got["Sara"] != "sara@example.com" {
		t.Fatalf("contacts after the model pass: %v", got)
	}
}

// A turn that paused for approval counts all its parts: run.finished after
// the resume carries the tokens of the request before the pause too.
func TestTurnCostCountsThePartBeforeAnApproval(t *testing.T) {
	send := toolworker.FuncTool{ToolName: "send", ToolTier: tools.Danger, Fn: func(context.Context, tools.Call) (string, error) { return "sent", nil }}
	e := setup(t, opts{tools: []tools.Tool{send}, models: models.Config{Prices: map[string]models.Price{"openai:test-model": {InputPerMTok: 1e6}}}})
	e.fake.Push(modeltest.Reply{ToolCalls: []modeltest.ToolCall{{ID: "c1", Name: "send", Arguments: `{}`}}, InputTokens: 10, OutputTokens: 1},
		modeltest.Reply{Text: "sent it", InputTokens: 20, OutputTokens: 2})
	e.input("s1", "send it", "")
	var g gh.Gate
	e.waitFor("the gate", func() bool {
		gs, _ := e.st.ListGates(e.ctx, "s1", gh.GatePending, 10)
		if len(gs) == 1 {
			g = gs[0]
		}
		return len(gs) == 1
	})
	e.waitFor("the pause", func() bool { r, _, _ := e.k.LatestRun(e.ctx, "s1"); return r.State == gh.RunAwaitingApproval })
	g, _, err := e.st.DecideGate(e.ctx, store.GateDecision{ID: g.ID, Decision: gh.Decision{State: gh.GateApproved, By: "ana", Surface: "test"}, Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := json.Marshal(gh.GateDecided{GateID: g.ID, ToolCallID: g.ToolCallID, Tool: g.Tool, Decision: g.State, By: "ana", Surface: "test"})
	if _, err := e.k.EdgeCommit(e.ctx, kernel.EdgeInput{SessionID: "s1", Event: gh.NewEvent{Kind: gh.KindGateDecided, Payload: p, Key: "gate:" + g.ID}}); err != nil {
		t.Fatal(err)
	}
	e.waitFor("the answer", func() bool { as := assistants(t, e.events("s1")); return len(as) == 2 })
	e.settled("s1")
	var last gh.RunFinished
	for _, ev := range e.events("s1") {
		if ev.Kind == gh.KindRunFinished {
			json.Unmarshal(ev.Payload, &last)
		}
	}
	if last.TurnTokens.InputTokens != 30 || last.TurnCostUSD != 30 || last.Tokens.InputTokens != 20 {
		t.Fatalf("run.finished after the resume %+v", last)
	}
}

// A turn that failed for good is answered when retried: the retry (a
// turn.retry input) queues a run, which answers the failed turn's input
// (and only it) and reads the retry as done.
func TestRetriedTurnAnswersTheFailedInput(t *testing.T) {
	e := setup(t, opts{kernel: kernel.Config{MaxAttempts: 1}})
	e.fake.SetDefault(modeltest.Reply{Status: 500})
	e.input("s1", "summarise the report", "")
	if run := e.settled("s1"); run.State != gh.RunFailed {
		t.Fatalf("run %+v", run)
	}
	e.fake.SetDefault(modeltest.Reply{Text: "Here is the summary."})
	p, _ := json.Marshal(gh.TurnRetry{RunID: 1, By: gh.LocalUser})
	c, err := e.k.EdgeCommit(e.ctx, kernel.EdgeInput{SessionID: "s1", Event: gh.NewEvent{Kind: gh.KindTurnRetry, Payload: p, Key: "retry:r1"}})
	if err != nil || c.RunID == 0 {
		t.Fatalf("retry: %+v %v", c, err)
	}
	e.waitFor("the retried turn's answer", func() bool { return len(assistants(t, e.events("s1"))) == 2 })
	as := assistants(t, e.events("s1"))
	if as[1].Text != "Here is the summary." || fmt.Sprint(as[1].InputSeqs) != "[1]" {
		t.Fatalf("the retried turn answered %+v, want the failed input 1", as[1])
	}
	if run := e.settled("s1"); run.State != gh.RunDone || run.ID != c.RunID {
		t.Fatalf("the retried run %+v", run)
	}
}

// A guide sent while the turn's final model request is in flight is for
// that turn: the same run answers it with one more request.
func TestGuideDuringTheFinalRequestIsAnsweredByTheSameRun(t *testing.T) {
	e := setup(t, opts{})
	var guide int64
	e.fake.Push(modeltest.Reply{Text: "Here is the plan.", Before: func() { guide = e.input("s1", "and make it short", gh.DeliveryGuide) }},
		modeltest.Reply{Text: "Short plan."})
	first := e.input("s1", "plan my day", "")
	e.waitFor("two answers", func() bool { return len(assistants(t, e.events("s1"))) == 2 })
	run := e.settled("s1")
	evs := e.events("s1")
	as := assistants(t, evs)
	if as[0].Text != "Here is the plan." || fmt.Sprint(as[0].InputSeqs) != fmt.Sprint([]int64{first}) {
		t.Fatalf("first answer %+v", as[0])
	}
	if as[1].Text != "Short plan." || fmt.Sprint(as[1].InputSeqs) != fmt.Sprint([]int64{first, guide}) {
		t.Fatalf("the guide's answer %+v, want it in the same turn", as[1])
	}
	if run.ID != 1 || run.State != gh.RunDone || strings.Count(kinds(evs), "run.started") != 1 || strings.Count(kinds(evs), "run.finished") != 1 {
		t.Fatalf("one run must answer both: run %+v, log %s", run, kinds(evs))
	}
	for _, ev := range evs {
		if ev.Kind == gh.KindNotice && strings.Contains(string(ev.Payload), supervisor.NoticeGuideQueued) {
			t.Fatalf("a guide the turn answered was said to be queued: %s", ev.Payload)
		}
	}
}

// When no request may follow the final one, a guide that came during it
// is answered next as queued input, and the log says so.
func TestGuideAfterTheLastAllowedRequestIsQueuedVisibly(t *testing.T) {
	e := setup(t, opts{sup: supervisor.Config{MaxModelRequests: 1}})
	var guide int64
	e.fake.Push(modeltest.Reply{Text: "Here is the plan.", Before: func() { guide = e.input("s1", "and make it short", gh.DeliveryGuide) }},
		modeltest.Reply{Text: "Short plan."})
	e.input("s1", "plan my day", "")
	e.waitFor("the guide answered", func() bool { return len(assistants(t, e.events("s1"))) == 2 })
	e.settled("s1")
	evs := e.events("s1")
	as := assistants(t, evs)
	if as[1].Text != "Short plan." || fmt.Sprint(as[1].InputSeqs) != fmt.Sprint([]int64{guide}) {
		t.Fatalf("the guide's answer %+v", as[1])
	}
	var said bool
	for _, ev := range evs {
		var n gh.Notice
		if ev.Kind == gh.KindNotice && json.Unmarshal(ev.Payload, &n) == nil && n.Code == supervisor.NoticeGuideQueued &&
			strings.Contains(n.Text, fmt.Sprintf("#%d", guide)) {
			said = true
		}
	}
	if !said {
		t.Fatalf("no notice that guide %d was queued: %s", guide, kinds(evs))
	}
}

// While a tool runs, the lease renewals record it as the run's step and
// when it began; the step before it was the model call.
func TestRenewalsRecordTheRunningStep(t *testing.T) {
	b := newBlockingTool()
	// Renewals come every third of the TTL: often enough to see the step
	// soon, not so often that a loaded machine loses the lease.
	e := setup(t, opts{tools: b.tools(), kernel: kernel.Config{LeaseTTL: 1500 * time.Millisecond}})
	e.pushToolThenText("done")
	before := time.Now()
	e.input("s1", "do the thing", "")
	select {
	case <-b.started:
	case <-time.After(time.Minute):
		t.Fatal("the tool never started")
	}
	var run gh.Run
	e.waitFor("the tool recorded as the step", func() bool {
		r, ok, err := e.k.LatestRun(context.Background(), "s1")
		run = r
		return err == nil && ok && r.Step == "tool:wait"
	})
	if run.StepStarted.Before(before.Add(-time.Second)) || run.StepStarted.After(time.Now()) {
		t.Fatalf("step started %v, the turn began %v", run.StepStarted, before)
	}
	close(b.release)
	e.settled("s1")
}
