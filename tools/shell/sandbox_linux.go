//go:build linux

package shell

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gatehouse/gatehouse/tools/sandbox"
)

// Why bubblewrap: see tools/sandbox.

func (t *Tool) probe() error {
	path, err := sandbox.Probe(context.Background(), t.cfg.Bubblewrap)
	if err != nil {
		return fmt.Errorf("%w; or set GATEHOUSE_SHELL=host to run commands without isolation, knowingly", err)
	}
	t.cfg.Bubblewrap = path
	t.cgroups = t.findCgroup()
	ws, err := os.MkdirTemp("", "gatehouse-shell-probe")
	if err != nil {
		return fmt.Errorf("%w: %v", sandbox.ErrUnavailable, err)
	}
	defer os.RemoveAll(ws)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	cmd, cleanup, err := t.sandboxed(ctx, ws, "test -w /workspace")
	if err != nil {
		return fmt.Errorf("%w: %v", sandbox.ErrUnavailable, err)
	}
	defer cleanup()
	if out, err := cmd.CombinedOutput(); err != nil {
		msg := strings.TrimSpace(string(out))
		if len(msg) > 300 {
			msg = msg[:300] + "…"
		}
		return fmt.Errorf("%w: the workspace is not writable in the sandbox (%v: %s); see docs/security.md, or set GATEHOUSE_SHELL=host to run commands without isolation, knowingly", sandbox.ErrUnavailable, err, msg)
	}
	return nil
}

// sandboxed returns the command that runs command under bubblewrap
// (tools/sandbox) with workspace bound writable at /workspace, and the
// cleanup to call after it ends.
func (t *Tool) sandboxed(ctx context.Context, workspace, command string) (*exec.Cmd, func(), error) {
	cgroup := ""
	if t.cgroups != "" {
		cgroup = filepath.Join(t.cgroups, "gatehouse-shell-"+randomHex(6))
		if err := makePidsCgroup(cgroup, t.cfg.MaxProcesses); err != nil {
			// The host let the probe make one; failing now is worth
			// refusing rather than running unbounded.
			return nil, nil, err
		}
	}
	cmd, done, err := sandbox.Command(ctx, sandbox.Spec{
		Bubblewrap: t.cfg.Bubblewrap,
		Args:       []string{t.cfg.Shell, "-c", command},
		Env:        t.env("/workspace"),
		Network:    t.cfg.Network,
		Binds:      []sandbox.Bind{{Host: workspace, Inside: "/workspace", Writable: true}},
		Dir:        "/workspace",
		Cgroup:     cgroup,
		TmpfsBytes: sandboxTmpBytes,
	})
	if err != nil {
		if cgroup != "" {
			os.Remove(cgroup)
		}
		return nil, nil, err
	}
	killGroup := cmd.Cancel
	cmd.Cancel = func() error {
		killCgroup(cgroup)
		return killGroup()
	}
	cleanup := func() {
		done()
		if cgroup != "" {
			removeCgroup(cgroup)
		}
		resealWorkspace(workspace)
	}
	return cmd, cleanup, nil
}

// sandboxTmpBytes bounds the sandbox's /tmp.
const sandboxTmpBytes = 256 << 20

// resealWorkspace undoes what a command may have done to expose the
// workspace to other local users: inside, the sandbox user is the
// gateway's user outside, so it may chmod the workspace open or leave a
// set-user-id program in it for someone else to run as the gateway. The
// root goes back to 0700 and set-id bits are cleared everywhere below it.
func resealWorkspace(root string) {
	if fi, err := os.Lstat(root); err != nil || !fi.IsDir() {
		return
	}
	os.Chmod(root, 0o700)
	filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.Type()&os.ModeSymlink != 0 {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		if m := fi.Mode(); m&(os.ModeSetuid|os.ModeSetgid|os.ModeSticky) != 0 {
			os.Chmod(path, m.Perm())
		}
		return nil
	})
}

// findCgroup returns the pids cgroup under which commands get their own,
// or "" when this host gives none.
func (t *Tool) findCgroup() string {
	if t.cfg.CgroupDir == "off" {
		return ""
	}
	candidates := []string{t.cfg.CgroupDir}
	if t.cfg.CgroupDir == "" {
		candidates = ownPidsCgroups()
	}
	for _, dir := range candidates {
		probe := filepath.Join(dir, "gatehouse-shell-probe-"+randomHex(4))
		if err := makePidsCgroup(probe, 1); err != nil {
			continue
		}
		removeCgroup(probe)
		return dir
	}
	return ""
}

// ownPidsCgroups lists where the gateway's own pids cgroup is mounted:
// the v1 pids hierarchy, then the v2 unified one.
func ownPidsCgroups() []string {
	f, err := os.Open("/proc/self/cgroup")
	if err != nil {
		return nil
	}
	defer f.Close()
	var v1, v2 []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			if c == "pids" {
				v1 = append(v1, filepath.Join("/sys/fs/cgroup/pids", parts[2]))
			}
		}
		if parts[0] == "0" && parts[1] == "" {
			v2 = append(v2, filepath.Join("/sys/fs/cgroup", parts[2]), filepath.Join("/sys/fs/cgroup/unified", parts[2]))
		}
	}
	return append(v1, v2...)
}

func makePidsCgroup(dir string, maxProcs int) error {
	if err := os.Mkdir(dir, 0o700); err != nil {
		return fmt.Errorf("pids cgroup %s: %w", dir, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "pids.max"), []byte(strconv.Itoa(maxProcs)), 0o644); err != nil {
		os.Remove(dir)
		return fmt.Errorf("pids cgroup %s: %w", dir, err)
	}
	return nil
}

// killCgroup kills every process left in a command's cgroup.
func killCgroup(dir string) {
	if dir == "" {
		return
	}
	raw, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return
	}
	for _, f := range strings.Fields(string(raw)) {
		if pid, err := strconv.Atoi(f); err == nil && pid > 0 {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// removeCgroup empties and removes a command's cgroup. A cgroup with a
// process in it cannot be removed, and killed processes take a moment to
// leave it.
func removeCgroup(dir string) {
	for i := 0; i < 100; i++ {
		killCgroup(dir)
		err := os.Remove(dir)
		if err == nil || errors.Is(err, os.ErrNotExist) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
