// Package mcptest builds the MCP server the bridge's tests talk to, over
// streamable HTTP and over stdio: a real go-sdk server with two tools,
// add(a, b) and delete_all.
package mcptest

import (
	"context"
	"fmt"
	"strconv"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// AddArgs are the arguments of add.
type AddArgs struct {
	A float64 `json:"a" jsonschema:"the first number"`
	B float64 `json:"b" jsonschema:"the second number"`
}

// Calls records what the server was asked to do.
type Calls struct {
	mu        sync.Mutex
	DeleteAll int
	Keys      []string // idempotency keys seen in _meta
}

// Snapshot returns a copy safe to read.
func (c *Calls) Snapshot() (deleteAll int, keys []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.DeleteAll, append([]string(nil), c.Keys...)
}

// NewServer returns the test server; calls (may be nil) records calls.
func NewServer(calls *Calls) *sdk.Server {
	if calls == nil {
		calls = &Calls{}
	}
	srv := sdk.NewServer(&sdk.Implementation{Name: "mcptest", Version: "1"}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "add", Description: "Add two numbers."},
		func(ctx context.Context, req *sdk.CallToolRequest, in AddArgs) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: strconv.FormatFloat(in.A+in.B, 'f', -1, 64)}}}, nil, nil
		})
	sdk.AddTool(srv, &sdk.Tool{Name: "delete_all", Description: "Delete everything."},
		func(ctx context.Context, req *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
			calls.mu.Lock()
			calls.DeleteAll++
			if k, ok := req.Params.Meta["io.gatehouse/idempotency-key"].(string); ok {
				calls.Keys = append(calls.Keys, k)
			}
			calls.mu.Unlock()
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "deleted everything"}}}, nil, nil
		})
	sdk.AddTool(srv, &sdk.Tool{Name: "fail", Description: "Always fails."},
		func(ctx context.Context, req *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
			return nil, nil, fmt.Errorf("the disk is on fire")
		})
	return srv
}
