package openaiapi_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/httpapi/openaiapi"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// A conversation resent whole, not streamed then streamed: each request's
// last message is committed once and answered with the log's answer; the
// SDK's own retry of a request commits nothing more and gets the same
// answer.
func TestConversationResentWhole(t *testing.T) {
	s := newStack(t, `[{"match": "hello", "text": "Hello there, human."}, {"match": "weather", "text": "Sunny today."}]`, openaiapi.Config{})
	if got := s.ask("conv-1", "hello"); got != "Hello there, human." {
		t.Fatalf("first answer %q", got)
	}
	if got := s.askStreamed("conv-1", "hello", "Hello there, human.", "and the weather?"); got != "Sunny today." {
		t.Fatalf("streamed answer %q", got)
	}
	// The client's SDK retries the same request: no second input.
	if got := s.ask("conv-1", "hello", "Hello there, human.", "and the weather?", sdkRetry); got != "Sunny today." {
		t.Fatalf("repeated request's answer %q", got)
	}
	if k := s.kinds("conv-1"); k[gh.KindUserMessage] != 2 || k[gh.KindAssistantMessage] != 2 {
		t.Fatalf("log %v: want two inputs and two answers", k)
	}
	// A system message is ignored, so it does not break the match.
	msgs := append([]openai.ChatCompletionMessageParamUnion{openai.SystemMessage("Be brief.")}, conversation("hello", "Hello there, human.", "and the weather?")...)
	c, err := s.client.Chat.Completions.New(context.Background(), params(msgs), option.WithHeader(openaiapi.SessionHeader, "conv-1"),
		option.WithHeader("X-Stainless-Retry-Count", "1"))
	if err != nil || c.Choices[0].Message.Content != "Sunny today." || c.Model != openaiapi.ModelID {
		t.Fatalf("with a system message: %v %s", err, c.RawJSON())
	}
}

// A history that is not the session's log is refused 409 with how to
// start over, and nothing is committed.
func TestMismatchedHistory(t *testing.T) {
	s := newStack(t, `[{"match": "*", "text": "Noted."}]`, openaiapi.Config{})
	s.ask("conv-m", "remember the milk")
	before := s.kinds("conv-m")
	for name, texts := range map[string][]string{
		"another answer":          {"remember the milk", "I will not.", "and eggs"},
		"another user message":    {"remember the bread", "Noted.", "and eggs"},
		"a message the log lacks": {"remember the milk", "Noted.", "and eggs", "Noted.", "and flour"},
		"an edited last message":  {"forget the milk"},
	} {
		t.Run(name, func(t *testing.T) {
			e := s.refused("conv-m", http.StatusConflict, "conversation_mismatch", texts...)
			if !strings.Contains(e.Message, openaiapi.SessionHeader) || e.Type != "invalid_request_error" {
				t.Fatalf("409 message %q type %q: want how to start a new conversation", e.Message, e.Type)
			}
		})
	}
	if after := s.kinds("conv-m"); after[gh.KindUserMessage] != before[gh.KindUserMessage] || after[gh.KindUserMessage] != 1 {
		t.Fatalf("log after the refusals %v, before %v: want nothing committed", after, before)
	}
	// A new conversation (another session) starts afresh.
	if got := s.ask("conv-m2", "forget the milk"); got != "Noted." {
		t.Fatalf("new conversation: %q", got)
	}
}

// A regenerate of a failed answer (the same request again) goes through
// the retry path: one user.message, one turn.retry, and the new answer.
func TestRegenerateRetriesTheFailedTurn(t *testing.T) {
	// model-unauthorized is not retried: the turn fails at once.
	s := newStack(t, `[{"error": "model-unauthorized"}, {"text": "It works now."}, {"match": "thanks", "text": "Glad to help."}]`, openaiapi.Config{})
	failed := s.ask("conv-r", "will this work?")
	if !strings.HasPrefix(failed, "⚠️ The turn failed") {
		t.Fatalf("first answer %q: want the failure", failed)
	}
	if got := s.askStreamed("conv-r", "will this work?"); got != "It works now." {
		t.Fatalf("regenerated answer %q", got)
	}
	// The SDK's retry of that request: the same answer, and the retry is
	// not committed twice.
	if got := s.ask("conv-r", "will this work?", sdkRetry); got != "It works now." {
		t.Fatalf("a retry of the regenerate %q", got)
	}
	if k := s.kinds("conv-r"); k[gh.KindUserMessage] != 1 || k[gh.KindTurnRetry] != 1 {
		t.Fatalf("log %v: want one user.message and one turn.retry", k)
	}
	// A client that kept the failure (not the regenerated answer) still
	// matches: the failure stands for no answer, so the answer it lacks
	// comes with the next one.
	if got, want := s.ask("conv-r", "will this work?", failed, "thanks"), "It works now.\n\nGlad to help."; got != want {
		t.Fatalf("after a failure in the history: %q, want %q", got, want)
	}
}

// An approval: the answer says a card waits, with its link; while it
// waits the same again says so again; decided on the web API, the next
// request gets the answer made after the decision, and the effect ran
// once. The status text in the history does not break the match.
func TestApprovalDecidedOnTheWebThenContinued(t *testing.T) {
	script := `[{"match": "post", "toolCalls": [{"name": "post_note", "arguments": {"text": "lunch at noon"}}]},
		{"text": "Posted the note."},
		{"match": "continue", "text": "Nothing else to do."},
		{"match": "thanks", "text": "You are welcome."}]`
	s := newStack(t, script, openaiapi.Config{})
	asked := s.ask("conv-a", "please post the lunch note")
	var gates struct {
		Gates []gh.Gate `json:"gates"`
	}
	s.api("GET", "/v1/gates?session=conv-a&state=pending", nil, http.StatusOK, &gates)
	if len(gates.Gates) != 1 {
		t.Fatalf("pending gates %+v, want one", gates.Gates)
	}
	id := gates.Gates[0].ID
	t.Logf("the approval answer:\n%s", asked)
	for _, want := range []string{"⏸️ Approval needed", "post_note", "lunch at noon", publicURL + "/admin#card=" + id} {
		if !strings.Contains(asked, want) {
			t.Fatalf("approval answer %q: want %q in it", asked, want)
		}
	}
	if again := s.askStreamed("conv-a", "please post the lunch note"); again != asked {
		t.Fatalf("asked again while pending: %q, want %q", again, asked)
	}
	if s.e.Posted.Load() != 0 {
		t.Fatal("the note was posted before anyone approved")
	}
	s.api("POST", "/v1/gates/"+id+"/decision", map[string]string{"decision": "approve"}, http.StatusOK, nil)

	got := s.askStreamed("conv-a", "please post the lunch note", asked, "continue")
	if want := "Posted the note.\n\nNothing else to do."; got != want {
		t.Fatalf("after the decision: %q, want %q", got, want)
	}
	if got := s.ask("conv-a", "please post the lunch note", asked, "continue", got, "thanks"); got != "You are welcome." {
		t.Fatalf("the next message: %q", got)
	}
	if n := s.e.Posted.Load(); n != 1 {
		t.Fatalf("the note was posted %d times, want once", n)
	}
	if k := s.kinds("conv-a"); k[gh.KindUserMessage] != 3 || k[gh.KindGateDecided] != 1 {
		t.Fatalf("log %v: want three inputs and one decision", k)
	}
}

// A message sent while a card of the conversation waits is answered at
// once (#30), not with the approval text again: the card's turn waits on
// its own, and after the decision it goes on and the effect runs once.
func TestMessageWhileACardWaitsGetsItsOwnAnswer(t *testing.T) {
	script := `[{"match": "post", "toolCalls": [{"name": "post_note", "arguments": {"text": "lunch at noon"}}]},
		{"match": "weather", "text": "Sunny tomorrow."},
		{"text": "Posted the note."}]`
	s := newStack(t, script, openaiapi.Config{})
	asked := s.ask("conv-w", "please post the lunch note")
	if !strings.Contains(asked, "⏸️ Approval needed") {
		t.Fatalf("the first answer %q: want the approval text", asked)
	}
	if got := s.ask("conv-w", "please post the lunch note", asked, "and the weather tomorrow?"); got != "Sunny tomorrow." {
		t.Fatalf("the message under the card got %q, want its own answer", got)
	}
	var gates struct {
		Gates []gh.Gate `json:"gates"`
	}
	s.api("GET", "/v1/gates?session=conv-w&state=pending", nil, http.StatusOK, &gates)
	if len(gates.Gates) != 1 || s.e.Posted.Load() != 0 {
		t.Fatalf("after the aside: pending %+v, posted %d; want the card still waiting", gates.Gates, s.e.Posted.Load())
	}
	s.api("POST", "/v1/gates/"+gates.Gates[0].ID+"/decision", map[string]string{"decision": "approve"}, http.StatusOK, nil)
	s.e.Eventually("the paused turn's answer", func() bool {
		evs, _ := s.e.Kernel.Events(s.e.Ctx, "conv-w", 0, 1000)
		for _, ev := range evs {
			if ev.Kind == gh.KindAssistantMessage && strings.Contains(string(ev.Payload), "Posted the note.") {
				return true
			}
		}
		return false
	})
	if n := s.e.Posted.Load(); n != 1 {
		t.Fatalf("the note was posted %d times, want once", n)
	}
}
