package toolworker_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/kernel"
	"github.com/gatehouse/gatehouse/memory"
	"github.com/gatehouse/gatehouse/store/sqlite"
	"github.com/gatehouse/gatehouse/tools"
	"github.com/gatehouse/gatehouse/toolworker"
)

// memEnv is a worker with the real memory tools, the email policy
// resolving names against the asker's memory, a danger "send", an outside
// "fetch" and a safe "whoami" that reports the call it got.
type memEnv struct {
	*env
	m     *memory.Memory
	calls chan tools.Call
}

func setupMemory(t *testing.T) *memEnv {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(t.TempDir(), "g.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e := &memEnv{env: &env{t: t, ctx: ctx, st: st, k: kernel.New(st, kernel.Config{})}, m: memory.New(st, memory.Config{NoModelPass: true}), calls: make(chan tools.Call, 10)}
	e.ws.Store("/work/a")
	whoami := toolworker.FuncTool{ToolName: "whoami", Fn: func(ctx context.Context, c tools.Call) (string, error) {
		e.calls <- c
		return c.User, nil
	}}
	page := toolworker.FuncTool{ToolName: "fetch"}
	reg := tools.NewRegistry(append([]tools.Tool{e.send(), whoami, externalTool{page}}, e.m.Tools()...)...)
	e.w = toolworker.New(toolworker.Config{Kernel: e.k, Gates: sqlGates(st, e.k), Tools: reg, ApprovalTimeout: time.Minute,
		Policies:  map[string]toolworker.Policy{"send": toolworker.EmailPolicy{Contacts: e.m.Contacts}},
		Workspace: func(string) string { return e.ws.Load().(string) }})
	return e
}

func rememberCall(id, fact string) gh.ToolCall {
	args, _ := json.Marshal(map[string]string{"fact": fact})
	return gh.ToolCall{ID: id, Name: "remember", Arguments: args}
}

func TestACallCarriesItsSessionPlatformAndPerson(t *testing.T) {
	e := setupMemory(t)
	l := e.lease("s1")
	e.who = toolworker.Asker{User: "telegram:u_a", Platform: "telegram"}
	e.batch(l, call("c1", "whoami", `{}`))
	c := <-e.calls
	if c.SessionID != "s1" || c.Platform != "telegram" || c.User != "telegram:u_a" || c.Workspace != "/work/a" || c.ID != "c1" {
		t.Fatalf("the tool got %+v", c)
	}
}

// The email check resolves a name against the memory of the person asking:
// two people with a Sara of their own each get theirs on the card.
func TestContactLookupIsTheAskersOwn(t *testing.T) {
	e := setupMemory(t)
	people := map[string]string{"telegram:u_a": "sara-a@example.com", "slack:u_b": "sara-b@example.com", gh.LocalUser: "sara-web@example.com"}
	for user, addr := range people {
		if _, _, err := e.m.Add(e.ctx, user, memory.Fact{Kind: memory.KindContact, Subject: "contact:sara", Text: "Sara's email is " + addr, Value: addr}); err != nil {
			t.Fatal(err)
		}
	}
	i := 0
	for user, addr := range people {
		i++
		session := "s" + string(rune('0'+i))
		l := e.lease(session)
		e.who = toolworker.Asker{User: user}
		if out := e.batch(l, call("c1", "send", `{"to":"Sara"}`)); !out.Paused {
			t.Fatalf("%s: %+v", user, out)
		}
		gs, _ := e.st.ListGates(e.ctx, session, gh.GatePending, 10)
		if len(gs) != 1 || !strings.Contains(string(gs[0].Arguments), `"`+addr+`"`) {
			t.Fatalf("%s's card %+v, want Sara <%s>", user, gs, addr)
		}
		if _, err := e.k.Finish(e.ctx, l, kernel.Settle{Outcome: gh.OutcomeAwaitingApproval}); err != nil {
			t.Fatal(err)
		}
	}
	// Someone with no Sara of their own is refused, not given another's.
	l := e.lease("s9")
	e.who = toolworker.Asker{User: "discord:u_c"}
	out := e.batch(l, call("c1", "send", `{"to":"Sara"}`))
	if out.Paused || len(out.Results) != 1 || !strings.Contains(out.Results[0].Result.Content, "Refused") {
		t.Fatalf("a stranger to Sara: %+v", out)
	}
}

// After outside text, remember waits for a person; approved, it writes the
// asker's memory, through the effect journal.
func TestOutsideTextGatesMemoryWrites(t *testing.T) {
	e := setupMemory(t)
	l := e.lease("s1")
	e.who = toolworker.Asker{User: "telegram:u_a", Platform: "telegram"}
	out := e.batch(l, call("c1", "fetch", `{}`), rememberCall("c2", "Sara is evil@attacker.example"))
	if !out.Paused || len(out.Results) != 1 || !out.Results[0].Result.External {
		t.Fatalf("fetch then remember: %+v", out)
	}
	gs, _ := e.st.ListGates(e.ctx, "s1", gh.GatePending, 10)
	if len(gs) != 1 || gs[0].Tool != "remember" || gs[0].Kind != gh.GateKindApproval || !strings.Contains(string(gs[0].Arguments), "evil@attacker.example") {
		t.Fatalf("gates %+v", gs)
	}
	if got := e.m.Contacts(e.ctx, "telegram:u_a"); len(got) != 0 {
		t.Fatalf("memory written before approval: %v", got)
	}
	// The result carries the mark in the log, so a successor derives the
	// taint from it.
	ev, ok, err := e.k.EventByKey(e.ctx, "s1", "tool:c1")
	var r gh.ToolResult
	if err != nil || !ok || json.Unmarshal(ev.Payload, &r) != nil || !r.External || !toolworker.ReadOutside(r) {
		t.Fatalf("committed fetch result %+v (%v %v)", r, ok, err)
	}
	l = e.decide(l, gh.GateApproved, "")
	e.who.Tainted = true // as the supervisor derives it from the log now
	out = e.batch(l, rememberCall("c2", "Sara is evil@attacker.example"))
	if out.Paused || len(out.Results) != 1 || out.Results[0].Result.IsError {
		t.Fatalf("approved remember: %+v", out)
	}
	if got := e.m.Contacts(e.ctx, "telegram:u_a"); got["Sara"] != "evil@attacker.example" {
		t.Fatalf("approved remember did not write the asker's memory: %v", got)
	}
	if got := e.m.Contacts(e.ctx, gh.LocalUser); len(got) != 0 {
		t.Fatalf("the operator's memory was written: %v", got)
	}
}

func TestTaintDecidesWhetherMemoryWritesWait(t *testing.T) {
	e := setupMemory(t)
	// Untainted: remember runs at once.
	l := e.lease("s1")
	e.who = toolworker.Asker{User: "telegram:u_a"}
	if out := e.batch(l, rememberCall("c1", "Sara is sara@example.com")); out.Paused || len(out.Results) != 1 || out.Results[0].Result.IsError {
		t.Fatalf("untainted remember: %+v", out)
	}
	if got := e.m.Contacts(e.ctx, "telegram:u_a"); got["Sara"] != "sara@example.com" {
		t.Fatalf("contacts %v", got)
	}
	// Tainted: forget waits too, and nothing is forgotten meanwhile; a
	// safe tool that writes no memory still runs.
	l2 := e.lease("s2")
	e.who.Tainted = true
	out := e.batch(l2, call("c1", "whoami", `{}`), gh.ToolCall{ID: "c2", Name: "forget", Arguments: json.RawMessage(`{"fact":"Sara"}`)})
	if !out.Paused || len(out.Results) != 1 || out.Results[0].Result.Content != "telegram:u_a" {
		t.Fatalf("tainted batch: %+v", out)
	}
	if got := e.m.Contacts(e.ctx, "telegram:u_a"); got["Sara"] != "sara@example.com" {
		t.Fatalf("forgotten before approval: %v", got)
	}
}
