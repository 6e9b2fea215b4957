// Package shell owns the shell_exec tool: a Danger tool that runs one
// command in the turn's workspace, with output capped, a time limit and the
// whole process tree killed when it ends (shell.go, shell_unix.go). In
// isolated mode (ShellIsolated, GATEHOUSE_SHELL=on) the command runs in a
// bubblewrap sandbox (sandbox_linux.go) that sees only the workspace: no
// keys, no network unless ShellConfig.Network, a bounded number of
// processes. Off Linux isolation is unavailable and the tool says so
// (sandbox_other.go); ShellHost runs commands unisolated, knowingly.
//
// The sandbox is bubblewrap rather than namespaces set up by hand through
// SysProcAttr: a fresh /proc for a new PID namespace, a tmpfs root with
// read-only binds and the dropping of capabilities all have to happen in
// the child between clone and exec, which Go's os/exec cannot run code in.
// bubblewrap does exactly that, is what Flatpak runs on, and is one Debian
// package. What it does not do — bound the number of processes — a pids
// cgroup made per command does.
//
// SealInheritedDescriptors marks the descriptors the gateway inherited
// close-on-exec, so no child (a shell command, an MCP server) gets them.
package shell
