package shell_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/gatehouse/gatehouse/tools"
)

// args and runTool are copies of the helpers in package tools' tests.

func args(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func runTool(t *testing.T, tool tools.Tool, workspace string, a any) tools.Result {
	t.Helper()
	res, err := tool.Run(context.Background(), tools.Call{ID: "c", Arguments: args(t, a), IdempotencyKey: "k", Workspace: workspace})
	if err != nil {
		t.Fatalf("%s: %v", tool.Name(), err)
	}
	return res
}
