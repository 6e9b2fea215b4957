// Command addserver is an MCP server on stdio with the test tools of
// package mcp's tests: add(a, b) and delete_all.
package main

import (
	"context"
	"log"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse/gatehouse/tools/mcp/internal/mcptest"
)

func main() {
	srv := mcptest.NewServer(nil)
	if err := srv.Run(context.Background(), &sdk.StdioTransport{}); err != nil {
		log.Fatal(err)
	}
}
