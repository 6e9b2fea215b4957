package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/tools"
	"github.com/gatehouse/gatehouse/tools/mcp"
	"github.com/gatehouse/gatehouse/tools/mcp/internal/mcptest"
)

// startHTTP serves the test MCP server over streamable HTTP on loopback.
func startHTTP(t *testing.T, calls *mcptest.Calls) string {
	t.Helper()
	srv := mcptest.NewServer(calls)
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	return hs.URL
}

func connect(t *testing.T, cfg mcp.Config) mcp.Tools {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ts, err := mcp.Connect(ctx, cfg)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(func() { _ = ts.Close() })
	return ts
}

func TestBridgeStreamableHTTP(t *testing.T) {
	calls := &mcptest.Calls{}
	url := startHTTP(t, calls)
	ts := connect(t, mcp.Config{Servers: []mcp.MCPServer{{
		Name: "calc",
		URL:  url,
		Tier: map[string]tools.Tier{"add": tools.Safe},
	}}})
	checkBridge(t, ts, calls)
}

func checkBridge(t *testing.T, ts mcp.Tools, calls *mcptest.Calls) {
	t.Helper()
	reg := tools.NewRegistry(ts...)
	if got, want := reg.Names(), []string{"calc__add", "calc__delete_all", "calc__fail"}; !slices.Equal(got, want) {
		t.Fatalf("names %v, want %v", got, want)
	}
	add, _ := reg.Get("calc__add")
	del, _ := reg.Get("calc__delete_all")
	if add.Tier() != tools.Safe {
		t.Errorf("add: tier %s, want safe (from config)", add.Tier())
	}
	if del.Tier() != tools.Danger {
		t.Errorf("delete_all: tier %s, want danger (not listed)", del.Tier())
	}
	if add.Idempotent() || del.Idempotent() {
		t.Error("remote tools are not idempotent")
	}
	if !strings.Contains(add.Description(), "Add two numbers.") || !strings.Contains(add.Description(), "calc") {
		t.Errorf("description %q", add.Description())
	}

	// The schema is the server's: the registry checks arguments with it.
	var schema map[string]any
	if err := json.Unmarshal(add.Schema(), &schema); err != nil || schema["type"] != "object" {
		t.Fatalf("schema %s: %v", add.Schema(), err)
	}
	if err := reg.Check("calc__add", json.RawMessage(`{"a":2,"b":3}`)); err != nil {
		t.Errorf("Check valid: %v", err)
	}
	var ce *tools.CheckError
	if err := reg.Check("calc__add", json.RawMessage(`{"a":"two","b":3}`)); !errors.As(err, &ce) || ce.Code != tools.CodeInvalidArguments || !strings.Contains(ce.Message, `"a"`) {
		t.Errorf("Check wrong type: %v", err)
	}

	ctx := context.Background()
	res, err := add.Run(ctx, tools.Call{ToolCall: gh.ToolCall{ID: "c1", Arguments: json.RawMessage(`{"a":2,"b":3.5}`)}})
	if err != nil || res.IsError || res.Content != "5.5" || !res.External {
		t.Fatalf("add: %v %+v, want 5.5 as external text", err, res)
	}
	res, err = del.Run(ctx, tools.Call{ToolCall: gh.ToolCall{ID: "c2", Arguments: json.RawMessage(`{}`)}, IdempotencyKey: "rcpt-42"})
	if err != nil || res.IsError || res.Content != "deleted everything" {
		t.Fatalf("delete_all: %v %+v", err, res)
	}
	if calls != nil { // nil when the server is another process
		if n, keys := calls.Snapshot(); n != 1 || !slices.Equal(keys, []string{"rcpt-42"}) {
			t.Errorf("server saw delete_all %d times with keys %v, want once with rcpt-42", n, keys)
		}
	}
	fail, _ := reg.Get("calc__fail")
	res, err = fail.Run(ctx, tools.Call{ToolCall: gh.ToolCall{ID: "c3", Arguments: json.RawMessage(`{}`)}})
	if err != nil || !res.IsError || !res.External || !strings.Contains(res.Content, "the disk is on fire") {
		t.Fatalf("fail: %v %+v, want an error result from the server, marked External", err, res)
	}

	if err := ts.Close(); err != nil {
		t.Logf("Close: %v", err)
	}
	if add.Runnable() == nil {
		t.Error("a tool of a closed session is still runnable")
	}
}

func TestBridgeStdio(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a server binary")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build the stdio server")
	}
	bin := filepath.Join(t.TempDir(), "addserver")
	build := exec.Command(goBin, "build", "-o", bin, "./testdata/addserver")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	ts := connect(t, mcp.Config{Servers: []mcp.MCPServer{{
		Name:    "calc",
		Command: []string{bin},
		Tier:    map[string]tools.Tier{"add": tools.Safe},
	}}})
	checkBridge(t, ts, nil)
}

func TestConnectReportsBadServersAndKeepsGoodOnes(t *testing.T) {
	url := startHTTP(t, nil)
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ts, err := mcp.Connect(ctx, mcp.Config{
		ConnectTimeout: 5 * time.Second,
		Servers: []mcp.MCPServer{
			{Name: "calc", URL: url},
			{Name: "down", URL: dead.URL},
			{Name: "bad name!", URL: url},
			{Name: "neither"},
			{Name: "calc", URL: url},
		},
	})
	defer ts.Close()
	if err == nil {
		t.Fatal("Connect: no error for the bad servers")
	}
	for _, want := range []string{`"down"`, `"bad name!"`, `"neither"`, "listed twice"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	if len(ts) != 3 || ts[0].Name() != "calc__add" || ts[0].Tier() != tools.Danger {
		t.Fatalf("tools %v: want calc's three, all danger with no tiers configured", ts)
	}
}
