// Package sandbox runs a program under bubblewrap, isolated from the
// gateway: its own user, PID, mount, IPC, UTS, cgroup and (unless asked
// otherwise) network namespaces, a fresh /proc that shows only its own
// processes, no capabilities, a clean environment, and of the host's files
// only /usr, the few /etc files programs need and the paths the caller
// binds. It is the one home of that invocation: shell_exec (tools/shell)
// runs each command in it and a stdio MCP server (tools/mcp) runs in it for
// its whole life.
//
// Why bubblewrap rather than namespaces set up by hand through SysProcAttr:
// a fresh /proc for a new PID namespace, a tmpfs root with read-only binds
// and the dropping of capabilities all have to happen in the child between
// clone and exec, which Go's os/exec cannot run code in. bubblewrap does
// exactly that, is what Flatpak runs on, and is one Debian package.
//
// Why a PID namespace matters as much as the clean environment: a process
// that runs as the gateway's user and sees the host's /proc can read
// /proc/<gateway>/environ — the API token, the model keys, the SMTP
// password — whatever environment it was itself given. Inside, /proc lists
// the sandbox's processes only.
//
// Where the sandbox cannot be made (no bubblewrap, user namespaces refused
// by the kernel or a container's seccomp profile, not Linux) Probe says so
// with an error wrapping ErrUnavailable; callers refuse to run rather than
// run unisolated, unless the operator said "host".
//
// SealInheritedDescriptors marks the descriptors the gateway inherited
// close-on-exec, so no child (sandboxed or not) gets them.
package sandbox
