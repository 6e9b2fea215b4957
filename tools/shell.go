package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// NameShellExec is the name of the shell tool.
const NameShellExec = "shell_exec"

// ShellConfig configures shell_exec.
type ShellConfig struct {
	// Enabled switches the host shell on. Defaults to false: shell_exec is
	// registered but not runnable, and a call is refused with the reason.
	Enabled bool
	// Timeout bounds one command; at the limit the command and every process
	// it started are killed. Defaults to 60s.
	Timeout time.Duration
	// MaxOutputBytes caps the output returned (stdout and stderr together,
	// in the order written); the rest is counted and dropped. Defaults to 64 KiB.
	MaxOutputBytes int
	// Shell is the shell run as Shell -c command. Defaults to "sh".
	Shell string
	// Env is the whole environment of the command. Defaults to
	// PATH=/usr/local/bin:/usr/bin:/bin, HOME set to the workspace and
	// LANG=C.UTF-8: the gateway's own environment (its API keys and tokens)
	// is never passed on.
	Env []string
}

// ShellExec is the shell_exec tool.
type ShellExec struct{ cfg ShellConfig }

// NewShellExec returns shell_exec with cfg.
func NewShellExec(cfg ShellConfig) *ShellExec {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 60 * time.Second
	}
	if cfg.MaxOutputBytes <= 0 {
		cfg.MaxOutputBytes = 64 << 10
	}
	if cfg.Shell == "" {
		cfg.Shell = "sh"
	}
	return &ShellExec{cfg: cfg}
}

// Name implements Tool.
func (t *ShellExec) Name() string { return NameShellExec }

// Description implements Tool.
func (t *ShellExec) Description() string {
	return fmt.Sprintf("Run a shell command (sh -c) in the workspace directory and return its exit code and output. Time limit %s. A person approves each command.", t.cfg.Timeout)
}

// Schema implements Tool.
func (t *ShellExec) Schema() json.RawMessage {
	return json.RawMessage(`{
  "type": "object",
  "properties": {
    "command": {"type": "string", "description": "The command line, run with sh -c in the workspace directory."}
  },
  "required": ["command"],
  "additionalProperties": false
}`)
}

// Tier implements Tool: a command can do anything the gateway's user can.
func (t *ShellExec) Tier() Tier { return Danger }

// Runnable implements Tool.
func (t *ShellExec) Runnable() error {
	if !t.cfg.Enabled {
		return errors.New("the host shell is switched off (GATEHOUSE_SHELL=on enables it)")
	}
	return nil
}

// Idempotent implements Tool: a command may do anything, twice.
func (t *ShellExec) Idempotent() bool { return false }

// Run implements Tool. The output is External: a command prints what files
// and servers hold.
func (t *ShellExec) Run(ctx context.Context, call Call) (Result, error) {
	if err := t.Runnable(); err != nil {
		return errorResult("shell_exec cannot run: %v", err), nil
	}
	var a struct {
		Command string `json:"command"`
	}
	if err := json.Unmarshal(call.Arguments, &a); err != nil {
		return errorResult("shell_exec: bad arguments: %v", err), nil
	}
	if strings.TrimSpace(a.Command) == "" {
		return errorResult("shell_exec: the command is empty"), nil
	}
	if call.Workspace == "" || !filepath.IsAbs(call.Workspace) {
		return errorResult("shell_exec: this turn has no workspace directory"), nil
	}
	if err := ctx.Err(); err != nil {
		return errorResult("shell_exec: not run: %v", err), err
	}

	rctx, cancel := context.WithTimeout(ctx, t.cfg.Timeout)
	defer cancel()
	cmd := exec.CommandContext(rctx, t.cfg.Shell, "-c", a.Command)
	cmd.Dir = call.Workspace
	cmd.Env = t.cfg.Env
	if cmd.Env == nil {
		cmd.Env = []string{
			"PATH=/usr/local/bin:/usr/bin:/bin",
			"HOME=" + call.Workspace,
			"LANG=C.UTF-8",
		}
	}
	out := &cappedBuffer{max: t.cfg.MaxOutputBytes}
	cmd.Stdout, cmd.Stderr = out, out
	setProcessGroup(cmd)
	// A grandchild that keeps the output pipe open must not hold Run past
	// the limit.
	cmd.WaitDelay = 2 * time.Second

	start := time.Now()
	err := cmd.Run()
	elapsed := time.Since(start).Round(time.Millisecond)

	var b strings.Builder
	timedOut := errors.Is(rctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil
	switch {
	case timedOut:
		fmt.Fprintf(&b, "killed: the command ran past the time limit of %s\n", t.cfg.Timeout)
	case ctx.Err() != nil:
		fmt.Fprintf(&b, "killed: %v\n", ctx.Err())
	case cmd.ProcessState != nil:
		fmt.Fprintf(&b, "exit code: %d\n", cmd.ProcessState.ExitCode())
	default:
		return errorResult("shell_exec: could not start %s: %v", t.cfg.Shell, err), nil
	}
	fmt.Fprintf(&b, "duration: %s\n", elapsed)
	if err != nil && !timedOut && ctx.Err() == nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			fmt.Fprintf(&b, "error: %v\n", err)
		}
	}
	text, dropped := out.result()
	if text == "" {
		b.WriteString("(no output)\n")
	} else {
		b.WriteString("output:\n")
		b.WriteString(strings.ToValidUTF8(text, "\uFFFD"))
		if !strings.HasSuffix(text, "\n") {
			b.WriteByte('\n')
		}
	}
	if dropped > 0 {
		fmt.Fprintf(&b, "[output truncated: %d more bytes not shown]\n", dropped)
	}
	res := Result{Content: b.String(), IsError: timedOut || ctx.Err() != nil, External: true}
	if ctx.Err() != nil {
		// Killed half way: what it did before is unknown.
		return res, ctx.Err()
	}
	return res, nil
}

// cappedBuffer keeps the first max bytes written and counts the rest.
type cappedBuffer struct {
	mu      sync.Mutex
	max     int
	buf     bytes.Buffer
	dropped int64
}

func (c *cappedBuffer) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	room := c.max - c.buf.Len()
	if room > len(p) {
		room = len(p)
	}
	if room > 0 {
		c.buf.Write(p[:room])
	}
	c.dropped += int64(len(p) - max(room, 0))
	return len(p), nil
}

func (c *cappedBuffer) result() (string, int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.String(), c.dropped
}
