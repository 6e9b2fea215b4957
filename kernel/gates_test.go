package kernel_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/kernel"
	"github.com/gatehouse/gatehouse/store/sqlite"
)

// A gate row does not say which of its call's gates it is: GateOpened
// finds its gate.opened (card fields included) among the call's.
func TestGateOpenedFindsTheGatesEvent(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(t.TempDir(), "k.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	k := kernel.New(st, kernel.Config{})
	if _, _, err := k.CreateSession(ctx, gh.Session{ID: "s1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := k.EdgeCommit(ctx, kernel.EdgeInput{SessionID: "s1", Event: gh.NewEvent{Kind: gh.KindUserMessage, Payload: json.RawMessage(`{"text":"go"}`)}}); err != nil {
		t.Fatal(err)
	}
	l, ok, err := k.Claim(ctx, "w")
	if err != nil || !ok {
		t.Fatalf("claim: %v %v", ok, err)
	}
	// A clarifying question first, then the approval.
	for n, o := range []gh.GateOpened{
		{GateID: "g_q", ToolCallID: "c1", Tool: "email_send", Kind: gh.GateKindClarify, Question: "Which Sara?"},
		{GateID: "g_a", ToolCallID: "c1", Tool: "email_send", Kind: gh.GateKindApproval, Fields: []gh.CardField{{Label: "To", Value: "sara@example.com"}}},
	} {
		raw, _ := json.Marshal(o)
		if _, err := k.Commit(ctx, l, gh.NewEvent{Kind: gh.KindGateOpened, Payload: raw, Key: gh.GateOpenedKey("c1", n+1)}); err != nil {
			t.Fatal(err)
		}
	}
	o, ok, err := k.GateOpened(ctx, gh.Gate{ID: "g_a", SessionID: "s1", ToolCallID: "c1"})
	if err != nil || !ok || o.Kind != gh.GateKindApproval || len(o.Fields) != 1 || o.Fields[0].Value != "sara@example.com" {
		t.Fatalf("%+v %v %v", o, ok, err)
	}
	if o, ok, err := k.GateOpened(ctx, gh.Gate{ID: "g_q", SessionID: "s1", ToolCallID: "c1"}); err != nil || !ok || o.Question != "Which Sara?" {
		t.Fatalf("%+v %v %v", o, ok, err)
	}
	if _, ok, err := k.GateOpened(ctx, gh.Gate{ID: "g_none", SessionID: "s1", ToolCallID: "c1"}); err != nil || ok {
		t.Fatalf("a gate with no event: %v %v", ok, err)
	}
}
