//go:build !linux

package shell

import (
	"context"
	"errors"
	"os/exec"
)

func (t *ShellExec) probe() error {
	return errors.New("isolation is unavailable: the sandbox needs Linux namespaces (bubblewrap); set GATEHOUSE_SHELL=host to run commands without isolation, knowingly")
}

func (t *ShellExec) sandboxed(context.Context, string, string) (*exec.Cmd, func(), error) {
	return nil, nil, t.probe()
}
