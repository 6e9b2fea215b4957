//go:build !linux

package guard

import (
	"context"
	"log/slog"
	"os/exec"
)

// reaper reaps orphans on Linux only (see reap_linux.go); elsewhere the
// guard is never a container's PID 1, and it is always nil.
type reaper struct{}

func newReaper(*slog.Logger) *reaper { return nil }

func (r *reaper) start(cmd *exec.Cmd) error { return cmd.Start() }
func (r *reaper) waited(int)                {}
func (r *reaper) run(context.Context)       {}
