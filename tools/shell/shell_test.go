package shell_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/tools/toolstest"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/tools"
	"github.com/gatehouse/gatehouse/tools/shell"
)

func TestShellExecOffByDefault(t *testing.T) {
	tool := shell.New(shell.Config{})
	err := tool.Runnable()
	if err == nil || !strings.Contains(err.Error(), "GATEHOUSE_SHELL=on") {
		t.Fatalf("Runnable: %v, want switched off", err)
	}
	marker := filepath.Join(t.TempDir(), "ran")
	res, err := tool.Run(context.Background(), tools.Call{ToolCall: gh.ToolCall{Arguments: toolstest.Args(t, map[string]string{"command": "touch " + marker})}, Workspace: t.TempDir()})
	if err != nil || !res.IsError {
		t.Fatalf("Run while off: %v %+v", err, res)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the command ran with the shell off")
	}
}

func TestShellExecOutputAndExitCode(t *testing.T) {
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "here.txt"), nil, 0o644)
	tool := shell.New(shell.Config{Mode: shell.Host})
	if tool.Runnable() != nil || tool.Tier() != tools.Danger || tool.Idempotent() {
		t.Fatal("an enabled shell is runnable, danger, not idempotent")
	}
	t.Setenv("GATEHOUSE_TEST_SECRET", "hunter2")
	res := toolstest.Run(t, tool, ws, map[string]string{"command": `ls; echo "to stderr" >&2; echo "secret=$GATEHOUSE_TEST_SECRET"; exit 3`})
	if res.IsError || !res.External {
		t.Fatalf("result %+v", res)
	}
	for _, want := range []string{"exit code: 3", "here.txt", "to stderr", "secret=\n"} {
		if !strings.Contains(res.Content, want) {
			t.Errorf("output lacks %q:\n%s", want, res.Content)
		}
	}
	if strings.Contains(res.Content, "hunter2") {
		t.Error("the gateway's environment leaked into the command")
	}
	if res := toolstest.Run(t, tool, ws, map[string]string{"command": "true"}); !strings.Contains(res.Content, "exit code: 0") || !strings.Contains(res.Content, "(no output)") {
		t.Errorf("true: %q", res.Content)
	}
}

func TestShellExecOutputCap(t *testing.T) {
	tool := shell.New(shell.Config{Mode: shell.Host, MaxOutputBytes: 100})
	res := toolstest.Run(t, tool, t.TempDir(), map[string]string{"command": "head -c 1000 /dev/zero | tr '\\0' x"})
	if !strings.Contains(res.Content, strings.Repeat("x", 100)) || strings.Contains(res.Content, strings.Repeat("x", 101)) || !strings.Contains(res.Content, "900 more bytes") {
		t.Fatalf("capped output:\n%s", res.Content)
	}
}

func TestShellExecTimeoutKillsIt(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	tool := shell.New(shell.Config{Mode: shell.Host, Timeout: 300 * time.Millisecond})
	start := time.Now()
	// A background child holding the output pipe must die too.
	res := toolstest.Run(t, tool, ws, map[string]string{"command": "echo started; (sleep 2; touch late) & sleep 2; touch late2"})
	if d := time.Since(start); d > 1800*time.Millisecond {
		t.Fatalf("took %s: the command was not killed", d)
	}
	if !res.IsError || !strings.Contains(res.Content, "time limit") || !strings.Contains(res.Content, "started") {
		t.Fatalf("result %+v", res)
	}
	time.Sleep(2500 * time.Millisecond)
	for _, f := range []string{"late", "late2"} {
		if _, err := os.Stat(filepath.Join(ws, f)); err == nil {
			t.Errorf("%s exists: a process outlived the time limit", f)
		}
	}
}

func TestShellExecCancelledContext(t *testing.T) {
	tool := shell.New(shell.Config{Mode: shell.Host})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	res, err := tool.Run(ctx, tools.Call{ToolCall: gh.ToolCall{Arguments: toolstest.Args(t, map[string]string{"command": "sleep 5"})}, Workspace: t.TempDir()})
	if err == nil || !res.IsError {
		t.Fatalf("got %v %+v, want the context's error", err, res)
	}
}

func TestHostShellBackgroundChildDiesWithTheCommand(t *testing.T) {
	ws := t.TempDir()
	tool := shell.New(shell.Config{Mode: shell.Host})
	// The child does not hold the output pipe, so the command returns at once.
	res := toolstest.Run(t, tool, ws, map[string]string{"command": "(sleep 1; touch late) >/dev/null 2>&1 & echo started"})
	if !strings.Contains(res.Content, "exit code: 0") {
		t.Fatalf("result %+v", res)
	}
	time.Sleep(1500 * time.Millisecond)
	if _, err := os.Stat(filepath.Join(ws, "late")); err == nil {
		t.Error("a background child outlived the command")
	}
}
