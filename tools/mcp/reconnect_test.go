package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/internal/backoff"
	"github.com/gatehouse/gatehouse/tools"
	"github.com/gatehouse/gatehouse/tools/mcp"
	"github.com/gatehouse/gatehouse/tools/mcp/internal/mcptest"
)

// testPolicy is a reconnect policy short enough for a test.
var testPolicy = backoff.Policy{Floor: 20 * time.Millisecond, Ceiling: 200 * time.Millisecond, Jitter: 0.2}

// serveOn serves srv over streamable HTTP at addr on loopback ("" picks a
// port), and returns the address and a stop that ends it (listener and
// connections) as a server process that exits.
func serveOn(t *testing.T, addr string, srv *sdk.Server) (string, func()) {
	t.Helper()
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	var (
		ln  net.Listener
		err error
	)
	// The old listener's port is free again at once on Linux; a few tries
	// cover a slow close.
	for range 50 {
		if ln, err = net.Listen("tcp", addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)}
	go hs.Serve(ln)
	var once sync.Once
	stop := func() { once.Do(func() { hs.Close() }) }
	t.Cleanup(stop)
	return ln.Addr().String(), stop
}

func run(t *testing.T, tool tools.Tool, args string) (tools.Result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return tool.Run(ctx, tools.Call{ToolCall: gh.ToolCall{ID: "c", Name: tool.Name(), Arguments: json.RawMessage(args)}})
}

// A streamable-HTTP server stopped and started again on the same port
// mid-session (it knows nothing of the old session) is used again
// without a new Connect, and the tools it lists now are offered: a new
// one is handed to Register.
func TestHTTPServerRestartedMidSessionIsUsedAgain(t *testing.T) {
	addr, stop := serveOn(t, "", mcptest.NewServer(nil))
	reg := tools.NewRegistry()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ts, err := mcp.Connect(ctx, mcp.Config{Reconnect: testPolicy, Register: reg.Register,
		Servers: []mcp.MCPServer{{Name: "calc", URL: "http://" + addr, Tier: map[string]tools.Tier{"add": tools.Safe}}}})
	if err != nil {
		t.Fatal(err)
	}
	defer ts.Close()
	for _, tool := range ts {
		reg.Register(tool)
	}
	add, _ := reg.Get("calc__add")
	if res, err := run(t, add, `{"a":1,"b":2}`); err != nil || res.Content != "3" {
		t.Fatalf("before the restart: %v %+v", err, res)
	}

	stop()
	// The client's transport learns that the old server closed its
	// keep-alive connections: a call written on one it still thought
	// open fails with EOF, and rightly counts as outcome unknown (it is
	// not sent twice), which is not the restart this test is about.
	time.Sleep(200 * time.Millisecond)
	// The server comes back with one more tool.
	srv := mcptest.NewServer(nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "mul", Description: "Multiply."},
		func(_ context.Context, _ *sdk.CallToolRequest, in mcptest.AddArgs) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "product"}}}, nil, nil
		})
	serveOn(t, addr, srv)

	// The next call works: the bridge has reconnected, or the restarted
	// server's "session not found" sends the call once more on a new
	// session (it ran nothing the first time).
	res, err := run(t, add, `{"a":2,"b":3}`)
	if err != nil || res.IsError || res.Content != "5" {
		t.Fatalf("after the restart: %v %+v", err, res)
	}
	if err := add.Runnable(); err != nil {
		t.Errorf("add after the reconnect: %v", err)
	}
	// The re-listed tools: mul is new and registered.
	deadline := time.Now().Add(10 * time.Second)
	for !slices.Contains(reg.Names(), "calc__mul") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	mul, ok := reg.Get("calc__mul")
	if !ok {
		t.Fatalf("the restarted server's new tool was not registered: %v", reg.Names())
	}
	if res, err := run(t, mul, `{"a":2,"b":3}`); err != nil || res.Content != "product" || mul.Tier() != tools.Danger {
		t.Fatalf("mul: %v %+v tier %s", err, res, mul.Tier())
	}
}

// failingMCP proxies to a real MCP server until fail is set; then it
// answers every request with 500 at once and counts the initialize
// requests (one per reconnect attempt) and when each came.
type failingMCP struct {
	next     http.Handler
	fail     atomic.Bool
	mu       sync.Mutex
	attempts []time.Time
}

func (f *failingMCP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !f.fail.Load() {
		f.next.ServeHTTP(w, r)
		return
	}
	body, _ := io.ReadAll(r.Body)
	if r.Method == http.MethodPost && bytes.Contains(body, []byte(`"initialize"`)) {
		f.mu.Lock()
		f.attempts = append(f.attempts, time.Now())
		f.mu.Unlock()
	}
	http.Error(w, "down", http.StatusInternalServerError)
}

func (f *failingMCP) seen() []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.attempts)
}

// Against a server that fails every request at once, reconnect attempts
// stay within the backoff bound: never more than the policy allows in the
// time since the loss, and each wait at least the policy's shortest for
// that attempt (a hot loop would make hundreds).
func TestReconnectAgainstAFailingServerBacksOff(t *testing.T) {
	srv := mcptest.NewServer(nil)
	f := &failingMCP{next: sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)}
	hs := httptest.NewServer(f)
	t.Cleanup(hs.Close) // after the bridge's Close: its event stream would hold it
	ts := connect(t, mcp.Config{Reconnect: testPolicy, ReconnectWait: 100 * time.Millisecond, Servers: []mcp.MCPServer{{Name: "calc", URL: hs.URL}}})

	lostFrom := time.Now()
	f.fail.Store(true)
	hs.CloseClientConnections() // the event stream drops: the bridge notices
	// Wait for a handful of attempts, however slow this machine is.
	const want = 5
	deadline := time.Now().Add(60 * time.Second)
	for len(f.seen()) < want && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	seen := f.seen()
	elapsed := time.Since(lostFrom)
	if len(seen) < want {
		t.Fatalf("%d reconnect attempts in %s, want at least %d", len(seen), elapsed, want)
	}
	if bound := testPolicy.MaxAttempts(elapsed); len(seen) > bound {
		t.Fatalf("%d reconnect attempts in %s: the policy allows at most %d", len(seen), elapsed, bound)
	}
	for i := 1; i < len(seen); i++ {
		if gap := seen[i].Sub(seen[i-1]); gap < testPolicy.MinDelay(i-1) {
			t.Errorf("attempt %d came %s after the one before, under the policy's %s", i+1, gap, testPolicy.MinDelay(i-1))
		}
	}
	// While down, the tools say why, and a call is refused unsent.
	add := ts[0]
	if res, err := run(t, add, `{"a":1,"b":1}`); err != nil || !res.IsError || !strings.Contains(res.Content, "not sent") {
		t.Fatalf("a call while the server fails: %v %+v", err, res)
	}
	if err := add.(*mcp.Tool).Available(); err == nil || !strings.Contains(err.Error(), "500") && !strings.Contains(err.Error(), "Internal Server Error") && !strings.Contains(err.Error(), "down") {
		t.Errorf("Available while down: %v, want the last error", err)
	}
	// Back up: the loop gets there without a restart of anything.
	f.fail.Store(false)
	if res, err := run(t, add, `{"a":1,"b":1}`); err != nil || res.Content != "2" {
		deadline := time.Now().Add(30 * time.Second)
		for add.(*mcp.Tool).Available() != nil && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if res, err := run(t, add, `{"a":1,"b":1}`); err != nil || res.Content != "2" {
			t.Fatalf("after the server recovered: %v %+v", err, res)
		}
	}
}

// A stdio server whose process dies is started again through the same
// isolation it started with, and its tools work again.
func TestStdioServerThatDiesIsStartedAgain(t *testing.T) {
	for _, isolation := range []string{mcp.IsolationHost, mcp.IsolationSandbox} {
		t.Run(isolation, func(t *testing.T) {
			if isolation == mcp.IsolationSandbox {
				needSandbox(t)
			}
			srv := selfServer(t, nil)
			srv.Isolation = isolation
			ts := connect(t, mcp.Config{Reconnect: testPolicy, Servers: []mcp.MCPServer{srv}})
			reg := tools.NewRegistry(ts...)
			boot, _ := reg.Get("self__boot")
			envTool, _ := reg.Get("self__env")
			die, _ := reg.Get("self__die")
			first, err := run(t, boot, `{}`)
			if err != nil || first.IsError {
				t.Fatalf("boot: %v %+v", err, first)
			}
			run(t, die, `{}`) // its outcome is unknown: the process is gone
			second, err := run(t, boot, `{}`)
			if err != nil || second.IsError || second.Content == first.Content {
				t.Fatalf("after the process died: %v %+v (first boot %s)", err, second, first.Content)
			}
			env, err := run(t, envTool, `{}`)
			if err != nil || env.IsError {
				t.Fatalf("env: %v %+v", err, env)
			}
			// The sandboxed server's HOME is its private tmpfs: the new
			// process runs isolated as the first did.
			if sandboxed := strings.Contains(env.Content, "HOME=/home/"); sandboxed != (isolation == mcp.IsolationSandbox) {
				t.Errorf("%s server after the restart has environment %q", isolation, env.Content)
			}
		})
	}
}
