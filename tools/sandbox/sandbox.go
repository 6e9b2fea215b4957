package sandbox

import (
	"errors"
)

// ErrUnavailable is wrapped by every error that says isolation cannot be
// had on this host: no bubblewrap, user namespaces refused, not Linux.
var ErrUnavailable = errors.New("isolation is unavailable")

// User is who the program runs as inside its user namespace. It maps to
// the gateway's own user outside (root or not), so what the caller binds
// writable stays writable, but inside it is not root and holds no
// capabilities.
const User = "sandbox"

// UID is User's uid and gid inside.
const UID = 1000

// Bind is a host path made visible inside.
type Bind struct {
	// Host is the path on the host.
	Host string
	// Inside is where it appears. Defaults to Host.
	Inside string
	// Writable binds it read-write. Defaults to read-only.
	Writable bool
	// Try skips a Host that does not exist instead of failing.
	Try bool
}

// Spec is one sandboxed program.
type Spec struct {
	// Bubblewrap is the bwrap binary (a path, or a name looked up in
	// PATH). Defaults to "bwrap".
	Bubblewrap string
	// Args is the program and its arguments, as seen inside (the program
	// is looked up in Env's PATH inside). Required.
	Args []string
	// Env is the program's whole environment. Defaults to none. bubblewrap
	// itself gets only a PATH, since its environment is what the
	// sandbox's /proc/1/environ shows.
	Env []string
	// Network gives the sandbox the host's network namespace. Defaults to
	// false: a network namespace of its own with nothing in it, so it
	// cannot reach the gateway's API on loopback, a database or the LAN.
	Network bool
	// Binds are the host paths it sees besides /usr and the /etc files of
	// etcFiles, in order (a later bind may sit inside an earlier one).
	Binds []Bind
	// Tmpfs are private, size-bounded tmpfs directories made inside (its
	// HOME, say). /tmp always is one.
	Tmpfs []string
	// Dir is the working directory inside. Defaults to "/".
	Dir string
	// Home is User's home directory in the sandbox's /etc/passwd.
	// Defaults to Dir.
	Home string
	// Hostname is the sandbox's host name. Defaults to "sandbox".
	Hostname string
	// Cgroup, when set, is a cgroup directory the sandbox joins before
	// bubblewrap starts, so everything in it is counted from the start.
	Cgroup string
	// TmpfsBytes bounds each tmpfs (/tmp and Tmpfs). Defaults to 256 MiB:
	// without a size a tmpfs may take half the RAM.
	TmpfsBytes int
}
