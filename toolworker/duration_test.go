package toolworker_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/tools"
	"github.com/gatehouse/gatehouse/tools/mcp"
	"github.com/gatehouse/gatehouse/toolworker"
)

// slowMCP serves a real go-sdk MCP server on loopback whose two tools,
// lookup and launch, take d before they answer.
func slowMCP(t *testing.T, d time.Duration) mcp.Tools {
	t.Helper()
	srv := sdk.NewServer(&sdk.Implementation{Name: "slow", Version: "1"}, nil)
	for _, name := range []string{"lookup", "launch"} {
		sdk.AddTool(srv, &sdk.Tool{Name: name, Description: "Takes a while."},
			func(ctx context.Context, _ *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
				select {
				case <-time.After(d):
				case <-ctx.Done():
					return nil, nil, ctx.Err()
				}
				return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "done"}}}, nil, nil
			})
	}
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ts, err := mcp.Connect(ctx, mcp.Config{Servers: []mcp.MCPServer{{Name: "slow", URL: hs.URL, Tier: map[string]tools.Tier{"lookup": tools.Safe}}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ts.Close() })
	return ts
}

// resultEvent is the committed tool.result of a call, as GET
// /v1/sessions/{id}/events shows it.
func resultEvent(t *testing.T, e *env, session, callID string) gh.ToolResult {
	t.Helper()
	evs, err := e.k.Events(e.ctx, session, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if ev.Kind != gh.KindToolResult {
			continue
		}
		var r gh.ToolResult
		if err := json.Unmarshal(ev.Payload, &r); err != nil {
			t.Fatal(err)
		}
		if r.ToolCallID == callID {
			return r
		}
	}
	t.Fatalf("no tool.result for %s in the log", callID)
	return gh.ToolResult{}
}

// A tool call's recorded duration is how long the tool ran, whichever path
// it took: a safe MCP tool that runs at once (it used to record 0), a
// gated MCP tool run after approval, and a safe built-in tool.
func TestToolResultDurationIsTheRun(t *testing.T) {
	const took = 300 * time.Millisecond
	builtin := toolworker.FuncTool{ToolName: "ponder", ToolTier: tools.Safe,
		Fn: func(ctx context.Context, _ tools.Call) (string, error) { time.Sleep(took); return "pondered", nil }}
	e := setup(t, nil, append([]tools.Tool{builtin}, slowMCP(t, took)...)...)
	l := e.lease("s1")

	out := e.batch(l, call("c1", "slow__lookup", `{}`), call("c2", "ponder", `{}`))
	if out.Paused || len(out.Results) != 2 {
		t.Fatalf("safe calls: %+v", out)
	}
	for _, id := range []string{"c1", "c2"} {
		r := resultEvent(t, e, "s1", id)
		if r.IsError || r.DurationMs < took.Milliseconds() {
			t.Errorf("%s (%s): durationMs %d, want at least %d (the tool took that long): %+v", id, r.Name, r.DurationMs, took.Milliseconds(), r)
		}
	}

	// The gated one: approved, then run through the effect journal.
	if out := e.batch(l, call("c3", "slow__launch", `{}`)); !out.Paused {
		t.Fatalf("a danger MCP tool ran without approval: %+v", out)
	}
	l = e.decide(l, gh.GateApproved, "")
	e.batch(l, call("c3", "slow__launch", `{}`))
	if r := resultEvent(t, e, "s1", "c3"); r.IsError || r.DurationMs < took.Milliseconds() {
		t.Errorf("approved MCP call: durationMs %d, want at least %d: %+v", r.DurationMs, took.Milliseconds(), r)
	}
}
