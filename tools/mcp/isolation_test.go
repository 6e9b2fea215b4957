package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/tools"
	"github.com/gatehouse/gatehouse/tools/mcp"
	"github.com/gatehouse/gatehouse/tools/sandbox"
)

// needSandbox skips where this host cannot make a sandbox, saying why.
func needSandbox(t *testing.T) {
	t.Helper()
	if _, err := sandbox.Probe(context.Background(), "bwrap"); err != nil {
		t.Skipf("stdio servers cannot run isolated here: %v", err)
	}
}

// Where isolation is unavailable (here: a bubblewrap that does not exist),
// an isolated stdio server is not started — a typed error names the
// setting that would run it anyway — and with "Isolation": "host" it starts.
func TestIsolatedStdioServerRefusedWhereIsolationIsUnavailable(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-bwrap")
	marker := filepath.Join(t.TempDir(), "started")
	// A server that would leave a mark if it ever ran.
	srv := selfServer(t, nil)
	srv.Command = []string{"/bin/sh", "-c", "touch " + marker + "; exec \"$0\" \"$@\"", srv.Command[0], srv.Command[1]}
	cfg := mcp.Config{Bubblewrap: missing, Servers: []mcp.MCPServer{srv}}

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ts, err := mcp.Connect(ctx, cfg)
	defer ts.Close()
	if len(ts) != 0 {
		t.Fatalf("tools %v from a server that should not have started", ts)
	}
	if !errors.Is(err, sandbox.ErrUnavailable) || !gh.IsCode(err, gh.CodeUnavailable) {
		t.Fatalf("Connect: %v, want an unavailable error wrapping sandbox.ErrUnavailable", err)
	}
	for _, want := range []string{`"self"`, `"Isolation": "host"`, missing} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the server was started")
	}
	if got := mcp.Isolations(ctx, cfg); len(got) != 1 || got[0].Isolation != mcp.IsolationRefused || !strings.Contains(got[0].Reason, `"Isolation": "host"`) {
		t.Errorf("Isolations = %+v, want self refused with the reason", got)
	}

	cfg.Servers[0].Isolation = mcp.IsolationHost
	ts = connect(t, cfg)
	if len(ts) == 0 {
		t.Fatal(`no tools with "Isolation": "host"`)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Errorf("the host server did not run: %v", err)
	}
	if got := mcp.Isolations(ctx, cfg); got[0].Isolation != mcp.IsolationHost || !got[0].Network {
		t.Errorf("Isolations = %+v, want host with the host's network", got)
	}
}

func TestUnknownIsolationIsRefused(t *testing.T) {
	srv := selfServer(t, nil)
	srv.Isolation = "none"
	_, err := mcp.Connect(context.Background(), mcp.Config{Servers: []mcp.MCPServer{srv}})
	if !gh.IsCode(err, gh.CodeInvalid) || !strings.Contains(err.Error(), `"none"`) {
		t.Fatalf("Connect: %v, want invalid naming the value", err)
	}
}

// Stdio servers installed the usual ways start isolated and answer: a Node
// script and a Python script (their interpreters found in PATH, the script
// bound read-only), and a Go binary in a directory of its own (bound
// read-only), each in a PID namespace of its own.
func TestIsolatedStdioServersInstalledTheUsualWaysStart(t *testing.T) {
	needSandbox(t)
	testdata, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, interpreter string
		command           []string
	}{
		{"node", "node", []string{"node", filepath.Join(testdata, "jsserver", "server.js")}},
		{"python", "python3", []string{"python3", filepath.Join(testdata, "pyserver", "server.py")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := exec.LookPath(tc.interpreter); err != nil {
				t.Skipf("no %s: %v", tc.interpreter, err)
			}
			ts := connect(t, mcp.Config{Servers: []mcp.MCPServer{{Name: tc.name, Command: tc.command}}})
			reg := tools.NewRegistry(ts...)
			if got := call(t, reg, tc.name+"__add", `{"a":2,"b":3}`); got != "5" {
				t.Errorf("add(2, 3) = %q", got)
			}
			var inside struct{ Pid, Pids int }
			if err := json.Unmarshal([]byte(call(t, reg, tc.name+"__inside", `{}`)), &inside); err != nil {
				t.Fatal(err)
			}
			// bubblewrap's init is pid 1; the server is among the first few
			// and sees only those.
			if inside.Pid > 10 || inside.Pids == 0 || inside.Pids > 5 {
				t.Errorf("the server is pid %d and sees %d processes: not in a PID namespace of its own", inside.Pid, inside.Pids)
			}
		})
	}
	t.Run("go binary", func(t *testing.T) {
		goBin, err := exec.LookPath("go")
		if err != nil {
			t.Skip("no go command to build the server")
		}
		bin := filepath.Join(t.TempDir(), "opt", "addserver", "bin", "addserver")
		if out, err := exec.Command(goBin, "build", "-o", bin, "./testdata/addserver").CombinedOutput(); err != nil {
			t.Fatalf("go build: %v\n%s", err, out)
		}
		ts := connect(t, mcp.Config{Servers: []mcp.MCPServer{{Name: "calc", Command: []string{bin}}}})
		if got := call(t, tools.NewRegistry(ts...), "calc__add", `{"a":2,"b":3}`); got != "5" {
			t.Errorf("add(2, 3) = %q", got)
		}
	})
}

// An isolated server sees the gateway's files only where its config binds
// them: a file beside its script is not there unless listed in ReadOnly.
func TestIsolatedServerSeesOnlyWhatIsBound(t *testing.T) {
	needSandbox(t)
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3")
	}
	dir := t.TempDir()
	script, err := os.ReadFile(filepath.Join("testdata", "pyserver", "server.py"))
	if err != nil {
		t.Fatal(err)
	}
	// The fixture, with a tool that reads a path.
	script = append(script, []byte(`
`)...)
	src := strings.Replace(string(script), `    if name == "inside":`, `    if name == "read":
        try:
            return open(args["path"]).read()
        except OSError as e:
            return "error: " + e.strerror
    if name == "inside":`, 1)
	src = strings.Replace(src, `TOOLS = [`, `TOOLS = [
    {"name": "read", "description": "Read a file.", "inputSchema": {"type": "object"}},`, 1)
	path := filepath.Join(dir, "server.py")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(dir, "gateway.key")
	if err := os.WriteFile(secret, []byte("the gateway's key"), 0o600); err != nil {
		t.Fatal(err)
	}
	shared := filepath.Join(t.TempDir(), "shared.txt")
	if err := os.WriteFile(shared, []byte("for the server"), 0o644); err != nil {
		t.Fatal(err)
	}
	ts := connect(t, mcp.Config{Servers: []mcp.MCPServer{{Name: "py", Command: []string{"python3", path}, ReadOnly: []string{shared}}}})
	reg := tools.NewRegistry(ts...)
	if got := call(t, reg, "py__read", `{"path":"`+secret+`"}`); !strings.HasPrefix(got, "error:") {
		t.Errorf("the server read a file beside its script: %q", got)
	}
	if got := call(t, reg, "py__read", `{"path":"`+shared+`"}`); got != "for the server" {
		t.Errorf("the ReadOnly file reads %q", got)
	}
	if got := call(t, reg, "py__read", `{"path":"/etc/shadow"}`); !strings.HasPrefix(got, "error:") {
		t.Errorf("the server read /etc/shadow: %q", got)
	}
}

func call(t *testing.T, reg *tools.Registry, name, args string) string {
	t.Helper()
	tool, ok := reg.Get(name)
	if !ok {
		t.Fatalf("no %s among %v", name, reg.Names())
	}
	res, err := tool.Run(context.Background(), tools.Call{ToolCall: gh.ToolCall{ID: "c1", Arguments: []byte(args)}})
	if err != nil || res.IsError {
		t.Fatalf("%s: %v %+v", name, err, res)
	}
	return res.Content
}
