package httpapi_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/httpapi"
	"github.com/gatehouse/gatehouse/internal/backoff"
	"github.com/gatehouse/gatehouse/tools"
	"github.com/gatehouse/gatehouse/tools/mcp"
	"github.com/gatehouse/gatehouse/toolworker"
)

// GET /v1/tools lists every tool offered to the agent — a built-in and a
// real MCP server's over streamable HTTP on loopback — with server, tier,
// isolation and whether it can run now; when the MCP server goes away its
// tool says so, with the error. Behind the API token.
func TestToolListShowsServersTiersAndAvailability(t *testing.T) {
	srv := sdk.NewServer(&sdk.Implementation{Name: "crm", Version: "1"}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "lookup", Description: "Find a customer."},
		func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "found"}}}, nil, nil
		})
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	remote, err := mcp.Connect(ctx, mcp.Config{ReconnectWait: time.Millisecond, Reconnect: backoff.Policy{Floor: time.Hour},
		Servers: []mcp.MCPServer{{Name: "crm", URL: hs.URL, Tier: map[string]tools.Tier{"lookup": tools.Safe}}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { remote.Close() })
	reg := tools.NewRegistry(append([]tools.Tool{toolworker.FuncTool{ToolName: "send", ToolTier: tools.Danger}}, remote...)...)

	type list struct {
		Tools []tools.Listing `json:"tools"`
	}
	run(t, httpapi.Config{Tools: reg}, func(t *testing.T, e *env) {
		e.do("GET", "/v1/tools", nil, "Authorization", "").expect(t, 401, gh.CodeUnauthorized)
		var got list
		e.do("GET", "/v1/tools", nil).expect(t, 200, "").decode(t, &got)
		want := []tools.Listing{
			{Name: "crm__lookup", Server: "crm", Tier: tools.Safe, Approval: tools.ApprovalNever, Isolation: mcp.IsolationRemote, Available: true},
			{Name: "send", Server: "builtin", Tier: tools.Danger, Approval: tools.ApprovalAlways, Isolation: "none", Available: true},
		}
		if len(got.Tools) != 2 || got.Tools[0] != want[0] || got.Tools[1] != want[1] {
			t.Fatalf("GET /v1/tools = %+v, want %+v", got.Tools, want)
		}
	})

	// The MCP server goes away; the next call finds it gone.
	hs.CloseClientConnections()
	hs.Config.SetKeepAlivesEnabled(false)
	hs.Listener.Close()
	lookup, _ := reg.Get("crm__lookup")
	deadline := time.Now().Add(30 * time.Second)
	for lookup.(*mcp.Tool).Available() == nil && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	run(t, httpapi.Config{Tools: reg}, func(t *testing.T, e *env) {
		var got list
		e.do("GET", "/v1/tools", nil).expect(t, 200, "").decode(t, &got)
		if len(got.Tools) != 2 || got.Tools[0].Available || got.Tools[0].Error == "" || !got.Tools[1].Available {
			t.Fatalf("after the MCP server went away: %+v", got.Tools)
		}
	})
}
