package supervisor

import (
	"context"
	"encoding/json"
	"sort"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/models"
)

// Tools runs the tool calls of an assistant message. The supervisor commits
// each result under the attempt's lease, keyed by the call's id, so a call
// gets one result however often an attempt is retried.
type Tools interface {
	// Specs lists the tools the model may call.
	Specs() []models.ToolSpec
	// Run executes one call. A failure is a result with IsError set, not
	// an error: the model reads it and carries on.
	Run(ctx context.Context, sessionID string, call gh.ToolCall) gh.ToolResult
}

// Func is one tool backed by a Go function.
type Func struct {
	Spec models.ToolSpec
	Fn   func(ctx context.Context, args json.RawMessage) (string, error)
}

// FuncTools is a set of tools backed by Go functions. Unknown tools get an
// error result naming the tools that exist.
type FuncTools map[string]Func

// Specs implements Tools.
func (f FuncTools) Specs() []models.ToolSpec {
	out := make([]models.ToolSpec, 0, len(f))
	for _, t := range f {
		out = append(out, t.Spec)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Run implements Tools.
func (f FuncTools) Run(ctx context.Context, sessionID string, call gh.ToolCall) gh.ToolResult {
	start := time.Now()
	res := gh.ToolResult{ToolCallID: call.ID, Name: call.Name}
	t, ok := f[call.Name]
	if !ok {
		names := make([]string, 0, len(f))
		for n := range f {
			names = append(names, n)
		}
		sort.Strings(names)
		res.Content, res.IsError = "unknown tool "+call.Name+"; available: "+joinOrNone(names), true
		return res
	}
	out, err := t.Fn(ctx, call.Arguments)
	res.DurationMs = time.Since(start).Milliseconds()
	if err != nil {
		res.Content, res.IsError = err.Error(), true
		return res
	}
	res.Content = out
	return res
}

func joinOrNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	out := s[0]
	for _, x := range s[1:] {
		out += ", " + x
	}
	return out
}
