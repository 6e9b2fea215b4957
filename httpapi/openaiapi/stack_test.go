package openaiapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/httpapi"
	"github.com/gatehouse/gatehouse/httpapi/openaiapi"
	"github.com/gatehouse/gatehouse/internal/testing/stacktest"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

const (
	apiToken  = "openai-test-token"
	publicURL = "https://gate.example"
)

// stack is a whole gateway (internal/testing/stacktest: SQLite, kernel,
// supervisor with the scripted model, tool worker with post_note, gates,
// the HTTP API on loopback) with the endpoint mounted, and the official
// client aimed at it.
type stack struct {
	t      *testing.T
	e      *stacktest.Env
	base   string // http://127.0.0.1:port
	client openai.Client
}

// lateHandler is the endpoint for httpapi.Config before it exists: the
// handler needs the Env's kernel, and the Env starts the server.
type lateHandler struct {
	h *atomic.Pointer[openaiapi.Handler]
}

func (l lateHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) { l.h.Load().ServeHTTP(w, r) }
func (l lateHandler) Refuse(w http.ResponseWriter, r *http.Request, err error) {
	l.h.Load().Refuse(w, r, err)
}
func (l lateHandler) Drain() {
	if h := l.h.Load(); h != nil {
		h.Drain()
	}
}

func newStack(t *testing.T, script string, cfg openaiapi.Config) *stack {
	t.Helper()
	var h atomic.Pointer[openaiapi.Handler]
	e := stacktest.NewEnv(t, nil, stacktest.EnvOptions{Script: script,
		HTTP: &httpapi.Config{APIToken: apiToken, OpenAI: lateHandler{&h}}})
	cfg.Kernel, cfg.PublicURL = e.Kernel, publicURL
	if cfg.MaxWait == 0 {
		cfg.MaxWait = 30 * time.Second
	}
	h.Store(openaiapi.New(cfg))
	base := "http://" + e.Addr
	client := openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey(apiToken), option.WithMaxRetries(0))
	return &stack{t: t, e: e, base: base, client: client}
}

// conversation builds a request's messages: alternating user and
// assistant texts, starting with the user's.
func conversation(texts ...string) []openai.ChatCompletionMessageParamUnion {
	var out []openai.ChatCompletionMessageParamUnion
	for i, s := range texts {
		if i%2 == 0 {
			out = append(out, openai.UserMessage(s))
		} else {
			out = append(out, openai.AssistantMessage(s))
		}
	}
	return out
}

func params(msgs []openai.ChatCompletionMessageParamUnion) openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{Model: openaiapi.ModelID, Messages: msgs}
}

// sdkRetry, as ask's last text, sends the request as the SDK's first
// retry of it (X-Stainless-Retry-Count: 1), as a client whose reply was
// lost sends it again.
const sdkRetry = "\x00sdk-retry"

// ask sends a completion not streamed in session and returns its content.
func (s *stack) ask(session string, texts ...string) string {
	s.t.Helper()
	opts := []option.RequestOption{option.WithHeader(openaiapi.SessionHeader, session)}
	if n := len(texts); n > 0 && texts[n-1] == sdkRetry {
		texts, opts = texts[:n-1], append(opts, option.WithHeader("X-Stainless-Retry-Count", "1"))
	}
	c, err := s.client.Chat.Completions.New(context.Background(), params(conversation(texts...)), opts...)
	if err != nil {
		s.t.Fatalf("completion: %v", err)
	}
	if len(c.Choices) != 1 || c.Choices[0].FinishReason != "stop" || c.Object != "chat.completion" || c.ID == "" {
		s.t.Fatalf("completion %s: want one choice finished by stop", c.RawJSON())
	}
	return c.Choices[0].Message.Content
}

// askStreamed sends a streamed completion and returns its content, as the
// client's accumulator puts the chunks together.
func (s *stack) askStreamed(session string, texts ...string) string {
	s.t.Helper()
	p := params(conversation(texts...))
	p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	st := s.client.Chat.Completions.NewStreaming(context.Background(), p, option.WithHeader(openaiapi.SessionHeader, session))
	var acc openai.ChatCompletionAccumulator
	chunks := 0
	for st.Next() {
		if !acc.AddChunk(st.Current()) {
			s.t.Fatalf("the accumulator refused chunk %d: %s", chunks+1, st.Current().RawJSON())
		}
		chunks++
	}
	if err := st.Err(); err != nil {
		s.t.Fatalf("stream: %v", err)
	}
	if len(acc.Choices) != 1 || acc.Choices[0].FinishReason != "stop" || chunks < 3 {
		s.t.Fatalf("streamed completion %+v in %d chunks: want one choice finished by stop", acc.Choices, chunks)
	}
	return acc.Choices[0].Message.Content
}

// refused sends a completion that must be refused with status and code.
func (s *stack) refused(session string, status int, code string, texts ...string) *openai.Error {
	s.t.Helper()
	var opts []option.RequestOption
	if session != "" {
		opts = append(opts, option.WithHeader(openaiapi.SessionHeader, session))
	}
	_, err := s.client.Chat.Completions.New(context.Background(), params(conversation(texts...)), opts...)
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) {
		s.t.Fatalf("completion: %v, want an API error %d", err, status)
	}
	if apiErr.StatusCode != status || apiErr.Code != code || apiErr.Message == "" || apiErr.Type == "" {
		s.t.Fatalf("error %d %q %q %q, want %d %q", apiErr.StatusCode, apiErr.Type, apiErr.Code, apiErr.Message, status, code)
	}
	return apiErr
}

// kinds counts the session's events by kind.
func (s *stack) kinds(session string) map[gh.Kind]int {
	s.t.Helper()
	evs, err := s.e.Kernel.Events(context.Background(), session, 0, 1000)
	if err != nil {
		s.t.Fatal(err)
	}
	out := map[gh.Kind]int{}
	for _, e := range evs {
		out[e.Kind]++
	}
	return out
}

// api calls the /v1 API with the token and decodes the answer into out.
func (s *stack) api(method, path string, body any, want int, out any) {
	s.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, s.base+path, rd)
	req.Header.Set("Authorization", "Bearer "+apiToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		s.t.Fatalf("%s %s: %d %s, want %d", method, path, resp.StatusCode, b, want)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			s.t.Fatalf("%s %s: %v in %s", method, path, err, b)
		}
	}
}
