// Package shell owns the shell_exec tool: a Danger tool that runs one
// command in the turn's workspace, with output capped, a time limit and the
// whole process tree killed when it ends (shell.go, shell_unix.go). In
// isolated mode (Isolated, GATEHOUSE_SHELL=on) the command runs in a
// bubblewrap sandbox (tools/sandbox; sandbox_linux.go binds the workspace)
// that sees only the workspace: no keys, no view of the gateway's
// processes, no network unless Config.Network, a bounded number of
// processes. Where isolation is unavailable the tool says so; Host runs
// commands unisolated, knowingly.
//
// What bubblewrap does not do — bound the number of processes — a pids
// cgroup made per command does (sandbox_linux.go).
package shell
