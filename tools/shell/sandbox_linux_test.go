//go:build linux

package shell_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/tools/toolstest"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/internal/testing/testenv"
	"github.com/gatehouse/gatehouse/tools"
	"github.com/gatehouse/gatehouse/tools/shell"
)

func isolated(t *testing.T, cfg shell.Config) *shell.Tool {
	t.Helper()
	testenv.Bubblewrap(t)
	cfg.Mode = shell.Isolated
	tool := shell.New(cfg)
	if err := tool.Runnable(); err != nil {
		if testenv.RequireServices() {
			t.Fatalf("isolation is required here: %v", err)
		}
		t.Skipf("isolated shell unavailable on this host: %v", err)
	}
	return tool
}

// leftover reports whether any process on the host has marker in its
// command line: a process the sandbox let outlive the command.
func leftover(marker string) bool {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(strings.ReplaceAll(string(raw), "\x00", " "), marker) {
			return true
		}
	}
	return false
}

func eventuallyGone(t *testing.T, marker string) {
	t.Helper()
	for i := 0; i < 50 && leftover(marker); i++ {
		time.Sleep(100 * time.Millisecond)
	}
	if leftover(marker) {
		t.Errorf("a process running %q outlived the command", marker)
	}
}

// The command the security review used to read the gateway's keys: the
// parent's environ, its own env, the process list, and a background child
// left behind. Inside the sandbox none of it reaches the gateway.
func TestIsolatedShellCannotReachTheGateway(t *testing.T) {
	tool := isolated(t, shell.Config{})
	const secret = "sk-test-gateway-key-41f7"
	t.Setenv("GATEHOUSE_API_TOKEN", secret)
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("from the workspace\n"), 0o600)
	private := filepath.Join(t.TempDir(), "gatehouse.db")
	os.WriteFile(private, []byte("private rows"), 0o600)

	marker := "987651"
	cmd := strings.Join([]string{
		`cat /proc/$PPID/environ | tr '\0' '\n'`,
		`cat /proc/1/environ | tr '\0' '\n'`,
		`env`,
		`echo "procs: $(ls /proc | grep -c '^[0-9]')"`,
		`echo "uid: $(id -u) name: $(id -un)"`,
		`echo "fds: $(ls /proc/self/fd | tr '\n' ' ')"`,
		`cat notes.txt`,
		`echo made > made.txt`,
		`cat ` + private + ` || echo "no gateway data"`,
		`touch /usr/x 2>/dev/null || echo "usr read-only"`,
		`ls /root 2>/dev/null || echo "no /root"`,
		`sleep ` + marker + ` &`,
	}, "; ")
	res := toolstest.Run(t, tool, ws, map[string]string{"command": cmd})
	out := res.Content
	if strings.Contains(out, secret) {
		t.Fatalf("the gateway's secret reached the command:\n%s", out)
	}
	for _, want := range []string{"exit code: 0", "from the workspace", "uid: 1000 name: sandbox", "no gateway data", "usr read-only", "no /root", "HOME=/workspace"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// bubblewrap's init, the shell, and the pipeline counting them.
	if m := regexp.MustCompile(`procs: (\d+)`).FindStringSubmatch(out); m == nil || atoi(m[1]) > 6 {
		t.Errorf("the command sees more than its own few processes:\n%s", out)
	}
	// Only stdin, stdout, stderr and ls's own directory handle.
	if m := regexp.MustCompile(`fds: ([0-9 ]*)`).FindStringSubmatch(out); m == nil || len(strings.Fields(m[1])) > 4 {
		t.Errorf("the command inherited descriptors:\n%s", out)
	}
	if got, err := os.ReadFile(filepath.Join(ws, "made.txt")); err != nil || string(got) != "made\n" {
		t.Errorf("the workspace was not writable: %q %v", got, err)
	}
	eventuallyGone(t, "sleep "+marker)
}

func TestIsolatedShellTimeoutKillsTheWholeTree(t *testing.T) {
	t.Parallel()
	tool := isolated(t, shell.Config{Timeout: 500 * time.Millisecond})
	ws := t.TempDir()
	marker := "987652"
	res := toolstest.Run(t, tool, ws, map[string]string{"command": "echo started; (sleep " + marker + "; touch late) & sleep 30"})
	if !res.IsError || !strings.Contains(res.Content, "time limit") || !strings.Contains(res.Content, "started") {
		t.Fatalf("result %+v", res)
	}
	eventuallyGone(t, "sleep "+marker)
}

func TestIsolatedShellCancelFreesTheTurn(t *testing.T) {
	t.Parallel()
	tool := isolated(t, shell.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	marker := "987653"
	time.AfterFunc(300*time.Millisecond, cancel)
	done := make(chan struct{})
	var (
		res tools.Result
		err error
	)
	go func() {
		defer close(done)
		res, err = tool.Run(ctx, tools.Call{ToolCall: gh.ToolCall{Arguments: toolstest.Args(t, map[string]string{"command": "sleep " + marker})}, Workspace: t.TempDir()})
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("a cancelled command still holds the turn")
	}
	if err == nil || !res.IsError {
		t.Fatalf("got %v %+v, want the context's error", err, res)
	}
	eventuallyGone(t, "sleep "+marker)
}

func TestIsolatedShellBoundsProcesses(t *testing.T) {
	t.Parallel()
	tool := isolated(t, shell.Config{MaxProcesses: 20, Timeout: 3 * time.Second})
	if !strings.Contains(tool.Isolation(), "pids cgroup") {
		if testenv.RequireServices() {
			t.Fatalf("no pids cgroup on the CI host: %s", tool.Isolation())
		}
		t.Skipf("no pids cgroup on this host: %s", tool.Isolation())
	}
	marker := "987654"
	res := toolstest.Run(t, tool, t.TempDir(), map[string]string{"command": "n=0; for i in $(seq 1 60); do sleep " + marker + " & n=$((n+1)); done; echo spawned; wait"})
	if !strings.Contains(res.Content, "fork") && !strings.Contains(res.Content, "Resource temporarily unavailable") {
		t.Errorf("60 processes under a bound of 20 all started:\n%s", res.Content)
	}
	eventuallyGone(t, "sleep "+marker)
}

func TestIsolatedShellHasNoNetworkByDefault(t *testing.T) {
	t.Parallel()
	tool := isolated(t, shell.Config{})
	// Only the namespace's own loopback, and it is down: the gateway's
	// API on the host's loopback cannot be reached.
	res := toolstest.Run(t, tool, t.TempDir(), map[string]string{"command": "cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d ' '"})
	if strings.Contains(res.Content, "eth") || strings.Contains(res.Content, "ens") || !strings.Contains(res.Content, "lo") {
		t.Errorf("interfaces seen inside:\n%s", res.Content)
	}
}

// Tests make isolation unavailable on purpose by naming a bubblewrap that
// does not exist: the tool is then unrunnable, with the reason, and a call
// does nothing.
func TestIsolationUnavailableRefusesTheTool(t *testing.T) {
	tool := shell.New(shell.Config{Mode: shell.Isolated, Bubblewrap: "/nonexistent/bwrap"})
	err := tool.Runnable()
	if err == nil || !strings.Contains(err.Error(), "isolation is unavailable") || !strings.Contains(err.Error(), "GATEHOUSE_SHELL=host") {
		t.Fatalf("Runnable: %v", err)
	}
	ws := t.TempDir()
	res, err := tool.Run(context.Background(), tools.Call{ToolCall: gh.ToolCall{Arguments: toolstest.Args(t, map[string]string{"command": "touch ran"})}, Workspace: ws})
	if err != nil || !res.IsError || !strings.Contains(res.Content, "isolation is unavailable") {
		t.Fatalf("Run: %v %+v", err, res)
	}
	if _, err := os.Stat(filepath.Join(ws, "ran")); err == nil {
		t.Fatal("the command ran without isolation")
	}
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

// Inside, the sandbox user is the gateway's user outside: a command could
// open the workspace to every local user and leave a set-user-id program
// there to run as the gateway. After it, the workspace is private again,
// set-id bits are gone, and what it made was private from the start.
func TestIsolatedShellCannotOpenTheWorkspaceToOthers(t *testing.T) {
	tool := isolated(t, shell.Config{})
	ws := filepath.Join(t.TempDir(), "ws")
	os.Mkdir(ws, 0o700)
	res := toolstest.Run(t, tool, ws, map[string]string{"command": "mkdir d; cp /bin/true d/suid; chmod 4755 d/suid; chmod 2755 d; echo x > made.txt; chmod 777 /workspace; ls -ld /workspace"})
	if !strings.Contains(res.Content, "exit code: 0") || !strings.Contains(res.Content, "drwxrwxrwx") {
		t.Fatalf("the command did not run as expected: %+v", res)
	}
	for path, want := range map[string]os.FileMode{
		ws:                             0o700,
		filepath.Join(ws, "made.txt"):  0o600,
		filepath.Join(ws, "d", "suid"): 0o755,
		filepath.Join(ws, "d"):         0o755,
	} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode() & (os.ModePerm | os.ModeSetuid | os.ModeSetgid); got != want {
			t.Errorf("%s: mode %v, want %v", path, got, want)
		}
	}
}
