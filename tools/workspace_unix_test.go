//go:build unix

package tools_test

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/tools/toolstest"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/tools"
)

// runPromptly runs a tool call in a goroutine and fails the test if it has
// not returned within 10s: a call that blocks (on a FIFO, say) fails here
// instead of hanging the whole test binary.
func runPromptly(t *testing.T, ctx context.Context, tool tools.Tool, workspace string, a any) (tools.Result, error) {
	t.Helper()
	type outcome struct {
		res tools.Result
		err error
	}
	done := make(chan outcome, 1)
	raw := toolstest.Args(t, a)
	go func() {
		res, err := tool.Run(ctx, tools.Call{ToolCall: gh.ToolCall{ID: "c", Arguments: raw}, IdempotencyKey: "k", Workspace: workspace})
		done <- outcome{res, err}
	}()
	select {
	case o := <-done:
		return o.res, o.err
	case <-time.After(10 * time.Second):
		t.Fatalf("%s %s: still running after 10s; the call hangs", tool.Name(), raw)
		return tools.Result{}, nil
	}
}

// withUmask sets the process umask for one test, so mode assertions do not
// depend on the umask of whoever runs the tests (022 is the common default;
// it leaves 0644 and 0755 as they are, so it cannot hide a wide mode).
func withUmask(t *testing.T, mask int) {
	t.Helper()
	old := syscall.Umask(mask)
	t.Cleanup(func() { syscall.Umask(old) })
}

func perm(t *testing.T, path string) fs.FileMode {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Mode().Perm()
}

// A FIFO in the workspace used to hang workspace_read forever (the open
// waits for a writer). Every tool now answers at once, naming what it is.
func TestWorkspaceRefusesFIFOPromptly(t *testing.T) {
	ws := t.TempDir()
	fifo := filepath.Join(ws, "pipe")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	// If a call does block on the FIFO, open its other ends at the end so
	// the stuck goroutine returns and the test binary can exit.
	t.Cleanup(func() {
		if f, err := os.OpenFile(fifo, os.O_RDWR|syscall.O_NONBLOCK, 0); err == nil {
			time.Sleep(10 * time.Millisecond)
			f.Close()
		}
	})
	if err := os.Symlink("pipe", filepath.Join(ws, "pipe-link")); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cfg := tools.WorkspaceConfig{}
	list, read, write := tools.NewWorkspaceList(cfg), tools.NewWorkspaceRead(cfg), tools.NewWorkspaceWrite(cfg)

	for _, p := range []string{"pipe", "pipe-link"} {
		res, err := runPromptly(t, ctx, read, ws, map[string]string{"path": p})
		if err != nil || !res.IsError || !strings.Contains(res.Content, "refused") || !strings.Contains(res.Content, "named pipe") {
			t.Errorf("read %s: %+v %v, want a refusal naming the named pipe", p, res, err)
		}
		res, err = runPromptly(t, ctx, write, ws, map[string]string{"path": p, "content": "hello"})
		if err != nil || !res.IsError || !strings.Contains(res.Content, "named pipe") {
			t.Errorf("write %s: %+v %v, want a refusal naming the named pipe", p, res, err)
		}
		res, err = runPromptly(t, ctx, list, ws, map[string]string{"path": p})
		if err != nil || !res.IsError || !strings.Contains(res.Content, "named pipe") {
			t.Errorf("list %s: %+v %v, want a refusal naming the named pipe", p, res, err)
		}
	}
	// The write did not replace the FIFO with a file either.
	if st, err := os.Lstat(fifo); err != nil || st.Mode()&fs.ModeNamedPipe == 0 {
		t.Fatalf("after the writes, pipe is %v %v; want the FIFO left alone", st.Mode(), err)
	}

	// With a reader waiting on the FIFO, a write would no longer block but
	// feed the reader: it is refused all the same, and nothing arrives.
	reader, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	for _, p := range []string{"pipe", "pipe-link"} {
		if res, err := runPromptly(t, ctx, write, ws, map[string]string{"path": p, "content": "leak"}); err != nil || !res.IsError {
			t.Errorf("write %s with a reader: %+v %v, want refused", p, res, err)
		}
	}
	buf := make([]byte, 16)
	_ = reader.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if n, _ := reader.Read(buf); n > 0 {
		t.Fatalf("the reader of the FIFO received %q", buf[:n])
	}

	// Listing the directory shows the FIFO with its type rather than failing.
	res, err := runPromptly(t, ctx, list, ws, map[string]string{})
	if err != nil || res.IsError || !strings.Contains(res.Content, "pipe\t(named pipe (FIFO)") || !strings.Contains(res.Content, "pipe-link@") {
		t.Fatalf("list: %+v %v, want the FIFO shown with its type", res, err)
	}
}

// A unix socket file is refused the same way, and listed with its type.
func TestWorkspaceRefusesSocket(t *testing.T) {
	ws := t.TempDir()
	sock := filepath.Join(ws, "agent.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Skipf("unix socket: %v", err)
	}
	defer ln.Close()
	ctx := context.Background()
	cfg := tools.WorkspaceConfig{}
	list, read, write := tools.NewWorkspaceList(cfg), tools.NewWorkspaceRead(cfg), tools.NewWorkspaceWrite(cfg)

	res, err := runPromptly(t, ctx, read, ws, map[string]string{"path": "agent.sock"})
	if err != nil || !res.IsError || !strings.Contains(res.Content, "is a socket") {
		t.Errorf("read: %+v %v, want a refusal naming the socket", res, err)
	}
	res, err = runPromptly(t, ctx, write, ws, map[string]string{"path": "agent.sock", "content": "x"})
	if err != nil || !res.IsError || !strings.Contains(res.Content, "is a socket") {
		t.Errorf("write: %+v %v, want a refusal naming the socket", res, err)
	}
	if st, err := os.Lstat(sock); err != nil || st.Mode()&fs.ModeSocket == 0 {
		t.Errorf("after the write, agent.sock is %v %v; want the socket left alone", st.Mode(), err)
	}
	res, err = runPromptly(t, ctx, list, ws, map[string]string{})
	if err != nil || res.IsError || !strings.Contains(res.Content, "agent.sock\t(socket") {
		t.Errorf("list: %+v %v, want the socket shown with its type", res, err)
	}
}

// A turn that is cancelled is not kept busy by the workspace tools: each
// returns at once with the context's error, and a write changes nothing.
func TestWorkspaceToolsStopOnCancelledContext(t *testing.T) {
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "big.txt"), []byte(strings.Repeat("x", 1<<20)), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	cfg := tools.WorkspaceConfig{MaxReadBytes: 1 << 20}
	list, read, write := tools.NewWorkspaceList(cfg), tools.NewWorkspaceRead(cfg), tools.NewWorkspaceWrite(cfg)

	if res, err := runPromptly(t, ctx, read, ws, map[string]string{"path": "big.txt"}); !errors.Is(err, context.Canceled) || strings.Contains(res.Content, "xxx") {
		t.Errorf("read with a cancelled context: %v, content %d bytes; want context.Canceled and no content", err, len(res.Content))
	}
	if _, err := runPromptly(t, ctx, list, ws, map[string]string{}); !errors.Is(err, context.Canceled) {
		t.Errorf("list with a cancelled context: %v, want context.Canceled", err)
	}
	if _, err := runPromptly(t, ctx, write, ws, map[string]string{"path": "new.txt", "content": "x"}); !errors.Is(err, context.Canceled) {
		t.Errorf("write with a cancelled context: %v, want context.Canceled", err)
	}
	if _, err := os.Stat(filepath.Join(ws, "new.txt")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a cancelled write created the file: %v", err)
	}
}

// What the agent writes is readable by the gateway's user only: new files
// 0600, new directories 0700, whatever the umask. A file it replaces keeps
// the mode its owner gave it.
func TestWorkspaceWriteCreatesPrivateFiles(t *testing.T) {
	withUmask(t, 0o022)
	ws := t.TempDir()
	write := tools.NewWorkspaceWrite(tools.WorkspaceConfig{})
	if res := toolstest.Run(t, write, ws, map[string]string{"path": "notes/2026/today.md", "content": "private"}); res.IsError {
		t.Fatalf("write: %+v", res)
	}
	if m := perm(t, filepath.Join(ws, "notes", "2026", "today.md")); m != 0o600 {
		t.Errorf("new file mode %v, want 0600", m)
	}
	for _, d := range []string{"notes", filepath.Join("notes", "2026")} {
		if m := perm(t, filepath.Join(ws, d)); m != 0o700 {
			t.Errorf("new directory %s mode %v, want 0700", d, m)
		}
	}

	// A shared file stays shared after the agent rewrites it, even under a
	// umask that would narrow a freshly created file.
	shared := filepath.Join(ws, "shared.txt")
	if err := os.WriteFile(shared, []byte("v1"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(shared, 0o644); err != nil {
		t.Fatal(err)
	}
	withUmask(t, 0o077)
	if res := toolstest.Run(t, write, ws, map[string]string{"path": "shared.txt", "content": "v2"}); res.IsError {
		t.Fatalf("rewrite: %+v", res)
	}
	if m := perm(t, shared); m != 0o644 {
		t.Errorf("rewritten file mode %v, want its 0644 kept", m)
	}
}
