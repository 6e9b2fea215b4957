//go:build linux

package sandbox_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/tools/sandbox"
)

// needSandbox skips where this host cannot make one, saying why.
func needSandbox(t *testing.T) string {
	t.Helper()
	path, err := sandbox.Probe(context.Background(), "bwrap")
	if err != nil {
		t.Skipf("no sandbox on this host: %v", err)
	}
	return path
}

func run(t *testing.T, spec sandbox.Spec) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd, cleanup, err := sandbox.Command(ctx, spec)
	if err != nil {
		t.Fatalf("Command: %v", err)
	}
	defer cleanup()
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func TestProbeWithoutBubblewrapIsUnavailable(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-bwrap-here")
	_, err := sandbox.Probe(context.Background(), missing)
	if !errors.Is(err, sandbox.ErrUnavailable) || !strings.Contains(err.Error(), missing) {
		t.Fatalf("Probe(%s) = %v, want ErrUnavailable naming the program", missing, err)
	}
	if _, _, err := sandbox.Command(context.Background(), sandbox.Spec{Bubblewrap: missing, Args: []string{"true"}}); !errors.Is(err, sandbox.ErrUnavailable) {
		t.Fatalf("Command with a missing bwrap = %v, want ErrUnavailable", err)
	}
}

func TestIsolatedProgramSeesNoneOfTheGatewaysProcessesEnvironmentOrFiles(t *testing.T) {
	bwrap := needSandbox(t)
	const secret = "sandbox-test-secret-5b1f0c"
	t.Setenv("GATEHOUSE_API_TOKEN", secret)
	private := t.TempDir()
	if err := os.WriteFile(filepath.Join(private, "key"), []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	shown := t.TempDir()
	if err := os.WriteFile(filepath.Join(shown, "ok"), []byte("visible"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := `
cat /proc/*/environ /proc/*/cmdline 2>/dev/null | tr '\0' '\n'
echo "procs: $(ls -d /proc/[0-9]* | wc -l)"
echo "ppid-environ: $(cat /proc/` + strconv.Itoa(os.Getpid()) + `/environ 2>&1 | tr '\0' ' ')"
cat ` + filepath.Join(private, "key") + ` 2>&1
cat ` + filepath.Join(shown, "ok") + `
echo > ` + filepath.Join(shown, "written") + ` 2>&1 || echo "read-only"
echo "id: $(id -u) $(id -un)"
test -d /home/sandbox && echo "home: ok"
`
	out, err := run(t, sandbox.Spec{
		Bubblewrap: bwrap,
		Args:       []string{"/bin/sh", "-c", script},
		Env:        []string{"PATH=/usr/bin:/bin", "HOME=/home/sandbox"},
		Binds:      []sandbox.Bind{{Host: shown}},
		Tmpfs:      []string{"/home/sandbox"},
		Home:       "/home/sandbox",
	})
	if err != nil {
		t.Fatalf("sandboxed script: %v\n%s", err, out)
	}
	if strings.Contains(out, secret) {
		t.Fatalf("the sandbox found the gateway's secret:\n%s", out)
	}
	for _, want := range []string{"visible", "read-only", "id: 1000 sandbox", "home: ok"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// bwrap's init, the shell and what it runs: a handful, not the host's.
	for _, line := range strings.Split(out, "\n") {
		if n, ok := strings.CutPrefix(line, "procs: "); ok {
			if k, _ := strconv.Atoi(strings.TrimSpace(n)); k == 0 || k > 8 {
				t.Errorf("the sandbox sees %s processes, want only its own", n)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(shown, "written")); err == nil {
		t.Error("a read-only bind was written")
	}
}

func TestNetworkOnlyWhenAsked(t *testing.T) {
	bwrap := needSandbox(t)
	// Inside a network namespace of its own there is only a loopback that
	// is down: no interface but lo.
	count := `cat /proc/net/dev | tail -n +3 | wc -l`
	off, err := run(t, sandbox.Spec{Bubblewrap: bwrap, Args: []string{"/bin/sh", "-c", count}})
	if err != nil {
		t.Fatalf("%v: %s", err, off)
	}
	hostIfs, err := exec.Command("/bin/sh", "-c", count).Output()
	if err != nil {
		t.Fatal(err)
	}
	on, err := run(t, sandbox.Spec{Bubblewrap: bwrap, Network: true, Args: []string{"/bin/sh", "-c", count}})
	if err != nil {
		t.Fatalf("%v: %s", err, on)
	}
	if strings.TrimSpace(off) != "1" {
		t.Errorf("without Network the sandbox has %s interfaces, want lo only", strings.TrimSpace(off))
	}
	if strings.TrimSpace(on) != strings.TrimSpace(string(hostIfs)) {
		t.Errorf("with Network the sandbox has %s interfaces, the host %s", strings.TrimSpace(on), strings.TrimSpace(string(hostIfs)))
	}
}
