package toolworker

import (
	"context"
	"encoding/json"

	"github.com/gatehouse/gatehouse/tools"
)

// FuncTool is a tool backed by a Go function: for embedding programs, demos
// and tests. A returned error becomes an error result the model reads.
type FuncTool struct {
	ToolName, Desc string
	ArgSchema      json.RawMessage
	ToolTier       tools.Tier
	Fn             func(ctx context.Context, call tools.Call) (string, error)
}

// Name implements tools.Tool.
func (f FuncTool) Name() string { return f.ToolName }

// Description implements tools.Tool.
func (f FuncTool) Description() string { return f.Desc }

// Schema implements tools.Tool.
func (f FuncTool) Schema() json.RawMessage {
	if len(f.ArgSchema) == 0 {
		return json.RawMessage(`{"type":"object"}`)
	}
	return f.ArgSchema
}

// Tier implements tools.Tool.
func (f FuncTool) Tier() tools.Tier {
	if f.ToolTier == "" {
		return tools.Safe
	}
	return f.ToolTier
}

// Runnable implements tools.Tool.
func (f FuncTool) Runnable() error { return nil }

// Idempotent implements tools.Tool.
func (f FuncTool) Idempotent() bool { return false }

// Run implements tools.Tool.
func (f FuncTool) Run(ctx context.Context, call tools.Call) (tools.Result, error) {
	out, err := f.Fn(ctx, call)
	if err != nil {
		if ctx.Err() != nil {
			return tools.Result{}, ctx.Err()
		}
		return tools.Result{Content: err.Error(), IsError: true}, nil
	}
	return tools.Result{Content: out}, nil
}
