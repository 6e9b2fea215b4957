package openaiapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/httpapi/openaiapi"
	"github.com/gatehouse/gatehouse/models/modeltest"
)

// modelSaw is the text of every message of the model request i.
func (s *stack) modelSaw(i int) string {
	s.t.Helper()
	reqs := s.e.Model.Requests()
	if i >= len(reqs) {
		s.t.Fatalf("the model got %d requests, want request %d", len(reqs), i+1)
	}
	var body struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(reqs[i].Body, &body); err != nil {
		s.t.Fatal(err)
	}
	var b strings.Builder
	for _, m := range body.Messages {
		b.WriteString(m.Role + ": " + string(m.Content) + "\n")
	}
	return b.String()
}

// A regenerate of a good answer (the history without it, the same last
// message) goes through the retry path: one turn.retry that names the
// answer it replaces, and a new answer from the model, which was not
// shown the old one. Two such requests at once commit one retry and get
// the same new answer. The history with the new answer matches on the
// next request, and the model reads the new answer, not the old; a
// history that kept the replaced answer no longer matches.
func TestRegenerateAGoodAnswer(t *testing.T) {
	s := newStack(t, "", openaiapi.Config{})
	release := make(chan struct{})
	s.e.Model.Push(modeltest.Reply{Text: "Why did the gate open? It was approved."},
		modeltest.Reply{Text: "A gatehouse walks into a bar. It is held for approval.", Before: func() { <-release }},
		modeltest.Reply{Text: "The third one is on the house."})
	first := s.ask("conv-g", "tell me a joke")
	if first != "Why did the gate open? It was approved." {
		t.Fatalf("first answer %q", first)
	}

	var wg sync.WaitGroup
	got := make([]string, 2)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i == 0 {
				got[i] = s.askStreamed("conv-g", "tell me a joke")
			} else {
				got[i] = s.ask("conv-g", "tell me a joke")
			}
		}()
	}
	s.e.Eventually("the regenerate committed", func() bool { return s.kinds("conv-g")[gh.KindTurnRetry] == 1 })
	// Both requests read the log before the new answer exists: the model
	// is held until then.
	time.Sleep(500 * time.Millisecond)
	close(release)
	wg.Wait()
	want := "A gatehouse walks into a bar. It is held for approval."
	if got[0] != want || got[1] != want {
		t.Fatalf("regenerated answers %q, want %q twice", got, want)
	}
	if saw := s.modelSaw(1); strings.Contains(saw, first) || !strings.HasSuffix(strings.TrimSpace(saw), `user: "tell me a joke"`) {
		t.Fatalf("the regenerate's model request:\n%s\nwant the question last and no old answer", saw)
	}
	var retry gh.TurnRetry
	evs, err := s.e.Kernel.Events(s.e.Ctx, "conv-g", 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if e.Kind == gh.KindTurnRetry {
			if err := json.Unmarshal(e.Payload, &retry); err != nil {
				t.Fatal(err)
			}
		}
	}
	if retry.Replaces != "u1-a1" || retry.RunID == 0 {
		t.Fatalf("turn.retry %+v: want it to name the answer it replaces", retry)
	}

	if next := s.ask("conv-g", "tell me a joke", want, "another one"); next != "The third one is on the house." {
		t.Fatalf("the next answer %q", next)
	}
	if saw := s.modelSaw(2); strings.Contains(saw, first) || !strings.Contains(saw, want) {
		t.Fatalf("the next model request:\n%s\nwant the new answer and not the replaced one", saw)
	}
	if k := s.kinds("conv-g"); k[gh.KindUserMessage] != 2 || k[gh.KindTurnRetry] != 1 || k[gh.KindAssistantMessage] != 3 {
		t.Fatalf("log %v: want two inputs, one turn.retry and three answers (the replaced one kept)", k)
	}
	if n := len(s.e.Model.Requests()); n != 3 {
		t.Fatalf("%d model requests, want 3", n)
	}
	s.refused("conv-g", http.StatusConflict, "conversation_mismatch", "tell me a joke", first, "another one", "The third one is on the house.", "and one more")
}

// After an approval, the same request again gets the answer made after
// the decision (its client was given the approval text, not the answer);
// once it has that answer, the same again regenerates it from the tool's
// result, and the tool does not run again.
func TestSameAgainAfterAnApprovalThenRegenerate(t *testing.T) {
	s := newStack(t, "", openaiapi.Config{})
	s.e.Model.Push(modeltest.Reply{ToolCalls: []modeltest.ToolCall{{ID: "call_1", Name: "post_note", Arguments: `{"text": "lunch"}`}}},
		modeltest.Reply{Text: "Posted the note."}, modeltest.Reply{Text: "The lunch note is posted."})
	asked := s.ask("conv-ap", "post the lunch note")
	if !strings.Contains(asked, "⏸️ Approval needed") {
		t.Fatalf("first answer %q: want the approval text", asked)
	}
	var gates struct {
		Gates []gh.Gate `json:"gates"`
	}
	s.api("GET", "/v1/gates?session=conv-ap&state=pending", nil, http.StatusOK, &gates)
	if len(gates.Gates) != 1 {
		t.Fatalf("pending gates %+v", gates.Gates)
	}
	s.api("POST", "/v1/gates/"+gates.Gates[0].ID+"/decision", map[string]string{"decision": "approve"}, http.StatusOK, nil)
	if got := s.ask("conv-ap", "post the lunch note"); got != "Posted the note." {
		t.Fatalf("the same again after the decision: %q", got)
	}
	if got := s.askStreamed("conv-ap", "post the lunch note"); got != "The lunch note is posted." {
		t.Fatalf("the regenerate: %q", got)
	}
	if saw := s.modelSaw(2); strings.Contains(saw, "Posted the note.") || !strings.Contains(saw, "posted") {
		t.Fatalf("the regenerate's model request:\n%s\nwant the tool result and not the old answer", saw)
	}
	if n := s.e.Posted.Load(); n != 1 {
		t.Fatalf("the note was posted %d times, want once", n)
	}
	if k := s.kinds("conv-ap"); k[gh.KindTurnRetry] != 1 || k[gh.KindToolResult] != 1 {
		t.Fatalf("log %v: want one turn.retry and one tool result", k)
	}
}
