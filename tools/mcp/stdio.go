package mcp

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/tools/sandbox"
)

// How a stdio server runs (MCPServer.Isolation).
const (
	// IsolationSandbox runs the server under bubblewrap (tools/sandbox):
	// its own PID namespace and /proc, so it cannot read the gateway's
	// /proc/<pid>/environ; none of the gateway's files but what
	// stdioBinds names; no network unless MCPServer.Network. The default.
	IsolationSandbox = "sandbox"
	// IsolationHost runs the server as a plain subprocess with the
	// gateway's user, files, processes and network: only its environment
	// is scrubbed. For a server that cannot run isolated, knowingly.
	IsolationHost = "host"
)

// Isolation as reported by Isolations besides the two above.
const (
	// IsolationRefused: isolated by config, isolation unavailable here, so
	// the server is not started.
	IsolationRefused = "refused"
	// IsolationRemote: a server reached by URL; nothing runs here.
	IsolationRemote = "remote"
)

// sandboxHome is a stdio server's HOME inside the sandbox: a private
// tmpfs, so a server that caches in ~ works and keeps nothing.
const sandboxHome = "/home/" + sandbox.User

// ServerIsolation is how one configured server runs, for the start log and
// GET /v1/info.
type ServerIsolation struct {
	Name string `json:"name"`
	// Isolation is sandbox, host, refused or remote.
	Isolation string `json:"isolation"`
	// Network says whether the server can reach the network (always for
	// host and remote).
	Network bool `json:"network"`
	// Reason is why a server was refused.
	Reason string `json:"reason,omitempty"`
}

// Isolations says how each of cfg's servers runs (or would): it probes the
// sandbox once, as Connect does.
func Isolations(ctx context.Context, cfg Config) []ServerIsolation {
	out := make([]ServerIsolation, 0, len(cfg.Servers))
	for _, srv := range cfg.Servers {
		si := ServerIsolation{Name: srv.Name, Isolation: srv.isolation(), Network: true}
		switch {
		case len(srv.Command) == 0:
			si.Isolation = IsolationRemote
		case si.Isolation == IsolationSandbox:
			si.Network = srv.Network
			if _, err := sandbox.Probe(ctx, cfg.Bubblewrap); err != nil {
				si.Isolation, si.Reason = IsolationRefused, errIsolationUnavailable(err).Error()
			}
		}
		out = append(out, si)
	}
	return out
}

func (srv MCPServer) isolation() string {
	if srv.Isolation == "" {
		return IsolationSandbox
	}
	return srv.Isolation
}

// errIsolationUnavailable is the refusal of an isolated stdio server where
// the sandbox cannot be made: it wraps sandbox.ErrUnavailable and names the
// setting that would run it anyway.
func errIsolationUnavailable(cause error) error {
	return gh.Wrap(gh.CodeUnavailable, cause, `not started: a stdio server runs isolated and isolation is unavailable on this host; set "Isolation": "host" in its config to run it unisolated as the gateway's user, knowingly`)
}

// stdioCommand is the command that runs srv, and the cleanup to call when
// the server is done with. Not exec.CommandContext: ctx only bounds
// connecting, the server lives until Close.
func stdioCommand(ctx context.Context, cfg Config, srv MCPServer) (*exec.Cmd, func(), error) {
	switch srv.isolation() {
	case IsolationHost:
		cmd := exec.Command(srv.Command[0], srv.Command[1:]...)
		cmd.Env = serverEnv(cfg.BaseEnv, srv.Env)
		cmd.Dir = srv.Dir
		return cmd, func() {}, nil
	case IsolationSandbox:
	default:
		return nil, nil, gh.Errorf(gh.CodeInvalid, "Isolation %q: want %q (the default) or %q", srv.Isolation, IsolationSandbox, IsolationHost)
	}
	bwrap, err := sandbox.Probe(ctx, cfg.Bubblewrap)
	if err != nil {
		return nil, nil, errIsolationUnavailable(err)
	}
	env := sandboxEnv(cfg.BaseEnv, srv.Env)
	args, binds, err := stdioBinds(srv, envPath(env))
	if err != nil {
		return nil, nil, gh.Wrap(gh.CodeInvalid, err, "cannot run the server isolated")
	}
	dir := srv.Dir
	if dir == "" {
		dir = sandboxHome
	}
	return sandbox.Command(context.Background(), sandbox.Spec{
		Bubblewrap: bwrap,
		Args:       args,
		Env:        env,
		Network:    srv.Network,
		Binds:      binds,
		Tmpfs:      []string{sandboxHome},
		Dir:        dir,
		Home:       sandboxHome,
		Hostname:   "mcp-" + srv.Name,
	})
}

// sandboxEnv is an isolated server's environment: serverEnv's, with HOME
// and TMPDIR pointing at its private tmpfs rather than host paths it cannot
// see; its own entries still win.
func sandboxEnv(base, own []string) []string {
	var env []string
	for _, kv := range serverEnv(base, nil) {
		if k, _, _ := strings.Cut(kv, "="); k != "HOME" && k != "TMPDIR" {
			env = append(env, kv)
		}
	}
	env = append(env, "HOME="+sandboxHome, "TMPDIR=/tmp")
	return append(env, own...)
}

// envPath is the PATH of env (its last entry wins, as in exec).
func envPath(env []string) string {
	path := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	return path
}

// stdioBinds works out what an isolated server needs to see, so servers
// installed the usual ways start: /usr is always there (node, python3 and
// most interpreters from packages); a program elsewhere (a Go binary in
// ~/go/bin, node under /opt/node/bin) gets its directory, and the lib
// directory beside a bin directory (an interpreter's own modules); a file
// or directory named by an absolute argument (the script of
// `node /srv/mcp/server.js`) is bound itself, not its directory; the
// server's Dir; and its ReadOnly and Writable paths. Symlinks are
// resolved, and a link is bound where it is named. Everything but Writable
// is read-only. It returns the argv to run inside: the program by its
// absolute path, relative script paths made absolute when the server has
// no Dir.
func stdioBinds(srv MCPServer, path string) ([]string, []sandbox.Bind, error) {
	var binds []sandbox.Bind
	seen := map[string]bool{}
	add := func(p string, writable bool) error {
		abs, err := filepath.Abs(p)
		if err != nil {
			return err
		}
		real, err := filepath.EvalSymlinks(abs)
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		if abs == "/" || real == "/" {
			return fmt.Errorf("%s: will not bind the host's root", p)
		}
		if (under(abs, "/usr") && under(real, "/usr")) || seen[abs] {
			return nil
		}
		seen[abs] = true
		binds = append(binds, sandbox.Bind{Host: real, Inside: abs, Writable: writable})
		return nil
	}

	prog, err := findProgram(srv.Command[0], srv.Dir, path)
	if err != nil {
		return nil, nil, err
	}
	real, err := filepath.EvalSymlinks(prog)
	if err != nil {
		return nil, nil, err
	}
	for _, p := range []string{prog, real} {
		dir := filepath.Dir(p)
		if err := add(dir, false); err != nil {
			return nil, nil, err
		}
		if filepath.Base(dir) == "bin" {
			for _, lib := range []string{"lib", "lib64"} {
				if l := filepath.Join(filepath.Dir(dir), lib); isDir(l) {
					if err := add(l, false); err != nil {
						return nil, nil, err
					}
				}
			}
		}
	}
	args := []string{prog}
	for _, a := range srv.Command[1:] {
		p := a
		if !filepath.IsAbs(p) && srv.Dir == "" && strings.Contains(p, "/") {
			p, _ = filepath.Abs(p)
		}
		if filepath.IsAbs(p) {
			if _, err := os.Stat(p); err == nil {
				if err := add(p, false); err != nil {
					return nil, nil, err
				}
				a = p
			}
		}
		args = append(args, a)
	}
	if srv.Dir != "" {
		if err := add(srv.Dir, false); err != nil {
			return nil, nil, fmt.Errorf("Dir: %w", err)
		}
	}
	for _, p := range srv.ReadOnly {
		if err := add(p, false); err != nil {
			return nil, nil, fmt.Errorf("ReadOnly: %w", err)
		}
	}
	for _, p := range srv.Writable {
		if err := add(p, true); err != nil {
			return nil, nil, fmt.Errorf("Writable: %w", err)
		}
	}
	return args, binds, nil
}

// findProgram is the absolute path of the program name, as exec would
// find it: relative to dir when it has a slash, else in path (the
// server's PATH, not the gateway's).
func findProgram(name, dir, path string) (string, error) {
	if strings.Contains(name, "/") {
		if !filepath.IsAbs(name) && dir != "" {
			name = filepath.Join(dir, name)
		}
		p, err := exec.LookPath(name)
		if err != nil {
			return "", err
		}
		return filepath.Abs(p)
	}
	for _, d := range filepath.SplitList(path) {
		if !filepath.IsAbs(d) {
			continue // "." and "" in PATH mean the gateway's cwd: not here
		}
		if p, err := exec.LookPath(filepath.Join(d, name)); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: %q not in the server's PATH (%s)", exec.ErrNotFound, name, path)
}

func under(p, root string) bool {
	return p == root || strings.HasPrefix(p, root+"/")
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}
