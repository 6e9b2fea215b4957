package openaiapi_test

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/gatehouse/gatehouse/httpapi/openaiapi"
)

// The real curl, as a user of the documentation would call it: not
// streamed, with the session from the user field, then streamed.
func TestCurl(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("curl is not installed on this machine; this test runs the real curl binary")
	}
	s := newStack(t, `[{"match": "hello", "text": "Hello from the gateway."}, {"match": "more", "text": "Here is more."}]`, openaiapi.Config{})
	run := func(args ...string) string {
		t.Helper()
		base := []string{"-sS", "--fail-with-body", "-D", "-", "-H", "Authorization: Bearer " + apiToken, "-H", "Content-Type: application/json"}
		out, err := exec.Command(curl, append(base, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("curl %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	out := run("-d", `{"model": "gatehouse", "user": "alice", "messages": [{"role": "user", "content": "hello"}]}`, s.base+"/v1/chat/completions")
	head, body, _ := strings.Cut(out, "\r\n\r\n")
	if !strings.Contains(strings.ToLower(head), strings.ToLower(openaiapi.SessionHeader)+": oai_") {
		t.Fatalf("headers %q: want the session made from the user field", head)
	}
	var c struct {
		Object  string `json:"object"`
		Choices []struct {
			Message struct {
				Role, Content string
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
	}
	if err := json.Unmarshal([]byte(body), &c); err != nil || c.Object != "chat.completion" || len(c.Choices) != 1 ||
		c.Choices[0].Message.Content != "Hello from the gateway." || c.Choices[0].Message.Role != "assistant" || c.Choices[0].FinishReason != "stop" {
		t.Fatalf("body %s: %v", body, err)
	}

	out = run("-N", "-d", `{"model": "gatehouse", "user": "alice", "stream": true, "messages": [
		{"role": "user", "content": "hello"}, {"role": "assistant", "content": "Hello from the gateway."}, {"role": "user", "content": "tell me more"}]}`,
		s.base+"/v1/chat/completions")
	if !strings.Contains(out, "text/event-stream") || !strings.HasSuffix(strings.TrimSpace(out), "data: [DONE]") {
		t.Fatalf("stream %q: want SSE ending with [DONE]", out)
	}
	var content strings.Builder
	for _, line := range strings.Split(out, "\n") {
		data, ok := strings.CutPrefix(strings.TrimSpace(line), "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var ch struct {
			Object  string `json:"object"`
			Choices []struct {
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(data), &ch); err != nil || ch.Object != "chat.completion.chunk" {
			t.Fatalf("chunk %q: %v", data, err)
		}
		for _, c := range ch.Choices {
			content.WriteString(c.Delta.Content)
		}
	}
	if content.String() != "Here is more." {
		t.Fatalf("streamed content %q", content.String())
	}
}
