package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/gatehouse/gatehouse/cmd/gatehouse/internal/config"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/internal/testing/testenv"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// binary builds the gatehouse command once per test run.
func binary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "gatehouse-bin")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "gatehouse")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// syncBuffer is a bytes.Buffer safe for the process's writer goroutine and
// the test reading it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

type proc struct {
	cmd  *exec.Cmd
	out  *syncBuffer
	addr string
	done chan error
}

func start(t *testing.T, extraEnv ...string) *proc {
	t.Helper()
	return launch(t, exec.Command(binary(t), "serve"), extraEnv...)
}

// launch runs cmd (the gateway, or a wrapper that execs it) on a free
// loopback address and a fresh data directory, and waits until it answers
// /healthz. The process is killed when the test ends.
func launch(t *testing.T, cmd *exec.Cmd, extraEnv ...string) *proc {
	t.Helper()
	addr := freeAddr(t)
	cmd.Env = append(os.Environ(), "GATEHOUSE_ADDR="+addr, "GATEHOUSE_DATA_DIR="+filepath.Join(t.TempDir(), "data"))
	cmd.Env = append(cmd.Env, extraEnv...)
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: cmd, out: out, addr: addr, done: make(chan error, 1)}
	go func() { p.done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		if t.Failed() {
			t.Logf("gatehouse output:\n%s", out.String())
		}
	})
	waitUntil(t, "the gateway answering /healthz", func() bool {
		select {
		case err := <-p.done:
			t.Fatalf("gatehouse exited before answering: %v\n%s", err, out.String())
		default:
		}
		// No keep-alive: an idle probe connection would hold one of the
		// gateway's files, which the limit tests count.
		resp, err := noKeepAlive.Get("http://" + addr + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	return p
}

func get(t *testing.T, url string) (int, map[string]string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]string
	_ = json.NewDecoder(resp.Body).Decode(&body)
	return resp.StatusCode, body
}

func (p *proc) stopWith(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.done:
		if err != nil {
			t.Fatalf("exit after %v: %v\n%s", sig, err, p.out.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("no exit after %v", sig)
	}
}

func TestServeOnSQLiteAnswersAndDrainsOnSIGTERM(t *testing.T) {
	p := start(t)
	if code, body := get(t, "http://"+p.addr+"/readyz"); code != 200 || body["status"] != "ready" {
		t.Fatalf("readyz: %d %v", code, body)
	}
	if code, body := get(t, "http://"+p.addr+"/no/such/route"); code != 404 || body["code"] != "not-found" {
		t.Fatalf("unknown route: %d %v", code, body)
	}
	p.stopWith(t, syscall.SIGTERM)
	if !strings.Contains(p.out.String(), "drained") {
		t.Fatalf("no drain in the log:\n%s", p.out.String())
	}
}

func TestServeOnPostgres(t *testing.T) {
	url := testenv.PostgresURL(t)
	p := start(t, "GATEHOUSE_DATABASE_URL="+url)
	if code, _ := get(t, "http://"+p.addr+"/readyz"); code != 200 {
		t.Fatalf("readyz on postgres: %d", code)
	}
	if !strings.Contains(p.out.String(), "store=postgres") {
		t.Fatalf("not on postgres:\n%s", p.out.String())
	}
	p.stopWith(t, syscall.SIGINT)
}

func TestMigrateAndVersion(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	cmd := exec.Command(binary(t), "migrate")
	cmd.Env = append(os.Environ(), "GATEHOUSE_DATA_DIR="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("migrate: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "gatehouse.db")); err != nil {
		t.Fatalf("migrate made no database: %v", err)
	}
	out, err = exec.Command(binary(t), "version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "gatehouse ") {
		t.Fatalf("version: %v %q", err, out)
	}
}

func TestBadConfigurationExitsWithMessage(t *testing.T) {
	cmd := exec.Command(binary(t), "serve")
	cmd.Env = append(os.Environ(), "GATEHOUSE_LEASE_TTL=forever")
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), "GATEHOUSE_LEASE_TTL") {
		t.Fatalf("bad config: %v\n%s", err, out)
	}
}

func TestServeHelpListsSettings(t *testing.T) {
	var out bytes.Buffer
	if code := run([]string{"serve", "--help"}, &out, &out, env(nil)); code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, s := range config.Settings() {
		if !strings.Contains(out.String(), s.Env) {
			t.Errorf("--help lacks %s", s.Env)
		}
	}
}
