package supervisor_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/kernel"
	"github.com/gatehouse/gatehouse/models/modeltest"
)

// regenerate commits a turn.retry that replaces the answer gen of run.
func (e *env) regenerate(session string, run int64, gen string) kernel.Committed {
	e.t.Helper()
	p, _ := json.Marshal(gh.TurnRetry{RunID: run, Replaces: gen, By: gh.LocalUser})
	c, err := e.k.EdgeCommit(e.ctx, kernel.EdgeInput{SessionID: session, Event: gh.NewEvent{Kind: gh.KindTurnRetry, Payload: p, Key: "retry:" + gen}})
	if err != nil || c.RunID == 0 {
		e.t.Fatalf("regenerate: %+v %v", c, err)
	}
	return c
}

// requestTexts are the contents of the messages of the model request i.
func (e *env) requestTexts(i int) []string {
	e.t.Helper()
	var out []string
	for _, m := range e.fake.Requests()[i].JSON()["messages"].([]any) {
		if c, ok := m.(map[string]any)["content"].(string); ok {
			out = append(out, c)
		}
	}
	return out
}

// A regenerate of a good answer (a turn.retry that names it) is owed a
// fresh answer: the replaced one stays in the log but is not shown to the
// model, the input is presented again as the prompt, and the new answer
// gets a name of its own. The next turn sees only the new answer.
func TestRegenerateAnswersTheInputAfresh(t *testing.T) {
	e := setup(t, opts{})
	e.fake.Push(modeltest.Reply{Text: "Paris is in France."}, modeltest.Reply{Text: "Paris is the capital of France."},
		modeltest.Reply{Text: "About two million."})
	e.input("s1", "where is Paris?", "")
	first := e.settled("s1")
	c := e.regenerate("s1", first.ID, "u1-a1")
	e.waitFor("the regenerated answer", func() bool { return len(assistants(t, e.events("s1"))) == 2 })
	if run := e.settled("s1"); run.State != gh.RunDone || run.ID != c.RunID {
		t.Fatalf("the regenerate's run %+v, want run %d done", run, c.RunID)
	}
	as := assistants(t, e.events("s1"))
	if as[1].Text != "Paris is the capital of France." || as[1].GenerationID != "u1-a2" || fmt.Sprint(as[1].InputSeqs) != "[1]" {
		t.Fatalf("the new answer %+v", as[1])
	}
	// The second request ends with the question and holds no old answer.
	texts := e.requestTexts(1)
	if texts[len(texts)-1] != "where is Paris?" || strings.Contains(strings.Join(texts, "\n"), "Paris is in France.") {
		t.Fatalf("the regenerate's request %q", texts)
	}
	e.input("s1", "how many people live there?", "")
	e.waitFor("the next answer", func() bool { return len(assistants(t, e.events("s1"))) == 3 })
	e.settled("s1")
	joined := strings.Join(e.requestTexts(2), "\n")
	if strings.Contains(joined, "Paris is in France.") || !strings.Contains(joined, "Paris is the capital of France.") {
		t.Fatalf("the next turn's request %q: want the new answer, not the replaced one", joined)
	}
	if n := len(e.fake.Requests()); n != 3 {
		t.Fatalf("%d model requests, want 3", n)
	}
}

// A regenerate of a tool turn replaces its final answer only: the calls
// and their results stay, the tool does not run again, and the model
// writes the answer again from them.
func TestRegenerateKeepsTheTurnsToolResults(t *testing.T) {
	e := setup(t, opts{tools: echoTool()})
	e.fake.Push(modeltest.Reply{ToolCalls: []modeltest.ToolCall{{ID: "call_1", Name: "lookup", Arguments: `{}`}}},
		modeltest.Reply{Text: "It was found."}, modeltest.Reply{Text: "The lookup found it."})
	e.input("s1", "look it up", "")
	first := e.settled("s1")
	e.regenerate("s1", first.ID, "u1-a2")
	e.waitFor("the regenerated answer", func() bool { return len(assistants(t, e.events("s1"))) == 3 })
	e.settled("s1")
	as := assistants(t, e.events("s1"))
	if as[2].Text != "The lookup found it." || as[2].GenerationID != "u1-a3" {
		t.Fatalf("the new answer %+v", as[2])
	}
	results := 0
	for _, ev := range e.events("s1") {
		if ev.Kind == gh.KindToolResult {
			results++
		}
	}
	if results != 1 || len(e.fake.Requests()) != 3 {
		t.Fatalf("%d tool results and %d model requests, want 1 and 3", results, len(e.fake.Requests()))
	}
	msgs := e.fake.Requests()[2].JSON()["messages"].([]any)
	last := msgs[len(msgs)-1].(map[string]any)
	if last["role"] != "tool" || strings.Contains(fmt.Sprint(msgs), "It was found.") {
		t.Fatalf("the regenerate's request %v: want it to end with the tool result and hold no old answer", msgs)
	}
}
