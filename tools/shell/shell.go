package shell

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

	"github.com/gatehouse/gatehouse/tools"
)

// ToolName is the name of the shell tool.
const ToolName = "shell_exec"

// Mode says whether and how shell_exec runs commands.
type Mode string

// Shell modes.
const (
	// Off: shell_exec is registered but refused with the reason.
	Off Mode = "off"
	// Isolated runs each command in a bubblewrap sandbox: its own
	// PID, mount, user, IPC, UTS and network namespaces, no view of the
	// gateway's processes or files, only the workspace writable. Where the
	// sandbox cannot be made, the tool is unrunnable and says why.
	Isolated Mode = "on"
	// Host runs commands directly as the gateway's user, with a clean
	// environment but nothing else between them and the gateway's keys.
	// Only for a machine where the operator accepts that, knowingly.
	Host Mode = "host"
)

// Config configures shell_exec.
type Config struct {
	// Mode is off, on (isolated) or host. Defaults to off.
	Mode Mode
	// Timeout bounds one command; at the limit the command and every process
	// it started are killed. Defaults to 60s.
	Timeout time.Duration
	// MaxOutputBytes caps the output returned (stdout and stderr together,
	// in the order written); the rest is counted and dropped. Defaults to 64 KiB.
	MaxOutputBytes int
	// Shell is the shell run as Shell -c command. Defaults to "sh"
	// (/bin/sh inside the sandbox).
	Shell string
	// Env is the whole environment of the command. Defaults to
	// PATH=/usr/local/bin:/usr/bin:/bin, HOME set to the workspace,
	// LANG=C.UTF-8 and TMPDIR=/tmp: the gateway's own environment (its API
	// keys and tokens) is never passed on.
	Env []string

	// Bubblewrap is the bwrap binary the isolated mode runs (Debian's
	// bubblewrap package). Defaults to "bwrap" found in PATH. A path that
	// does not work makes isolation unavailable, which tests use on purpose.
	Bubblewrap string
	// Network gives isolated commands the host's network. Defaults to
	// false: a command gets a network namespace of its own with nothing in
	// it, so it cannot reach the gateway's API on loopback, the database
	// or the LAN.
	Network bool
	// MaxProcesses bounds the processes one isolated command may have at
	// once, through a pids cgroup made for it where the host allows one
	// (a fork bomb then fails inside the sandbox). Defaults to 128.
	MaxProcesses int
	// CgroupDir is the pids cgroup under which each command gets its own.
	// Defaults to the gateway's own pids cgroup (v1 pids hierarchy, or the
	// unified v2 one when its pids controller is delegated); "off" skips
	// the cgroup and leaves the time limit as the only bound.
	CgroupDir string
}

// Tool is the shell_exec tool.
type Tool struct {
	cfg Config

	probeOnce sync.Once
	probeErr  error
	cgroups   string // pids cgroup parent, "" when none
}

// New returns shell_exec with cfg.
func New(cfg Config) *Tool {
	if cfg.Mode == "" {
		cfg.Mode = Off
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 60 * time.Second
	}
	if cfg.MaxOutputBytes <= 0 {
		cfg.MaxOutputBytes = 64 << 10
	}
	if cfg.Shell == "" {
		cfg.Shell = "sh"
	}
	if cfg.Bubblewrap == "" {
		cfg.Bubblewrap = "bwrap"
	}
	if cfg.MaxProcesses <= 0 {
		cfg.MaxProcesses = 128
	}
	return &Tool{cfg: cfg}
}

// Name implements Tool.
func (t *Tool) Name() string { return ToolName }

// Description implements Tool.
func (t *Tool) Description() string {
	where := "in the workspace directory"
	if t.cfg.Mode == Isolated {
		where = "in an isolated sandbox whose only writable directory is the workspace (/workspace)"
		if !t.cfg.Network {
			where += ", without network access"
		}
	}
	return fmt.Sprintf("Run a shell command (sh -c) %s and return its exit code and output. Time limit %s. A person approves each command.", where, t.cfg.Timeout)
}

// Schema implements Tool.
func (t *Tool) Schema() json.RawMessage {
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
func (t *Tool) Tier() tools.Tier { return tools.Danger }

// Runnable implements Tool. In the isolated mode the first call tries the
// sandbox once (a `true` inside it): a host without user namespaces or
// without bubblewrap makes the tool unrunnable, so a call is refused
// before any approval card, with the reason.
func (t *Tool) Runnable() error {
	switch t.cfg.Mode {
	case Host:
		return nil
	case Isolated:
		t.probeOnce.Do(func() { t.probeErr = t.probe() })
		return t.probeErr
	default:
		return errors.New("the shell is switched off (GATEHOUSE_SHELL=on enables it, isolated)")
	}
}

// Idempotent implements Tool: a command may do anything, twice.
func (t *Tool) Idempotent() bool { return false }

// Run implements Tool. The output is External: a command prints what files
// and servers hold.
func (t *Tool) Run(ctx context.Context, call tools.Call) (tools.Result, error) {
	if err := t.Runnable(); err != nil {
		return tools.ErrorResult("shell_exec cannot run: %v", err), nil
	}
	var a struct {
		Command string `json:"command"`
	}
	if err := json.Unmarshal(call.Arguments, &a); err != nil {
		return tools.ErrorResult("shell_exec: bad arguments: %v", err), nil
	}
	if strings.TrimSpace(a.Command) == "" {
		return tools.ErrorResult("shell_exec: the command is empty"), nil
	}
	if call.Workspace == "" || !filepath.IsAbs(call.Workspace) {
		return tools.ErrorResult("shell_exec: this turn has no workspace directory"), nil
	}
	if err := ctx.Err(); err != nil {
		return tools.ErrorResult("shell_exec: not run: %v", err), err
	}

	rctx, cancel := context.WithTimeout(ctx, t.cfg.Timeout)
	defer cancel()
	out := &cappedBuffer{max: t.cfg.MaxOutputBytes}
	var (
		cmd     *exec.Cmd
		cleanup = func() {}
	)
	if t.cfg.Mode == Isolated {
		var err error
		cmd, cleanup, err = t.sandboxed(rctx, call.Workspace, a.Command)
		if err != nil {
			return tools.ErrorResult("shell_exec: could not make the sandbox: %v", err), nil
		}
	} else {
		cmd = exec.CommandContext(rctx, t.cfg.Shell, "-c", a.Command)
		cmd.Dir = call.Workspace
		cmd.Env = t.env(call.Workspace)
		setProcessGroup(cmd)
		// What the command left running in its process group dies when it
		// returns (a child that made its own session escapes this: only
		// the isolated mode's PID namespace catches everything).
		cleanup = func() { killProcessGroup(cmd) }
	}
	defer cleanup()
	cmd.Stdout, cmd.Stderr = out, out
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
		return tools.ErrorResult("shell_exec: could not start %s: %v", cmd.Path, err), nil
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
	res := tools.Result{Content: b.String(), IsError: timedOut || ctx.Err() != nil, External: true}
	if ctx.Err() != nil {
		// Killed half way: what it did before is unknown.
		return res, ctx.Err()
	}
	return res, nil
}

// env is the command's whole environment; home is its HOME.
func (t *Tool) env(home string) []string {
	if t.cfg.Env != nil {
		return t.cfg.Env
	}
	return []string{
		"PATH=/usr/local/bin:/usr/bin:/bin",
		"HOME=" + home,
		"LANG=C.UTF-8",
		"TMPDIR=/tmp",
	}
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

// Isolation describes how commands run on this install, for the startup
// log and the admin: the sandbox, its process bound and its network.
func (t *Tool) Isolation() string {
	switch t.cfg.Mode {
	case Host:
		return "host: commands run as the gateway's user, unisolated"
	case Isolated:
		if err := t.Runnable(); err != nil {
			return err.Error()
		}
		procs := "processes bounded only by the time limit (no pids cgroup on this host)"
		if t.cgroups != "" {
			procs = fmt.Sprintf("at most %d processes (pids cgroup under %s)", t.cfg.MaxProcesses, t.cgroups)
		}
		network := "no network"
		if t.cfg.Network {
			network = "the host's network"
		}
		return fmt.Sprintf("isolated by %s: own PID, mount and user namespaces, only the workspace writable, %s, %s", t.cfg.Bubblewrap, network, procs)
	default:
		return "off"
	}
}

// Source implements tools.Sourced: a built-in whose commands run in the
// sandbox, on the host, or not at all (off; unavailable when asked for
// isolated and the sandbox cannot be made here).
func (t *Tool) Source() (server, isolation string) {
	switch {
	case t.cfg.Mode == Host:
		return "builtin", "host"
	case t.cfg.Mode != Isolated:
		return "builtin", "off"
	case t.Runnable() != nil:
		return "builtin", "unavailable"
	}
	return "builtin", "sandbox"
}
