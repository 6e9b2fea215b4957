package incidents_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/effectjournal"
	"github.com/gatehouse/gatehouse/httpapi"
	"github.com/gatehouse/gatehouse/incidents"
	"github.com/gatehouse/gatehouse/internal/testing/stacktest"
	"github.com/gatehouse/gatehouse/models/modeltest"
	"github.com/gatehouse/gatehouse/tools"
	"github.com/gatehouse/gatehouse/toolworker"
)

// hangingTool runs until released, ignoring its context as a stuck
// client library would; runs counts its starts.
func hangingTool(name string, tier tools.Tier, runs *atomic.Int32, release <-chan struct{}) tools.Tool {
	return toolworker.FuncTool{ToolName: name, Desc: "Sends something slowly.", ToolTier: tier,
		Fn: func(ctx context.Context, c tools.Call) (string, error) { runs.Add(1); <-release; return "sent", nil }}
}

func stack(t *testing.T, tool tools.Tool, release chan struct{}) *stacktest.Env {
	t.Helper()
	e := stacktest.NewEnv(t, nil, stacktest.EnvOptions{HTTP: &httpapi.Config{}, Tools: []tools.Tool{tool},
		StuckAfter: 2500 * time.Millisecond, LeaseTTL: 3 * time.Second})
	// Before the stack's own cleanups (they run after, last in first out):
	// the stuck tool lets go so the workers can stop.
	t.Cleanup(func() { close(release) })
	return e
}

func say(t *testing.T, e *stacktest.Env, session, text string) {
	t.Helper()
	post(t, e, "/v1/sessions/"+session+"/input", map[string]string{"text": text}, 202)
}

func post(t *testing.T, e *stacktest.Env, path string, body any, want int) map[string]any {
	t.Helper()
	raw, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", "http://"+e.Addr+path, bytes.NewReader(raw))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Gatehouse-Source", "web")
	res, err := http.DefaultClient.Do(e.Authorize(req))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out map[string]any
	json.NewDecoder(res.Body).Decode(&out)
	if res.StatusCode != want {
		t.Fatalf("POST %s: %d %v, want %d", path, res.StatusCode, out, want)
	}
	return out
}

func decide(t *testing.T, e *stacktest.Env, gateID, decision, answer string) {
	t.Helper()
	post(t, e, "/v1/gates/"+gateID+"/decision", map[string]string{"decision": decision, "answer": answer}, 200)
}

func openIncident(t *testing.T, e *stacktest.Env) gh.Gate {
	t.Helper()
	var g []gh.Gate
	e.Eventually("an open incident", func() bool {
		g, _ = e.Store.GatesOfKind(e.Ctx, gh.GateKindIncident, gh.GatePending, 10)
		return len(g) == 1
	})
	return g[0]
}

func events(t *testing.T, e *stacktest.Env, session string) []gh.Event {
	t.Helper()
	evs, err := e.Kernel.Events(e.Ctx, session, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

func notices(t *testing.T, e *stacktest.Env, session, code string) []string {
	var out []string
	for _, ev := range events(t, e, session) {
		var n gh.Notice
		if ev.Kind == gh.KindNotice && json.Unmarshal(ev.Payload, &n) == nil && n.Code == code {
			out = append(out, n.Text)
		}
	}
	return out
}

func toolReply(name string) modeltest.Reply {
	return modeltest.Reply{ToolCalls: []modeltest.ToolCall{{ID: "call_" + name, Name: name, Arguments: `{}`}}}
}

// A danger tool that hangs after it started: one incident card, however
// many sweeps; Diagnose answers while the run is still stuck and leaves
// a card to close it; Close ends the turn, reports the effect's outcome
// unknown, and nothing runs it again — not the stuck worker, fenced
// out, nor the next turn.
func TestAStuckEffectIsDiagnosedWhileStuckThenClosedAsUnknown(t *testing.T) {
	var runs atomic.Int32
	release := make(chan struct{})
	e := stack(t, hangingTool("send_slow", tools.Danger, &runs, release), release)
	e.Model.Push(toolReply("send_slow"), modeltest.Reply{Text: "It is waiting for send_slow, which has not answered."})
	say(t, e, "w1", "send it")
	var approval []gh.Gate
	e.Eventually("the approval card", func() bool {
		approval, _ = e.Store.ListGates(e.Ctx, "w1", gh.GatePending, 10)
		return len(approval) == 1
	})
	decide(t, e, approval[0].ID, "approve", "")
	e.Eventually("the tool running", func() bool { return runs.Load() == 1 })

	inc := openIncident(t, e)
	if inc.Kind != gh.GateKindIncident || !strings.Contains(inc.Question, "no progress") || !strings.Contains(inc.Question, "`send_slow`") ||
		len(inc.Options) != 2 || inc.Options[0] != gh.IncidentClose || inc.Options[1] != gh.IncidentDiagnose {
		t.Fatalf("the incident card: %+v", inc)
	}
	// More sweeps open nothing more.
	time.Sleep(300 * time.Millisecond)
	if all, _ := e.Store.GatesOfKind(e.Ctx, gh.GateKindIncident, "", 10); len(all) != 1 {
		t.Fatalf("%d incidents for one stuck run", len(all))
	}
	var opened int
	for _, ev := range events(t, e, "w1") {
		var o gh.GateOpened
		if ev.Kind == gh.KindGateOpened && json.Unmarshal(ev.Payload, &o) == nil && o.Kind == gh.GateKindIncident {
			opened++
		}
	}
	if opened != 1 {
		t.Fatalf("%d incident cards in the log", opened)
	}

	decide(t, e, inc.ID, "answer", gh.IncidentDiagnose)
	e.Eventually("the diagnosis", func() bool { return len(notices(t, e, "w1", incidents.NoticeDiagnosis)) == 1 })
	if d := notices(t, e, "w1", incidents.NoticeDiagnosis)[0]; !strings.Contains(d, "waiting for send_slow") {
		t.Fatalf("the diagnosis says %q", d)
	}
	r, _, _ := e.Kernel.LatestRun(e.Ctx, "w1")
	if r.State != gh.RunRunning {
		t.Fatalf("the run is %s after the diagnosis; it should still be stuck", r.State)
	}
	reqs := e.Model.Requests()
	if !strings.Contains(string(reqs[len(reqs)-1].Body), "send_slow") {
		t.Fatal("the diagnosis did not show the model the stuck step")
	}

	next := openIncident(t, e)
	if next.ID == inc.ID || !strings.Contains(next.Question, "still stuck") {
		t.Fatalf("the card after the diagnosis: %+v", next)
	}
	decide(t, e, next.ID, "answer", gh.IncidentClose)
	r, _ = e.Store.GetRun(e.Ctx, r.ID)
	if r.State != gh.RunCancelled || !strings.Contains(r.Reason, "closed by") {
		t.Fatalf("the run after Close: %+v", r)
	}
	var result gh.ToolResult
	for _, ev := range events(t, e, "w1") {
		if ev.Kind == gh.KindToolResult {
			json.Unmarshal(ev.Payload, &result)
		}
	}
	if !result.IsError || !strings.Contains(result.Content, "Outcome unknown") {
		t.Fatalf("the stuck call's result: %+v", result)
	}
	if _, ok, _ := e.Kernel.EventByKey(e.Ctx, "w1", effectjournal.Key(result.ToolCallID, effectjournal.Finished)); !ok {
		t.Fatal("no finished receipt: a later turn could run the effect again")
	}
	closed := notices(t, e, "w1", incidents.NoticeClosed)
	if len(closed) != 1 || !strings.Contains(closed[0], "can't tell whether send_slow ran") {
		t.Fatalf("the closing notice: %q", closed)
	}

	// The stuck worker finishes late: fenced out, it adds nothing.
	release <- struct{}{}
	time.Sleep(300 * time.Millisecond)
	results := 0
	for _, ev := range events(t, e, "w1") {
		if ev.Kind == gh.KindToolResult {
			results++
		}
	}
	if results != 1 {
		t.Fatalf("%d results for the one call", results)
	}
	// The session goes on, and the effect is not run again.
	say(t, e, "w1", "anything else?")
	e.Eventually("the next turn's answer", func() bool {
		r, ok, _ := e.Kernel.LatestRun(e.Ctx, "w1")
		return ok && r.ID != next.RunID && r.State == gh.RunDone
	})
	if n := runs.Load(); n != 1 {
		t.Fatalf("the effect ran %d times", n)
	}
	if list, err := incidents.List(e.Ctx, e.Store, false, 10); err != nil || len(list) != 2 || list[0].State != incidents.StateClosed || list[1].State != incidents.StateDiagnosed {
		t.Fatalf("incidents listed: %+v %v", list, err)
	}
}

// A stuck safe tool that comes unstuck: its card is retired by the
// sweeper, saying why, and nobody can close the turn that finished.
func TestACardWhoseTurnMovedOnIsRetired(t *testing.T) {
	var runs atomic.Int32
	release := make(chan struct{}, 1)
	lookup := toolworker.FuncTool{ToolName: "slow_lookup", Desc: "Looks something up slowly.", ToolTier: tools.Safe,
		Fn: func(ctx context.Context, c tools.Call) (string, error) {
			runs.Add(1)
			select {
			case <-release:
				return "found", nil
			case <-ctx.Done():
				return "", ctx.Err()
			}
		}}
	e := stack(t, lookup, release)
	e.Model.Push(toolReply("slow_lookup"), modeltest.Reply{Text: "Found it."})
	say(t, e, "w2", "look it up")
	inc := openIncident(t, e)
	release <- struct{}{}
	e.Eventually("the card retired", func() bool {
		g, _ := e.Store.GetGate(e.Ctx, inc.ID)
		return g.State == gh.GateExpired && g.Committed
	})
	g, _ := e.Store.GetGate(e.Ctx, inc.ID)
	if g.Reason != "the turn ended" && g.Reason != "the turn moved on" {
		t.Fatalf("retired because %q", g.Reason)
	}
	r, _, _ := e.Kernel.LatestRun(e.Ctx, "w2")
	if r.State != gh.RunDone {
		t.Fatalf("the turn that came unstuck is %s", r.State)
	}
	post(t, e, "/v1/gates/"+inc.ID+"/decision", map[string]string{"decision": "answer", "answer": gh.IncidentClose}, 200)
	if r, _ = e.Store.GetRun(e.Ctx, r.ID); r.State != gh.RunDone {
		t.Fatalf("a press on the retired card changed the run: %s", r.State)
	}
}

// Waiting for a person is not being stuck: a card pending for longer
// than the stuck interval opens no incident.
func TestWaitingForApprovalIsNotStuck(t *testing.T) {
	var runs atomic.Int32
	release := make(chan struct{})
	e := stack(t, hangingTool("send_slow", tools.Danger, &runs, release), release)
	e.Model.Push(toolReply("send_slow"))
	say(t, e, "w3", "send it")
	e.Eventually("the approval card", func() bool {
		g, _ := e.Store.ListGates(e.Ctx, "w3", gh.GatePending, 10)
		return len(g) == 1
	})
	time.Sleep(4 * time.Second)
	if g, _ := e.Store.GatesOfKind(e.Ctx, gh.GateKindIncident, "", 10); len(g) != 0 {
		t.Fatalf("an incident for a turn waiting for approval: %+v", g)
	}
}
