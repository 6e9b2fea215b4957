package supervisor_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/httpapi"
	"github.com/gatehouse/gatehouse/internal/testing/stacktest"
	"github.com/gatehouse/gatehouse/models/modeltest"
	"github.com/gatehouse/gatehouse/store"
)

// The chat's stored choice answers a turn whose input chose nothing, and
// an input's own choice wins over it; the run and its run.finished say
// what was applied (a level the model does not take: not applied, and
// why). A stored selection the list no longer holds is ignored.
func TestChatChoiceAndTheInputsOwn(t *testing.T) {
	e := stacktest.NewEnv(t, nil, stacktest.EnvOptions{HTTP: &httpapi.Config{}, ChatModels: "openai:test-model;openai:o3;openai:gpt-4o"})
	call := func(method, path string, body any) int {
		b, _ := json.Marshal(body)
		req, _ := http.NewRequest(method, "http://"+e.Addr+path, bytes.NewReader(b))
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(e.Authorize(req))
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	turn := func(input map[string]any) (modeltest.Request, gh.Run, gh.RunFinished) {
		t.Helper()
		before := len(e.Model.Requests())
		if code := call("POST", "/v1/sessions/w1/input", input); code != http.StatusAccepted {
			t.Fatalf("input answered %d", code)
		}
		var run gh.Run
		e.Eventually("the turn", func() bool {
			r, ok, _ := e.Kernel.LatestRun(e.Ctx, "w1")
			run = r
			return ok && r.State == gh.RunDone && len(e.Model.Requests()) > before
		})
		evs, _ := e.Kernel.Events(e.Ctx, "w1", 0, 1000)
		var fin gh.RunFinished
		for _, ev := range evs {
			if ev.Kind == gh.KindRunFinished {
				fin = gh.RunFinished{}
				json.Unmarshal(ev.Payload, &fin)
			}
		}
		return e.Model.Requests()[before], run, fin
	}
	if code := call("PUT", "/v1/sessions/w1/chat-settings", map[string]any{"selection": "openai:o3", "thinking": "high"}); code != http.StatusOK {
		t.Fatalf("the pick answered %d", code)
	}
	r, run, fin := turn(map[string]any{"text": "think"})
	if r.Model != "o3" || r.JSON()["reasoning_effort"] != "high" || run.Execution == nil || run.Execution.Selection != "openai:o3" ||
		run.Execution.Thinking != gh.ThinkingHigh || fin.Thinking != gh.ThinkingHigh || fin.Model != "o3" {
		t.Fatalf("the chat's choice: request to %s effort %v, execution %+v, run.finished %+v", r.Model, r.JSON()["reasoning_effort"], run.Execution, fin)
	}
	// The input's own selection and level win.
	r, run, _ = turn(map[string]any{"text": "quick", "selection": "openai:test-model", "thinking": "low"})
	if r.Model != "test-model" || run.Execution.Thinking != "" || !strings.Contains(run.Execution.Note, "thinking low not applied") {
		t.Fatalf("the input's own choice: request to %s, execution %+v", r.Model, run.Execution)
	}
	r, _, _ = turn(map[string]any{"text": "own level", "thinking": "medium"})
	if r.Model != "o3" || r.JSON()["reasoning_effort"] != "medium" {
		t.Fatalf("the input's own level with the chat's model: %s %v", r.Model, r.JSON()["reasoning_effort"])
	}
	// A model that takes no level: answered, and the run line says why.
	call("PUT", "/v1/sessions/w1/chat-settings", map[string]any{"selection": "openai:gpt-4o"})
	r, _, fin = turn(map[string]any{"text": "no thinking here"})
	if r.Model != "gpt-4o" || r.JSON()["reasoning_effort"] != nil || fin.Thinking != "" || !strings.Contains(fin.Note, "thinking high not applied") {
		t.Fatalf("gpt-4o: request %s effort %v, run.finished %+v", r.Model, r.JSON()["reasoning_effort"], fin)
	}
	// A selection stored before the list lost it (written past the API's
	// check) is not used: the configured model answers.
	sel := "openai:gpt-5"
	if _, err := e.Store.PutChatSettings(e.Ctx, store.ChatSettingsChange{ChatKey: store.SessionChat("w1"), Selection: &sel, By: "old"}); err != nil {
		t.Fatal(err)
	}
	if r, _, _ = turn(map[string]any{"text": "after the list changed"}); r.Model != "test-model" {
		t.Fatalf("an unlisted stored selection was used: %s", r.Model)
	}
}
