package memory

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/gatehouse/gatehouse/tools"
)

// listTool is memory_list: what is kept about the person asking, one
// "- fact" line each, so "what do you remember?" is answered from the
// facts themselves rather than from what recall found relevant. It reads
// only the asker's memory and changes nothing, so it is safe.
type listTool struct{ m *Memory }

func (listTool) Name() string { return "memory_list" }

func (listTool) Description() string {
	return "List everything remembered about the user (their facts, newest first), e.g. when asked what you remember."
}

func (listTool) Schema() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`)
}

func (listTool) Tier() tools.Tier { return tools.Safe }
func (listTool) Runnable() error  { return nil }
func (listTool) Idempotent() bool { return true }

func (t listTool) Run(ctx context.Context, call tools.Call) (tools.Result, error) {
	if checkUser(call.User) != nil {
		return tools.Result{Content: "this call names no person whose memory it could read", IsError: true}, nil
	}
	facts, err := t.m.List(ctx, call.User)
	if err != nil {
		return tools.Result{Content: err.Error(), IsError: true}, nil
	}
	if len(facts) == 0 {
		return tools.Result{Content: "Nothing is remembered about this person yet."}, nil
	}
	var b strings.Builder
	for _, f := range facts {
		b.WriteString("- " + strings.Join(strings.Fields(f.Text), " ") + "\n")
	}
	return tools.Result{Content: strings.TrimSuffix(b.String(), "\n")}, nil
}
