//go:build linux

package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// etcFiles are the files of /etc a program and its tools need (the dynamic
// linker's cache, certificates, name service, alternatives such as awk).
// The rest of /etc — where an operator may keep the gateway's config file
// with its keys — is not there.
var etcFiles = []string{
	"/etc/alternatives", "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d",
	"/etc/ssl", "/etc/ca-certificates", "/etc/nsswitch.conf", "/etc/hosts",
	"/etc/resolv.conf", "/etc/localtime", "/etc/mime.types", "/etc/protocols",
	"/etc/services",
}

// Command returns the command that runs spec under bubblewrap, and the
// cleanup to call after it ends (it kills what is left of its process
// group and closes the descriptors that carry /etc/passwd and /etc/group).
// ctx kills the sandbox when done, as exec.CommandContext does; a program
// that must outlive ctx is given context.Background() and ended by the
// caller. The command is not started.
func Command(ctx context.Context, spec Spec) (*exec.Cmd, func(), error) {
	if len(spec.Args) == 0 {
		return nil, nil, errors.New("sandbox: no program to run")
	}
	bwrap, err := lookBubblewrap(spec.Bubblewrap)
	if err != nil {
		return nil, nil, err
	}
	if spec.Dir == "" {
		spec.Dir = "/"
	}
	if spec.Home == "" {
		spec.Home = spec.Dir
	}
	if spec.Hostname == "" {
		spec.Hostname = "sandbox"
	}
	if spec.TmpfsBytes <= 0 {
		spec.TmpfsBytes = 256 << 20
	}
	passwd, group, err := identity(spec.Home)
	if err != nil {
		return nil, nil, err
	}
	closeAll := func() { passwd.Close(); group.Close() }

	uid := strconv.Itoa(UID)
	args := []string{
		"--unshare-all", // user, ipc, pid, net, uts, cgroup
		"--die-with-parent",
		"--new-session", // no controlling terminal to push keystrokes into
		"--cap-drop", "ALL",
		"--uid", uid, "--gid", uid,
		"--hostname", spec.Hostname,
	}
	if spec.Network {
		args = append(args, "--share-net")
	}
	args = append(args, "--clearenv")
	for _, kv := range spec.Env {
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
	for _, p := range etcFiles {
		args = append(args, "--ro-bind-try", p, p)
	}
	size := strconv.Itoa(spec.TmpfsBytes)
	args = append(args,
		"--ro-bind-data", "3", "/etc/passwd",
		"--ro-bind-data", "4", "/etc/group",
		"--proc", "/proc",
		"--dev", "/dev",
		"--size", size, "--tmpfs", "/tmp",
	)
	for _, d := range spec.Tmpfs {
		args = append(args, "--size", size, "--tmpfs", d)
	}
	for _, b := range spec.Binds {
		inside := b.Inside
		if inside == "" {
			inside = b.Host
		}
		opt := "--ro-bind"
		if b.Writable {
			opt = "--bind"
		}
		if b.Try {
			opt += "-try"
		}
		args = append(args, opt, b.Host, inside)
	}
	args = append(args, "--chdir", spec.Dir, "--")
	args = append(args, spec.Args...)

	// A small host shell starts bubblewrap: it sets the umask every file
	// the program makes inherits (private to the gateway's user), and
	// joins the cgroup before it execs, so everything the sandbox forks is
	// counted from the start.
	sh, err := exec.LookPath("/bin/sh")
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	cmd := exec.CommandContext(ctx, sh, append([]string{"-c",
		`umask 077 && { [ -z "$0" ] || echo $$ > "$0/cgroup.procs"; } && exec "$@"`, spec.Cgroup, bwrap}, args...)...)
	// bubblewrap's own environment is what /proc/1/environ shows inside the
	// sandbox: give it nothing of the gateway's.
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin"}
	cmd.Dir = "/"
	cmd.ExtraFiles = []*os.File{passwd, group}
	SealInheritedDescriptors()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cleanup := func() {
		closeAll()
		if cmd.Process != nil {
			// The sandbox's init already took its namespace down with it;
			// this reaps anything that escaped into the process group.
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
	}
	return cmd, cleanup, nil
}

func lookBubblewrap(bwrap string) (string, error) {
	if bwrap == "" {
		bwrap = "bwrap"
	}
	path, err := exec.LookPath(bwrap)
	if err != nil {
		return "", fmt.Errorf("%w: bubblewrap (%s) was not found (install Debian's bubblewrap package): %v", ErrUnavailable, bwrap, err)
	}
	return path, nil
}

var probes sync.Map // bwrap as given → *probeResult

type probeResult struct {
	once sync.Once
	path string
	err  error
}

// Probe says whether a sandbox can be made here with bwrap: it runs a
// shell in one and checks it is in a PID namespace of its own. It returns
// bwrap's path, or an error wrapping ErrUnavailable with the reason. The
// answer is kept per bwrap for the life of the process: user namespaces do
// not come and go.
func Probe(ctx context.Context, bwrap string) (string, error) {
	v, _ := probes.LoadOrStore(bwrap, &probeResult{})
	p := v.(*probeResult)
	p.once.Do(func() { p.path, p.err = probe(context.WithoutCancel(ctx), bwrap) })
	return p.path, p.err
}

func probe(ctx context.Context, bwrap string) (string, error) {
	path, err := lookBubblewrap(bwrap)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	// Inside, the shell is pid 2 of its own namespace (bubblewrap's init is 1).
	cmd, cleanup, err := Command(ctx, Spec{Bubblewrap: path, Args: []string{"/bin/sh", "-c", "test $$ -lt 10"}})
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	defer cleanup()
	if out, err := cmd.CombinedOutput(); err != nil {
		msg := strings.TrimSpace(string(out))
		if len(msg) > 300 {
			msg = msg[:300] + "…"
		}
		return "", fmt.Errorf("%w: the sandbox could not start on this host (%v: %s); user namespaces may be disabled — see docs/security.md", ErrUnavailable, err, msg)
	}
	return path, nil
}

// identity returns pipes that hold the sandbox's /etc/passwd and
// /etc/group, so `id` and `whoami` name the sandbox user rather than
// nobody, and the host's account list is not shown.
func identity(home string) (passwd, group *os.File, err error) {
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
	uid := strconv.Itoa(UID)
	if passwd, err = data(User + ":x:" + uid + ":" + uid + ":" + User + ":" + home + ":/bin/sh\n"); err != nil {
		return nil, nil, err
	}
	if group, err = data(User + ":x:" + uid + ":\n"); err != nil {
		passwd.Close()
		return nil, nil, err
	}
	return passwd, group, nil
}
