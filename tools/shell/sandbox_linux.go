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
)

// Why bubblewrap: see doc.go.

// sandboxUID is who the command runs as inside its user namespace. It maps
// to the gateway's own user outside, so the bind-mounted workspace stays
// writable, but inside it is not root and holds no capabilities.
const sandboxUID = "1000"

// sandboxEtc are the files of /etc a shell and its tools need (the dynamic
// linker's cache, certificates, name service, alternatives such as awk).
// The rest of /etc — where an operator may keep the gateway's config file
// with its keys — is not there.
var sandboxEtc = []string{
	"/etc/alternatives", "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d",
	"/etc/ssl", "/etc/ca-certificates", "/etc/nsswitch.conf", "/etc/hosts",
	"/etc/localtime", "/etc/mime.types", "/etc/protocols", "/etc/services",
}

func (t *Tool) probe() error {
	path, err := exec.LookPath(t.cfg.Bubblewrap)
	if err != nil {
		return fmt.Errorf("isolation is unavailable: bubblewrap (%s) was not found (install Debian's bubblewrap package, or set GATEHOUSE_SHELL=host to run commands without isolation, knowingly): %w", t.cfg.Bubblewrap, err)
	}
	t.cfg.Bubblewrap = path
	t.cgroups = t.findCgroup()
	ws, err := os.MkdirTemp("", "gatehouse-shell-probe")
	if err != nil {
		return fmt.Errorf("isolation is unavailable: %w", err)
	}
	defer os.RemoveAll(ws)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	// Inside, the shell is pid 2 of its own namespace (bubblewrap's init is 1).
	cmd, cleanup, err := t.sandboxed(ctx, ws, "test -w /workspace && test $$ -lt 10")
	if err != nil {
		return fmt.Errorf("isolation is unavailable: %w", err)
	}
	defer cleanup()
	out, err := cmd.CombinedOutput()
	if err != nil {
		msg := strings.TrimSpace(string(out))
		if len(msg) > 300 {
			msg = msg[:300] + "…"
		}
		return fmt.Errorf("isolation is unavailable: the sandbox could not start on this host (%v: %s); user namespaces may be disabled — see docs/security.md, or set GATEHOUSE_SHELL=host to run commands without isolation, knowingly", err, msg)
	}
	return nil
}

// sandboxed returns the command that runs command under bubblewrap with
// workspace bound at /workspace, and the cleanup to call after it ends.
func (t *Tool) sandboxed(ctx context.Context, workspace, command string) (*exec.Cmd, func(), error) {
	passwd, group, err := sandboxIdentity()
	if err != nil {
		return nil, nil, err
	}
	closeAll := func() { passwd.Close(); group.Close() }

	args := []string{
		"--unshare-all", // user, ipc, pid, net, uts, cgroup
		"--die-with-parent",
		"--new-session", // no controlling terminal to push keystrokes into
		"--cap-drop", "ALL",
		"--uid", sandboxUID, "--gid", sandboxUID,
		"--hostname", "sandbox",
	}
	if t.cfg.Network {
		args = append(args, "--share-net")
	}
	args = append(args, "--clearenv")
	for _, kv := range t.env("/workspace") {
		k, v, ok := strings.Cut(kv, "=")
		if ok && k != "" {
			args = append(args, "--setenv", k, v)
		}
	}
	args = append(args, "--ro-bind", "/usr", "/usr")
	// Merged-/usr systems have /bin → usr/bin and so on: keep the links.
	for _, d := range []string{"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"} {
		fi, err := os.Lstat(d)
		switch {
		case err != nil:
		case fi.Mode()&os.ModeSymlink != 0:
			if target, err := os.Readlink(d); err == nil {
				args = append(args, "--symlink", target, d)
			}
		case fi.IsDir():
			args = append(args, "--ro-bind", d, d)
		}
	}
	for _, p := range sandboxEtc {
		args = append(args, "--ro-bind-try", p, p)
	}
	args = append(args,
		"--ro-bind-data", "3", "/etc/passwd",
		"--ro-bind-data", "4", "/etc/group",
		"--proc", "/proc",
		"--dev", "/dev",
		// A bounded /tmp: without a size a tmpfs may take half the RAM.
		"--size", strconv.Itoa(sandboxTmpBytes), "--tmpfs", "/tmp",
		"--bind", workspace, "/workspace",
		"--chdir", "/workspace",
		t.cfg.Shell, "-c", command,
	)

	cgroup := ""
	if t.cgroups != "" {
		cgroup = filepath.Join(t.cgroups, "gatehouse-shell-"+randomHex(6))
		if err := makePidsCgroup(cgroup, t.cfg.MaxProcesses); err != nil {
			// The host let the probe make one; failing now is worth
			// refusing rather than running unbounded.
			closeAll()
			return nil, nil, err
		}
	}
	// A small host shell starts bubblewrap: it sets the umask every file
	// the command makes inherits (private to the gateway's user, like the
	// workspace), and joins the command's cgroup before it execs, so
	// everything the sandbox forks is counted from the start.
	sh, err := exec.LookPath("/bin/sh")
	if err != nil {
		closeAll()
		if cgroup != "" {
			os.Remove(cgroup)
		}
		return nil, nil, err
	}
	cmd := exec.CommandContext(ctx, sh, append([]string{"-c",
		`umask 077 && { [ -z "$0" ] || echo $$ > "$0/cgroup.procs"; } && exec "$@"`, cgroup, t.cfg.Bubblewrap}, args...)...)
	// bubblewrap's own environment is what /proc/1/environ shows inside the
	// sandbox: give it nothing of the gateway's.
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin"}
	cmd.Dir = "/"
	cmd.ExtraFiles = []*os.File{passwd, group}
	closeInheritedOnExec()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error {
		killCgroup(cgroup)
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	cleanup := func() {
		closeAll()
		if cmd.Process != nil {
			// The sandbox's init already took its namespace down with it;
			// this reaps anything that escaped into the process group.
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
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

// sandboxIdentity returns pipes that hold the sandbox's /etc/passwd and
// /etc/group, so `id` and `whoami` name the sandbox user rather than
// nobody, and the host's account list is not shown.
func sandboxIdentity() (passwd, group *os.File, err error) {
	data := func(s string) (*os.File, error) {
		r, w, err := os.Pipe()
		if err != nil {
			return nil, err
		}
		// Far below a pipe's buffer: the write cannot block.
		_, err = w.WriteString(s)
		w.Close()
		if err != nil {
			r.Close()
			return nil, err
		}
		return r, nil
	}
	if passwd, err = data("sandbox:x:" + sandboxUID + ":" + sandboxUID + ":sandbox:/workspace:/bin/sh\n"); err != nil {
		return nil, nil, err
	}
	if group, err = data("sandbox:x:" + sandboxUID + ":\n"); err != nil {
		passwd.Close()
		return nil, nil, err
	}
	return passwd, group, nil
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
