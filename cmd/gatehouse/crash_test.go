package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/internal/testing/testenv"
	"github.com/gatehouse/gatehouse/models/modeltest"
)

func post(t *testing.T, url string, body any) (int, map[string]any) {
	t.Helper()
	raw, _ := json.Marshal(body)
	resp, err := http.Post(url, "application/json", bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

func sessionEvents(t *testing.T, addr, session string) []gh.Event {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/v1/sessions/" + session + "/events?limit=1000")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct{ Events []gh.Event }
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out.Events
}

// waitUntil waits on whole processes (a start, a kill -9 and its
// successor taking the run over), so it allows a minute.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testenv.EventuallyWithin(t, time.Minute, what, cond)
}

// A kill -9 while the model streams: the next process takes the run over
// and answers once; there is never a second assistant.message for the same
// generation, and the acknowledged input is not lost or doubled.
func TestKillMidStreamAnswersOnce(t *testing.T) {
	fake := modeltest.NewOpenAI(t, "test-key")
	fake.Push(modeltest.Reply{Stall: true, Text: "this stream never finishes"})
	fake.SetDefault(modeltest.Reply{Text: "the one answer"})
	data := filepath.Join(t.TempDir(), "data")
	envs := []string{"GATEHOUSE_DATA_DIR=" + data, "GATEHOUSE_MODEL=openai:test-model", "OPENAI_API_KEY=test-key",
		"OPENAI_BASE_URL=" + fake.BaseURL(), "GATEHOUSE_LEASE_TTL=1s", "GATEHOUSE_MODEL_RETRIES=1"}

	p := start(t, envs...)
	code, body := post(t, "http://"+p.addr+"/v1/sessions/s1/input", map[string]string{"text": "hello", "requestId": "r1"})
	if code != 202 || body["seq"] != float64(1) {
		t.Fatalf("input: %d %v", code, body)
	}
	waitUntil(t, "the model request", func() bool { return len(fake.Requests()) == 1 })
	time.Sleep(100 * time.Millisecond) // the first delta is streaming
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p.done

	p2 := start(t, envs...)
	waitUntil(t, "the answer after restart", func() bool {
		for _, e := range sessionEvents(t, p2.addr, "s1") {
			if e.Kind == gh.KindRunFinished {
				return true
			}
		}
		return false
	})
	// The client retries its request after the crash: still one input.
	if code, body := post(t, "http://"+p2.addr+"/v1/sessions/s1/input", map[string]string{"text": "hello", "requestId": "r1"}); code != 202 || body["duplicate"] != true || body["seq"] != float64(1) {
		t.Fatalf("retried input: %d %v", code, body)
	}
	var answers []gh.AssistantMessage
	users := 0
	for _, e := range sessionEvents(t, p2.addr, "s1") {
		switch e.Kind {
		case gh.KindAssistantMessage:
			var a gh.AssistantMessage
			json.Unmarshal(e.Payload, &a)
			answers = append(answers, a)
		case gh.KindUserMessage:
			users++
		}
	}
	if users != 1 || len(answers) != 1 || answers[0].Text != "the one answer" || answers[0].GenerationID != "u1-a1" {
		t.Fatalf("after the crash: %d inputs, answers %+v", users, answers)
	}
	p2.stopWith(t, syscall.SIGTERM)
}
