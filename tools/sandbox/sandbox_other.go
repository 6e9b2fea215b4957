//go:build !linux

package sandbox

import (
	"context"
	"fmt"
	"os/exec"
)

var errNotLinux = fmt.Errorf("%w: the sandbox needs Linux namespaces (bubblewrap)", ErrUnavailable)

// Command fails here: see Probe.
func Command(context.Context, Spec) (*exec.Cmd, func(), error) { return nil, nil, errNotLinux }

// Probe says isolation is unavailable: there is no bubblewrap off Linux.
func Probe(context.Context, string) (string, error) { return "", errNotLinux }
