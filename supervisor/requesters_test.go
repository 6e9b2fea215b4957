package supervisor_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/internal/testing/stacktest"
	"github.com/gatehouse/gatehouse/kernel"
	"github.com/gatehouse/gatehouse/models/modeltest"
	"github.com/gatehouse/gatehouse/tools"
	"github.com/gatehouse/gatehouse/toolworker"
)

// A gate opened by a turn that answers two people records both as its
// requesters (each may decide it on a chat platform); a turn answering one
// records that one.
func TestGateRecordsEveryRequesterOfTheTurn(t *testing.T) {
	started, release := make(chan struct{}, 1), make(chan struct{})
	wait := toolworker.FuncTool{ToolName: "wait_a_bit", Fn: func(ctx context.Context, _ tools.Call) (string, error) {
		started <- struct{}{}
		<-release
		return "waited", nil
	}}
	post := toolworker.FuncTool{ToolName: "post_note", ToolTier: tools.Danger, Fn: func(context.Context, tools.Call) (string, error) { return "posted", nil }}
	e := stacktest.NewEnv(t, nil, stacktest.EnvOptions{Tools: []tools.Tool{wait, post}})
	if _, _, err := e.Kernel.CreateSession(e.Ctx, gh.Session{ID: "g1"}); err != nil {
		t.Fatal(err)
	}
	input := func(user, text string, d gh.Delivery) {
		t.Helper()
		p, _ := json.Marshal(gh.UserMessage{Text: text, Delivery: d, Source: "telegram", User: user})
		if _, err := e.Kernel.EdgeCommit(e.Ctx, kernel.EdgeInput{SessionID: "g1", Event: gh.NewEvent{Kind: gh.KindUserMessage, Payload: p}}); err != nil {
			t.Fatal(err)
		}
	}
	call := func(name, args string) modeltest.Reply {
		return modeltest.Reply{ToolCalls: []modeltest.ToolCall{{ID: "call_" + name, Name: name, Arguments: args}}}
	}
	e.Model.Push(call("wait_a_bit", `{}`), call("post_note", `{"text":"x"}`))
	input("u_a", "post the plan", gh.DeliveryQueue)
	<-started
	input("u_b", "and add my part", gh.DeliveryGuide) // joins the running turn
	close(release)
	var opened gh.GateOpened
	e.Eventually("the gate", func() bool {
		evs, _ := e.Kernel.Events(e.Ctx, "g1", 0, 1000)
		for _, ev := range evs {
			if ev.Kind == gh.KindGateOpened {
				return json.Unmarshal(ev.Payload, &opened) == nil
			}
		}
		return false
	})
	if want := []string{"telegram:u_a", "telegram:u_b"}; !slices.Equal(opened.Requesters, want) {
		t.Fatalf("requesters %q, want %q", opened.Requesters, want)
	}
}
