//go:build linux

package main

import "golang.org/x/sys/unix"

// sealProcess marks the gateway non-dumpable, first thing. A process of
// the same user — an MCP server run "Isolation": "host", a shell command
// with GATEHOUSE_SHELL=host, anything else the gateway's user runs — could
// otherwise read /proc/<gateway>/environ (the API token, the model keys,
// the SMTP password), its memory and its descriptors, or ptrace it; a
// non-dumpable process's /proc entries belong to root and ptrace is
// refused. Programs the gateway starts are dumpable again after exec, so
// nothing of theirs changes. A failure is not fatal: the call only fails
// where prctl is filtered, and the sandbox still stands.
func sealProcess() error { return unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0) }
