package models_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/models"
	"github.com/gatehouse/gatehouse/models/modeltest"
)

const (
	openaiKey    = "sk-test-openai"
	anthropicKey = "sk-ant-test"
)

// env is a registry wired to both fakes.
type env struct {
	oa  *modeltest.OpenAI
	an  *modeltest.Anthropic
	reg *models.Registry
}

func newEnv(t *testing.T, mut func(*models.Config)) env {
	t.Helper()
	e := env{
		oa: modeltest.NewOpenAI(t, openaiKey, "a", "gpt-4.1-mini"),
		an: modeltest.NewAnthropic(t, anthropicKey, "b", "claude-sonnet-4-5"),
	}
	cfg := models.Config{
		OpenAIAPIKey:     openaiKey,
		OpenAIBaseURL:    e.oa.BaseURL(),
		AnthropicAPIKey:  anthropicKey,
		AnthropicBaseURL: e.an.BaseURL(),
		RequestTimeout:   5 * time.Second,
		RetryBase:        time.Millisecond,
	}
	if mut != nil {
		mut(&cfg)
	}
	reg, err := models.New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	e.reg = reg
	return e
}

func chain(t *testing.T, sel string) models.Chain {
	t.Helper()
	c, err := models.ParseSelection(sel)
	if err != nil {
		t.Fatalf("ParseSelection(%q): %v", sel, err)
	}
	return c
}

func userReq(text string) models.Request {
	return models.Request{Messages: []models.Message{
		{Role: models.RoleSystem, Text: "You are a test."},
		{Role: models.RoleUser, Text: text},
	}}
}

type deltaLog struct {
	mu sync.Mutex
	d  []string
}

func (l *deltaLog) add(s string) { l.mu.Lock(); l.d = append(l.d, s); l.mu.Unlock() }
func (l *deltaLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.d...)
}

func wantCode(t *testing.T, err error, code string) *models.Error {
	t.Helper()
	var me *models.Error
	if !errors.As(err, &me) {
		t.Fatalf("error = %v (%T), want *models.Error %s", err, err, code)
	}
	if me.Code != code {
		t.Fatalf("code = %s (%v), want %s", me.Code, err, code)
	}
	return me
}

func TestStreamingTextDeltasInOrder(t *testing.T) {
	for _, tc := range []struct{ name, sel string }{{"openai", "openai:a"}, {"anthropic", "anthropic:b"}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, nil)
			chunks := []string{"Hel", "lo, ", "wor", "ld — ", "ünïcode ✓"}
			reply := modeltest.Reply{Chunks: chunks, InputTokens: 21, OutputTokens: 9}
			e.oa.Push(reply)
			e.an.Push(reply)
			var got deltaLog
			resp, notices, err := e.reg.Call(context.Background(), chain(t, tc.sel), userReq("hi"), got.add)
			if err != nil {
				t.Fatal(err)
			}
			if len(notices) != 0 {
				t.Fatalf("notices = %v", notices)
			}
			if !reflect.DeepEqual(got.all(), chunks) {
				t.Fatalf("deltas = %q, want %q", got.all(), chunks)
			}
			if want := strings.Join(chunks, ""); resp.Text != want {
				t.Fatalf("text = %q, want %q", resp.Text, want)
			}
			if resp.StopReason != models.StopEndTurn || len(resp.ToolCalls) != 0 {
				t.Fatalf("stop = %q, calls = %v", resp.StopReason, resp.ToolCalls)
			}
			if resp.Usage != (gh.Usage{InputTokens: 21, OutputTokens: 9}) {
				t.Fatalf("usage = %+v", resp.Usage)
			}
			p, m, _ := strings.Cut(tc.sel, ":")
			if resp.Provider != p || resp.Model != m {
				t.Fatalf("provider/model = %s/%s", resp.Provider, resp.Model)
			}
		})
	}
}

func TestToolCallsRoundTrip(t *testing.T) {
	args := `{"to":"bob@example.com","body":"hi \"there\"\nbye","n":[1,2.5,null],"nested":{"ok":true}}`
	spec := gh.ToolSpec{
		Name:        "send_email",
		Description: "Send an email",
		Schema:      json.RawMessage(`{"type":"object","properties":{"to":{"type":"string"}},"required":["to"],"additionalProperties":false}`),
	}
	for _, tc := range []struct{ name, sel string }{{"openai", "openai:a"}, {"anthropic", "anthropic:b"}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, nil)
			reply := modeltest.Reply{
				Text:      "Sending it.",
				ToolCalls: []modeltest.ToolCall{{ID: "call_1", Name: "send_email", Arguments: args}, {ID: "call_2", Name: "send_email", Arguments: `{}`}},
			}
			e.oa.Push(reply, modeltest.Reply{Text: "Sent."})
			e.an.Push(reply, modeltest.Reply{Text: "Sent."})

			req := userReq("email bob")
			req.Tools = []gh.ToolSpec{spec}
			resp, _, err := e.reg.Call(context.Background(), chain(t, tc.sel), req, nil)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StopReason != models.StopToolUse || resp.Text != "Sending it." {
				t.Fatalf("stop = %q text = %q", resp.StopReason, resp.Text)
			}
			if len(resp.ToolCalls) != 2 {
				t.Fatalf("calls = %+v", resp.ToolCalls)
			}
			c := resp.ToolCalls[0]
			if c.ID != "call_1" || c.Name != "send_email" || string(c.Arguments) != args {
				t.Fatalf("call = %s %s %s", c.ID, c.Name, c.Arguments)
			}
			if string(resp.ToolCalls[1].Arguments) != `{}` {
				t.Fatalf("second call args = %s", resp.ToolCalls[1].Arguments)
			}

			// Send the calls and their results back: the strict fakes refuse
			// a result that answers no call, or a call left unanswered.
			req.Messages = append(req.Messages,
				models.Message{Role: models.RoleAssistant, Text: resp.Text, ToolCalls: resp.ToolCalls},
				models.Message{Role: models.RoleTool, ToolCallID: "call_1", Text: "queued"},
				models.Message{Role: models.RoleTool, ToolCallID: "call_2", Text: "smtp down", IsError: true},
			)
			resp2, _, err := e.reg.Call(context.Background(), chain(t, tc.sel), req, nil)
			if err != nil {
				t.Fatal(err)
			}
			if resp2.Text != "Sent." {
				t.Fatalf("text = %q", resp2.Text)
			}

			var reqs []modeltest.Request
			if tc.name == "openai" {
				reqs = e.oa.Requests()
			} else {
				reqs = e.an.Requests()
			}
			if len(reqs) != 2 {
				t.Fatalf("%d requests", len(reqs))
			}
			body := reqs[1].JSON()
			msgs := body["messages"].([]any)
			var sentArgs string
			if tc.name == "openai" {
				asst := msgs[2].(map[string]any)
				fn := asst["tool_calls"].([]any)[0].(map[string]any)["function"].(map[string]any)
				sentArgs = fn["arguments"].(string)
				tool := body["tools"].([]any)[0].(map[string]any)["function"].(map[string]any)
				if tool["name"] != "send_email" || tool["parameters"].(map[string]any)["additionalProperties"] != false {
					t.Fatalf("tool sent = %v", tool)
				}
			} else {
				asst := msgs[1].(map[string]any)
				blocks := asst["content"].([]any)
				in, _ := json.Marshal(blocks[1].(map[string]any)["input"])
				sentArgs = string(in)
				results := msgs[2].(map[string]any)["content"].([]any)
				if len(results) != 2 || results[1].(map[string]any)["is_error"] != true {
					t.Fatalf("tool results sent = %v", results)
				}
				tool := body["tools"].([]any)[0].(map[string]any)
				schema := tool["input_schema"].(map[string]any)
				if tool["name"] != "send_email" || schema["additionalProperties"] != false || schema["required"].([]any)[0] != "to" {
					t.Fatalf("tool sent = %v", tool)
				}
			}
			var a, b any
			_ = json.Unmarshal([]byte(args), &a)
			_ = json.Unmarshal([]byte(sentArgs), &b)
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("arguments sent back = %s, want %s", sentArgs, args)
			}
		})
	}
}

func TestModelNameNeverGoesToTheWrongProvider(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	// openai:a fails fast, anthropic:b answers; then the other way round.
	e.oa.Push(modeltest.Reply{Status: 400}, modeltest.Reply{Text: "from a"})
	e.an.Push(modeltest.Reply{Text: "from b"}, modeltest.Reply{Status: 400})

	resp, notices, err := e.reg.Call(context.Background(), chain(t, "openai:a,anthropic:b"), userReq("x"), nil)
	if err != nil || resp.Text != "from b" || resp.Provider != "anthropic" || resp.Model != "b" {
		t.Fatalf("resp = %+v, err = %v", resp, err)
	}
	if len(notices) != 1 {
		t.Fatalf("notices = %v", notices)
	}
	resp, _, err = e.reg.Call(context.Background(), chain(t, "anthropic:b,openai:a"), userReq("x"), nil)
	if err != nil || resp.Text != "from a" || resp.Provider != "openai" || resp.Model != "a" {
		t.Fatalf("resp = %+v, err = %v", resp, err)
	}
	if got := e.oa.Models(); !reflect.DeepEqual(got, []string{"a", "a"}) {
		t.Fatalf("openai saw models %v", got)
	}
	if got := e.an.Models(); !reflect.DeepEqual(got, []string{"b", "b"}) {
		t.Fatalf("anthropic saw models %v", got)
	}
}

func TestRateLimitHonoursRetryAfter(t *testing.T) {
	for _, tc := range []struct{ name, sel string }{{"openai", "openai:a"}, {"anthropic", "anthropic:b"}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, nil)
			replies := []modeltest.Reply{{Status: 429, RetryAfter: "1"}, {Text: "ok"}}
			e.oa.Push(replies...)
			e.an.Push(replies...)
			resp, notices, err := e.reg.Call(context.Background(), chain(t, tc.sel), userReq("x"), nil)
			if err != nil || resp.Text != "ok" || len(notices) != 0 {
				t.Fatalf("resp = %+v notices = %v err = %v", resp, notices, err)
			}
			reqs := e.oa.Requests()
			if tc.name == "anthropic" {
				reqs = e.an.Requests()
			}
			if len(reqs) != 2 || reqs[0].Status != 429 || reqs[1].Status != 200 {
				t.Fatalf("requests: %d", len(reqs))
			}
			if gap := reqs[1].Time.Sub(reqs[0].Time); gap < time.Second {
				t.Fatalf("retried after %v, Retry-After was 1s", gap)
			}
		})
	}
}

func TestServerErrorRetriedThenFails(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.oa.Push(modeltest.Reply{Status: 500}, modeltest.Reply{Status: 503}, modeltest.Reply{Status: 500})
	_, _, err := e.reg.Call(context.Background(), chain(t, "openai:a"), userReq("x"), nil)
	me := wantCode(t, err, models.CodeServerError)
	if !me.Retryable {
		t.Fatal("5xx should be marked retryable")
	}
	if n := len(e.oa.Requests()); n != models.DefaultMaxRetries {
		t.Fatalf("%d requests, want %d", n, models.DefaultMaxRetries)
	}
}

func TestBadRequestFailsFast(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.oa.Push(modeltest.Reply{Status: 400})
	e.an.Push(modeltest.Reply{Status: 400})
	_, _, err := e.reg.Call(context.Background(), chain(t, "openai:a"), userReq("x"), nil)
	wantCode(t, err, models.CodeBadRequest)
	_, _, err = e.reg.Call(context.Background(), chain(t, "anthropic:b"), userReq("x"), nil)
	wantCode(t, err, models.CodeBadRequest)
	if a, b := len(e.oa.Requests()), len(e.an.Requests()); a != 1 || b != 1 {
		t.Fatalf("requests: openai %d, anthropic %d; want exactly 1 each", a, b)
	}
}

func TestUnauthorizedAndUnknownModelFailFast(t *testing.T) {
	t.Parallel()
	oa := modeltest.NewOpenAI(t, "right-key", "a")
	an := modeltest.NewAnthropic(t, "right-key", "b")
	reg, err := models.New(models.Config{
		OpenAIAPIKey: "wrong", OpenAIBaseURL: oa.BaseURL(),
		AnthropicAPIKey: "wrong", AnthropicBaseURL: an.BaseURL(),
		RetryBase: time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = reg.Call(context.Background(), chain(t, "openai:a"), userReq("x"), nil)
	wantCode(t, err, models.CodeUnauthorized)
	_, _, err = reg.Call(context.Background(), chain(t, "anthropic:b"), userReq("x"), nil)
	wantCode(t, err, models.CodeUnauthorized)

	e := newEnv(t, nil)
	_, _, err = e.reg.Call(context.Background(), chain(t, "openai:nope"), userReq("x"), nil)
	wantCode(t, err, models.CodeNotFound)
	_, _, err = e.reg.Call(context.Background(), chain(t, "anthropic:nope"), userReq("x"), nil)
	wantCode(t, err, models.CodeNotFound)
	if len(oa.Requests())+len(an.Requests())+len(e.oa.Requests())+len(e.an.Requests()) != 4 {
		t.Fatal("4xx must not be retried")
	}
}

func TestTimeout(t *testing.T) {
	for _, tc := range []struct{ name, sel string }{{"openai", "openai:a"}, {"anthropic", "anthropic:b"}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, func(c *models.Config) {
				c.RequestTimeout = 400 * time.Millisecond
				c.MaxRetries = 2
			})
			// Hanging before any byte: a timeout is retried.
			e.oa.Push(modeltest.Reply{Hang: true}, modeltest.Reply{Hang: true})
			e.an.Push(modeltest.Reply{Hang: true}, modeltest.Reply{Hang: true})
			_, _, err := e.reg.Call(context.Background(), chain(t, tc.sel), userReq("x"), nil)
			me := wantCode(t, err, models.CodeTimeout)
			if !me.Retryable || !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("err = %v", err)
			}
			n := func() int {
				if tc.name == "openai" {
					return len(e.oa.Requests())
				}
				return len(e.an.Requests())
			}
			// Under load the fake may record the second request a moment
			// after the client gave up on it.
			for deadline := time.Now().Add(3 * time.Second); n() < 2 && time.Now().Before(deadline); {
				time.Sleep(10 * time.Millisecond)
			}
			if n() != 2 {
				t.Fatalf("%d requests, want 2 (timeout retried)", n())
			}

			// Stalling after a delta: a timeout, not retried (the preview was shown).
			e.oa.Push(modeltest.Reply{Text: "partial answer that stalls", Stall: true})
			e.an.Push(modeltest.Reply{Text: "partial answer that stalls", Stall: true})
			var got deltaLog
			_, _, err = e.reg.Call(context.Background(), chain(t, tc.sel), userReq("x"), got.add)
			wantCode(t, err, models.CodeTimeout)
			if len(got.all()) == 0 || n() != 3 {
				t.Fatalf("deltas %q, requests %d", got.all(), n())
			}
		})
	}
}

func TestCallerCancelStopsEverything(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.oa.Push(modeltest.Reply{Hang: true})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for len(e.oa.Requests()) == 0 {
			time.Sleep(5 * time.Millisecond)
		}
		cancel()
	}()
	_, _, err := e.reg.Call(ctx, chain(t, "openai:a,anthropic:b"), userReq("x"), nil)
	wantCode(t, err, models.CodeCanceled)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled in chain", err)
	}
	if len(e.an.Requests()) != 0 || len(e.oa.Requests()) != 1 {
		t.Fatal("a canceled call must not retry or fall back")
	}
}

func TestBrokenStreams(t *testing.T) {
	for _, tc := range []struct {
		name, sel string
		reply     modeltest.Reply
	}{
		{"openai garbage", "openai:a", modeltest.Reply{Text: "never", Garbage: true}},
		{"anthropic garbage", "anthropic:b", modeltest.Reply{Text: "never", Garbage: true}},
		{"openai cut", "openai:a", modeltest.Reply{Text: "this answer is cut short", Cut: true}},
		{"anthropic cut", "anthropic:b", modeltest.Reply{Text: "this answer is cut short", Cut: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, nil)
			e.oa.Push(tc.reply)
			e.an.Push(tc.reply)
			resp, _, err := e.reg.Call(context.Background(), chain(t, tc.sel), userReq("x"), nil)
			wantCode(t, err, models.CodeBadResponse)
			if resp.Text != "" {
				t.Fatalf("made-up answer %q", resp.Text)
			}
			if n := len(e.oa.Requests()) + len(e.an.Requests()); n != 1 {
				t.Fatalf("%d requests: a bad response is not retried", n)
			}
		})
	}
}

func TestConnectionResetBeforeTextIsRetried(t *testing.T) {
	for _, tc := range []struct{ name, sel string }{{"openai", "openai:a"}, {"anthropic", "anthropic:b"}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, func(c *models.Config) { c.MaxRetries = 2 })
			replies := []modeltest.Reply{{Reset: true}, {Text: "second time lucky"}}
			e.oa.Push(replies...)
			e.an.Push(replies...)
			resp, _, err := e.reg.Call(context.Background(), chain(t, tc.sel), userReq("x"), nil)
			if err != nil || resp.Text != "second time lucky" {
				t.Fatalf("resp = %+v err = %v", resp, err)
			}

			e.oa.Push(modeltest.Reply{Reset: true}, modeltest.Reply{Reset: true})
			e.an.Push(modeltest.Reply{Reset: true}, modeltest.Reply{Reset: true})
			_, _, err = e.reg.Call(context.Background(), chain(t, tc.sel), userReq("x"), nil)
			wantCode(t, err, models.CodeUnreachable)
		})
	}
}

func TestFallbackChainReturnsNotice(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *models.Config) {
		c.Selection = "openai:a,anthropic:b"
		c.MaxRetries = 2
	})
	e.oa.Push(modeltest.Reply{Status: 500}, modeltest.Reply{Status: 502})
	e.an.Push(modeltest.Reply{Text: "backup answer"})
	resp, notices, err := e.reg.Call(context.Background(), nil, userReq("x"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != "backup answer" || resp.Provider != "anthropic" || resp.Model != "b" {
		t.Fatalf("resp = %+v", resp)
	}
	want := "openai:a failed (model-server-error); answered by anthropic:b"
	if len(notices) != 1 || notices[0].Text != want || notices[0].Code != models.CodeServerError {
		t.Fatalf("notices = %+v, want %q", notices, want)
	}

	// Every model failing gives an error naming each failure.
	e.oa.Push(modeltest.Reply{Status: 401})
	e.an.Push(modeltest.Reply{Status: 400})
	_, notices, err = e.reg.Call(context.Background(), nil, userReq("x"), nil)
	wantCode(t, err, models.CodeBadRequest)
	if notices != nil || !strings.Contains(err.Error(), "openai:a (model-unauthorized") || !strings.Contains(err.Error(), "anthropic:b (model-bad-request") {
		t.Fatalf("err = %v notices = %v", err, notices)
	}
}

func TestSystemMessagesAreHoisted(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.oa.Push(modeltest.Reply{Text: "ok"})
	e.an.Push(modeltest.Reply{Text: "ok"})
	req := models.Request{Messages: []models.Message{
		{Role: models.RoleSystem, Text: "base prompt"},
		{Role: models.RoleUser, Text: "hello"},
		{Role: models.RoleAssistant, Text: "hi"},
		{Role: models.RoleSystem, Text: "turn note"},
		{Role: models.RoleUser, Text: "again"},
	}}
	orig := append([]models.Message(nil), req.Messages...)
	for _, sel := range []string{"openai:a", "anthropic:b"} {
		if _, _, err := e.reg.Call(context.Background(), chain(t, sel), req, nil); err != nil {
			t.Fatalf("%s: %v", sel, err)
		}
	}
	if !reflect.DeepEqual(req.Messages, orig) {
		t.Fatal("Call modified the caller's messages")
	}
	var roles, texts []string
	for _, m := range e.oa.Requests()[0].JSON()["messages"].([]any) {
		roles = append(roles, m.(map[string]any)["role"].(string))
		texts = append(texts, m.(map[string]any)["content"].(string))
	}
	if want := []string{"system", "system", "user", "assistant", "user"}; !reflect.DeepEqual(roles, want) {
		t.Fatalf("roles = %v", roles)
	}
	if texts[0] != "base prompt" || texts[1] != "turn note" {
		t.Fatalf("system order = %v", texts[:2])
	}
	sys := e.an.Requests()[0].JSON()["system"].([]any)
	if len(sys) != 2 || sys[0].(map[string]any)["text"] != "base prompt" || sys[1].(map[string]any)["text"] != "turn note" {
		t.Fatalf("anthropic system = %v", sys)
	}

	// The fake is strict: unhoisted, the same conversation is refused.
	body := `{"model":"a","stream":true,"messages":[{"role":"user","content":"hello"},{"role":"system","content":"late"}]}`
	hreq, _ := http.NewRequest(http.MethodPost, e.oa.BaseURL()+"/chat/completions", strings.NewReader(body))
	hreq.Header.Set("Authorization", "Bearer "+openaiKey)
	hreq.Header.Set("Content-Type", "application/json")
	hresp, err := http.DefaultClient.Do(hreq)
	if err != nil {
		t.Fatal(err)
	}
	hresp.Body.Close()
	if hresp.StatusCode != http.StatusBadRequest {
		t.Fatalf("fake accepted a late system message: %d", hresp.StatusCode)
	}
}

func TestLedgerRowForEveryAttempt(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var rows []models.LedgerRow
	type ctxKey struct{}
	e := newEnv(t, func(c *models.Config) {
		c.Prices = map[string]models.Price{
			"openai:a":    {InputPerMTok: 2, OutputPerMTok: 8},
			"anthropic:b": {InputPerMTok: 3, OutputPerMTok: 15},
		}
		c.Ledger = func(ctx context.Context, row models.LedgerRow) {
			if ctx.Value(ctxKey{}) != "turn-1" {
				t.Error("ledger did not get the call's context")
			}
			mu.Lock()
			rows = append(rows, row)
			mu.Unlock()
		}
		c.MaxRetries = 2
	})
	e.oa.Push(modeltest.Reply{Status: 429}, modeltest.Reply{Status: 500})
	e.an.Push(modeltest.Reply{Text: "ok", InputTokens: 1000, OutputTokens: 2000})
	ctx := context.WithValue(context.Background(), ctxKey{}, "turn-1")
	if _, _, err := e.reg.Call(ctx, chain(t, "openai:a,anthropic:b"), userReq("x"), nil); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(rows) != 3 {
		t.Fatalf("rows = %+v", rows)
	}
	if rows[0].Provider != "openai" || rows[0].Model != "a" || rows[0].Attempt != 1 || !strings.Contains(rows[0].Err, models.CodeRateLimited) {
		t.Fatalf("row 0 = %+v", rows[0])
	}
	if rows[1].Attempt != 2 || !strings.Contains(rows[1].Err, models.CodeServerError) || rows[1].CostUSD != 0 {
		t.Fatalf("row 1 = %+v", rows[1])
	}
	r := rows[2]
	if r.Provider != "anthropic" || r.Model != "b" || r.Err != "" || r.InputTokens != 1000 || r.OutputTokens != 2000 || r.Duration <= 0 {
		t.Fatalf("row 2 = %+v", r)
	}
	if want := 1000*3/1e6 + 2000*15/1e6; math.Abs(r.CostUSD-want) > 1e-12 {
		t.Fatalf("cost = %v, want %v", r.CostUSD, want)
	}
}

func writeScript(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "script.json")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestScriptedProviderReplaysFile(t *testing.T) {
	t.Parallel()
	script := writeScript(t, `[
		{"text": "Hello! I am a scripted model answering."},
		{"match": "weather", "toolCalls": [{"id": "call_w", "name": "get_weather", "arguments": {"city": "Paris"}}]},
		{"text": "It is sunny in Paris."},
		{"error": "model-rate-limited"},
		{"text": "Answered after a retry."}
	]`)
	var rows int
	reg, err := models.New(models.Config{
		Selection:  "scripted:demo",
		ScriptFile: script,
		RetryBase:  time.Millisecond,
		Ledger:     func(context.Context, models.LedgerRow) { rows++ },
	})
	if err != nil {
		t.Fatal(err)
	}
	call := func(msgs ...models.Message) (models.Response, []string, error) {
		var d deltaLog
		resp, _, err := reg.Call(context.Background(), nil, models.Request{Messages: msgs}, d.add)
		return resp, d.all(), err
	}
	user := func(s string) models.Message { return models.Message{Role: models.RoleUser, Text: s} }

	resp, deltas, err := call(user("hi"))
	if err != nil || resp.Text != "Hello! I am a scripted model answering." || resp.Provider != "scripted" || resp.Model != "demo" {
		t.Fatalf("resp = %+v err = %v", resp, err)
	}
	if len(deltas) < 2 || strings.Join(deltas, "") != resp.Text {
		t.Fatalf("deltas = %q", deltas)
	}
	resp, _, err = call(user("what's the WEATHER like?"))
	if err != nil || resp.StopReason != models.StopToolUse || len(resp.ToolCalls) != 1 {
		t.Fatalf("resp = %+v err = %v", resp, err)
	}
	if tc := resp.ToolCalls[0]; tc.ID != "call_w" || tc.Name != "get_weather" || string(tc.Arguments) != `{"city": "Paris"}` {
		t.Fatalf("tool call = %+v (%s)", tc, tc.Arguments)
	}
	// The tool result is followed by the next step, not the match again.
	resp, _, err = call(user("what's the weather like?"),
		models.Message{Role: models.RoleAssistant, ToolCalls: resp.ToolCalls},
		models.Message{Role: models.RoleTool, ToolCallID: "call_w", Text: "sunny"})
	if err != nil || resp.Text != "It is sunny in Paris." {
		t.Fatalf("resp = %+v err = %v", resp, err)
	}
	// A scripted rate limit is retried like a real one.
	resp, _, err = call(user("next"))
	if err != nil || resp.Text != "Answered after a retry." {
		t.Fatalf("resp = %+v err = %v", resp, err)
	}
	_, _, err = call(user("more"))
	wantCode(t, err, models.CodeBadResponse)
	if rows != 6 {
		t.Fatalf("%d ledger rows, want 6", rows)
	}
}

func TestScriptFileErrors(t *testing.T) {
	t.Parallel()
	for _, content := range []string{`{}`, `[]`, `[{"match":"x"}]`, `[{"txt":"typo"}]`, `[{"toolCalls":[{"arguments":{}}]}]`} {
		_, err := models.New(models.Config{ScriptFile: writeScript(t, content)})
		wantCode(t, err, models.CodeNotConfigured)
	}
	reg, err := models.New(models.Config{Selection: "scripted:demo"})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = reg.Call(context.Background(), nil, userReq("x"), nil)
	me := wantCode(t, err, models.CodeNotConfigured)
	if !strings.Contains(me.Message, "GATEHOUSE_SCRIPT_FILE") {
		t.Fatalf("message = %q", me.Message)
	}
}

func TestEmptySelectionIsNotConfigured(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	_, _, err := e.reg.Call(context.Background(), nil, userReq("x"), nil)
	me := wantCode(t, err, models.CodeNotConfigured)
	for _, hint := range []string{"GATEHOUSE_MODEL=openai:gpt-4.1-mini", "OPENAI_API_KEY", "OPENAI_BASE_URL", "scripted:", "GATEHOUSE_SCRIPT_FILE"} {
		if !strings.Contains(me.Message, hint) {
			t.Errorf("message %q lacks %q", me.Message, hint)
		}
	}
	if len(e.oa.Requests())+len(e.an.Requests()) != 0 {
		t.Fatal("nothing should be sent")
	}
}

func TestUnknownProvider(t *testing.T) {
	t.Parallel()
	_, err := models.New(models.Config{Selection: "openai:a,foo:bar"})
	me := wantCode(t, err, models.CodeUnknownProvider)
	if !strings.Contains(me.Message, `"foo"`) || !strings.Contains(me.Message, "openai") {
		t.Fatalf("message = %q", me.Message)
	}
	e := newEnv(t, nil)
	_, _, err = e.reg.Call(context.Background(), models.Chain{{Provider: "openai", Model: "a"}, {Provider: "gemini", Model: "x"}}, userReq("x"), nil)
	wantCode(t, err, models.CodeUnknownProvider)
	if len(e.oa.Requests()) != 0 {
		t.Fatal("an invalid chain must be refused before any call")
	}
}

func TestParseSelection(t *testing.T) {
	t.Parallel()
	got, err := models.ParseSelection(" openai:gpt-4.1-mini , Anthropic:claude-sonnet-4-5,openai:llama3.2:3b ")
	want := models.Chain{{"openai", "gpt-4.1-mini"}, {"anthropic", "claude-sonnet-4-5"}, {"openai", "llama3.2:3b"}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, %v", got, err)
	}
	if got.String() != "openai:gpt-4.1-mini,anthropic:claude-sonnet-4-5,openai:llama3.2:3b" {
		t.Fatalf("String = %s", got)
	}
	if c, err := models.ParseSelection("  "); c != nil || err != nil {
		t.Fatalf("empty: %v %v", c, err)
	}
	for _, bad := range []string{"openai", "openai:", ":gpt", "openai:a,,anthropic:b"} {
		if _, err := models.ParseSelection(bad); err == nil {
			t.Errorf("ParseSelection(%q) accepted", bad)
		}
	}
}

func TestProviderWithoutKeyIsNotConfigured(t *testing.T) {
	t.Parallel()
	reg, err := models.New(models.Config{Selection: "openai:gpt-4.1-mini,anthropic:claude-sonnet-4-5"})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = reg.Call(context.Background(), nil, userReq("x"), nil)
	wantCode(t, err, models.CodeNotConfigured)
	if !strings.Contains(err.Error(), "OPENAI_API_KEY") || !strings.Contains(err.Error(), "ANTHROPIC_API_KEY") {
		t.Fatalf("err = %v", err)
	}
}

func TestLocalServerWithoutKey(t *testing.T) {
	t.Parallel()
	oa := modeltest.NewOpenAI(t, "", "llama3.2:3b")
	oa.Push(modeltest.Reply{Text: "local"})
	reg, err := models.New(models.Config{Selection: "openai:llama3.2:3b", OpenAIBaseURL: oa.BaseURL()})
	if err != nil {
		t.Fatal(err)
	}
	resp, _, err := reg.Call(context.Background(), nil, userReq("x"), nil)
	if err != nil || resp.Text != "local" || resp.Model != "llama3.2:3b" {
		t.Fatalf("resp = %+v err = %v", resp, err)
	}
	if h := oa.Requests()[0].Header.Get("Authorization"); h != "" {
		t.Fatalf("Authorization = %q, want none", h)
	}
}

// Not parallel: it sets the SDKs' environment variables, which must not
// leak into the clients.
func TestEnvironmentDoesNotLeakIntoClients(t *testing.T) {
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
	t.Setenv("OPENAI_API_KEY", "env-key")
	t.Setenv("OPENAI_ORG_ID", "org-env")
	t.Setenv("OPENAI_CUSTOM_HEADERS", "X-Leak: yes")
	t.Setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:1")
	t.Setenv("ANTHROPIC_API_KEY", "env-key")
	t.Setenv("ANTHROPIC_AUTH_TOKEN", "env-token")
	t.Setenv("HOME", t.TempDir())
	e := newEnv(t, nil)
	e.oa.Push(modeltest.Reply{Text: "ok"})
	e.an.Push(modeltest.Reply{Text: "ok"})
	for _, sel := range []string{"openai:a", "anthropic:b"} {
		if _, _, err := e.reg.Call(context.Background(), chain(t, sel), userReq("x"), nil); err != nil {
			t.Fatalf("%s: %v", sel, err)
		}
	}
	h := e.oa.Requests()[0].Header
	if h.Get("X-Leak") != "" || h.Get("OpenAI-Organization") != "" {
		t.Fatalf("environment leaked into openai headers: %v", h)
	}
	if h := e.an.Requests()[0].Header; h.Get("Authorization") != "" {
		t.Fatalf("environment leaked into anthropic headers: %v", h)
	}
}

func TestScriptedWildcardAnswersAnyMessage(t *testing.T) {
	file := filepath.Join(t.TempDir(), "script.json")
	os.WriteFile(file, []byte(`[{"match":"hello","text":"hi!"},{"match":"*","text":"anything"}]`), 0o644)
	reg, err := models.New(models.Config{Selection: "scripted:demo", ScriptFile: file})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ in, want string }{{"hello there", "hi!"}, {"what?", "anything"}, {"again", "anything"}, {"HELLO", "hi!"}} {
		resp, _, err := reg.Call(context.Background(), nil, models.Request{Messages: []models.Message{{Role: models.RoleUser, Text: tc.in}}}, nil)
		if err != nil || resp.Text != tc.want {
			t.Fatalf("%q: %q %v", tc.in, resp.Text, err)
		}
	}
}
