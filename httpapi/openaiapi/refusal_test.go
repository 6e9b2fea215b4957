package openaiapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/httpapi/openaiapi"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// post sends a raw body and returns the status and OpenAI's error body.
func (s *stack) post(path, token, body string, header map[string]string) (int, map[string]map[string]any) {
	s.t.Helper()
	req, _ := http.NewRequest("POST", s.base+path, strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out map[string]map[string]any
	if resp.StatusCode != http.StatusOK {
		if err := json.Unmarshal(b, &out); err != nil || out["error"]["message"] == "" || out["error"]["type"] == nil || out["error"]["code"] == nil {
			s.t.Fatalf("POST %s: %d %s: want OpenAI's error shape", path, resp.StatusCode, b)
		}
	}
	return resp.StatusCode, out
}

// Refusals come in OpenAI's error shape with their status: a wrong or
// missing token 401, malformed or unusable requests 400, an unknown model
// 404, a body over the limit 413.
func TestRefusals(t *testing.T) {
	s := newStack(t, `[{"match": "*", "text": "ok"}]`, openaiapi.Config{MaxBodyBytes: 4 << 10})
	session := map[string]string{openaiapi.SessionHeader: "conv-x"}
	good := `{"model": "gatehouse", "messages": [{"role": "user", "content": "hi"}]}`

	wrong := openai.NewClient(option.WithBaseURL(s.base+"/v1/"), option.WithAPIKey("not-the-token"), option.WithMaxRetries(0))
	_, err := wrong.Chat.Completions.New(context.Background(), params(conversation("hi")), option.WithHeader(openaiapi.SessionHeader, "conv-x"))
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusUnauthorized || apiErr.Type != "authentication_error" {
		t.Fatalf("wrong token: %v", err)
	}
	if _, err := wrong.Models.List(context.Background()); !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusUnauthorized {
		t.Fatalf("models with a wrong token: %v", err)
	}
	if status, _ := s.post("/v1/chat/completions", "", good, session); status != http.StatusUnauthorized {
		t.Fatalf("no token: %d", status)
	}

	for _, c := range []struct {
		name, body string
		header     map[string]string
		status     int
		code       string
	}{
		{"malformed JSON", `{"model": "gatehouse", "messages": [`, session, 400, "invalid"},
		{"messages not a list", `{"model": "gatehouse", "messages": "hi"}`, session, 400, "invalid"},
		{"no messages", `{"model": "gatehouse", "messages": []}`, session, 400, "invalid"},
		{"last message not the user's", `{"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}`, session, 400, "invalid"},
		{"an image", `{"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "https://x.example/a.png"}}]}]}`, session, 400, "invalid"},
		{"a tool message", `{"messages": [{"role": "tool", "tool_call_id": "c1", "content": "42"}, {"role": "user", "content": "hi"}]}`, session, 400, "invalid"},
		{"an unknown role", `{"messages": [{"role": "wizard", "content": "hi"}]}`, session, 400, "invalid"},
		{"n above 1", `{"n": 2, "messages": [{"role": "user", "content": "hi"}]}`, session, 400, "invalid"},
		{"no session", good, nil, 400, "invalid"},
		{"an invalid session id", good, map[string]string{openaiapi.SessionHeader: "a/b"}, 400, "invalid"},
		{"an unknown model", `{"model": "gpt-9", "messages": [{"role": "user", "content": "hi"}]}`, session, 404, "model_not_found"},
		{"a body over the limit", `{"messages": [{"role": "user", "content": "` + strings.Repeat("x", 5<<10) + `"}]}`, session, 413, "payload-too-large"},
	} {
		t.Run(c.name, func(t *testing.T) {
			status, body := s.post("/v1/chat/completions", apiToken, c.body, c.header)
			if status != c.status || body["error"]["code"] != c.code {
				t.Fatalf("%d %v, want %d %s", status, body, c.status, c.code)
			}
		})
	}
	if evs, err := s.e.Kernel.Events(context.Background(), "conv-x", 0, 10); len(evs) != 0 || err != nil && !gh.IsCode(err, gh.CodeUnknownSession) {
		t.Fatalf("refused requests committed %v (%v)", evs, err)
	}
}

// GET /v1/models lists the agent and the configured selections; a
// request naming a selection commits it as the input's.
func TestModels(t *testing.T) {
	s := newStack(t, `[{"match": "*", "text": "ok"}]`, openaiapi.Config{Selections: []string{"scripted:demo"}})
	page, err := s.client.Models.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range page.Data {
		ids = append(ids, m.ID)
	}
	if strings.Join(ids, ",") != "gatehouse,scripted:demo" {
		t.Fatalf("models %v", ids)
	}
	if m, err := s.client.Models.Get(context.Background(), "gatehouse"); err != nil || m.ID != "gatehouse" || m.OwnedBy == "" {
		t.Fatalf("model: %+v %v", m, err)
	}
	p := params(conversation("hi"))
	p.Model = "scripted:demo"
	if c, err := s.client.Chat.Completions.New(context.Background(), p, option.WithHeader(openaiapi.SessionHeader, "conv-sel")); err != nil || c.Choices[0].Message.Content != "ok" {
		t.Fatalf("with a selection: %v", err)
	}
	evs, _ := s.e.Kernel.Events(context.Background(), "conv-sel", 0, 10)
	if len(evs) == 0 || !strings.Contains(string(evs[0].Payload), `"selection":"scripted:demo"`) {
		t.Fatalf("first event %s: want the selection committed", evs[0].Payload)
	}
}
