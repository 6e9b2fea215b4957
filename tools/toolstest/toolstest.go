// Package toolstest holds what the tests of the built-in tools share:
// encoding a call's arguments and running a call that must not fail.
package toolstest

import (
	"context"
	"encoding/json"
	"testing"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/tools"
)

// Args encodes v as a call's JSON arguments.
func Args(t testing.TB, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Run runs one call of tool with arguments a in workspace, and fails the
// test when Run returns an error (a Result with IsError is returned).
func Run(t testing.TB, tool tools.Tool, workspace string, a any) tools.Result {
	t.Helper()
	res, err := tool.Run(context.Background(), tools.Call{ToolCall: gh.ToolCall{ID: "c", Arguments: Args(t, a)}, IdempotencyKey: "k", Workspace: workspace})
	if err != nil {
		t.Fatalf("%s: %v", tool.Name(), err)
	}
	return res
}
