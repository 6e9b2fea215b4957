package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/internal/testing/testenv"
	"github.com/gatehouse/gatehouse/models/modeltest"
)

// The command the security review used to take the gateway's keys: the
// parent's environment, its own, the process list, and a child left
// running in the background.
const stealCommand = `cat /proc/$PPID/environ; env; ls /proc; sleep 1000 &`

// The gateway's secrets in this test: the API token, the model key and
// the SMTP password.
const (
	shellTestToken   = "gh-test-api-token-7d1e"
	shellTestKey     = "sk-test-model-key-93ab"
	shellTestSMTPPwd = "smtp-pass-5c2f"
)

type tokenClient struct {
	t     *testing.T
	addr  string
	token string // defaults to shellTestToken
}

func (c tokenClient) do(method, path string, body any) (int, []byte) {
	c.t.Helper()
	var rd *bytes.Reader
	if body != nil {
		raw, _ := json.Marshal(body)
		rd = bytes.NewReader(raw)
	} else {
		rd = bytes.NewReader(nil)
	}
	req, _ := http.NewRequest(method, "http://"+c.addr+path, rd)
	token := c.token
	if token == "" {
		token = shellTestToken
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	b.ReadFrom(resp.Body)
	return resp.StatusCode, b.Bytes()
}

func (c tokenClient) events() []gh.Event {
	c.t.Helper()
	_, raw := c.do("GET", "/v1/sessions/s1/events?limit=1000", nil)
	var out struct{ Events []gh.Event }
	json.Unmarshal(raw, &out)
	return out.Events
}

func (c tokenClient) gates() []gh.Gate {
	c.t.Helper()
	_, raw := c.do("GET", "/v1/gates?session=s1", nil)
	var out struct{ Gates []gh.Gate }
	json.Unmarshal(raw, &out)
	return out.Gates
}

func (c tokenClient) toolResult() (gh.ToolResult, bool) {
	for _, e := range c.events() {
		if e.Kind == gh.KindToolResult {
			var r gh.ToolResult
			json.Unmarshal(e.Payload, &r)
			return r, true
		}
	}
	return gh.ToolResult{}, false
}

func shellStack(t *testing.T, command string, extra ...string) (*proc, tokenClient) {
	fake := modeltest.NewOpenAI(t, shellTestKey)
	args, _ := json.Marshal(map[string]string{"command": command})
	fake.Push(modeltest.Reply{ToolCalls: []modeltest.ToolCall{{ID: "call_sh", Name: "shell_exec", Arguments: string(args)}}})
	fake.SetDefault(modeltest.Reply{Text: "Done."})
	p := start(t, append([]string{
		"GATEHOUSE_API_TOKEN=" + shellTestToken,
		"GATEHOUSE_MODEL=openai:test-model", "OPENAI_API_KEY=" + shellTestKey, "OPENAI_BASE_URL=" + fake.BaseURL(),
		"GATEHOUSE_SMTP_URL=smtp://agent:" + shellTestSMTPPwd + "@127.0.0.1:1?tls=none", "GATEHOUSE_EMAIL_FROM=agent@example.com",
		"GATEHOUSE_SHELL=on", "GATEHOUSE_MODEL_RETRIES=1",
	}, extra...)...)
	c := tokenClient{t: t, addr: p.addr}
	if code, body := c.do("POST", "/v1/sessions/s1/input", map[string]string{"text": "Show me the environment.", "requestId": "r1"}); code != 202 {
		t.Fatalf("input: %d %s", code, body)
	}
	return p, c
}

// An approved shell_exec of the key-stealing command, through the real
// binary: the result holds no secret, neither does the log or the
// gateway's output, and the background sleep did not outlive the command.
func TestApprovedShellCommandReachesNoSecret(t *testing.T) {
	testenv.Bubblewrap(t)
	p, c := shellStack(t, stealCommand)
	var g []gh.Gate
	waitUntil(t, "the approval card", func() bool { g = c.gates(); return len(g) == 1 })
	if g[0].Tool != "shell_exec" || !strings.Contains(string(g[0].Arguments), "sleep 1000") {
		t.Fatalf("card %+v", g[0])
	}
	if code, body := c.do("POST", "/v1/gates/"+g[0].ID+"/decision", map[string]string{"decision": "approve", "by": "ana"}); code != 200 {
		t.Fatalf("approve: %d %s", code, body)
	}
	var r gh.ToolResult
	waitUntil(t, "the command's result", func() bool { var ok bool; r, ok = c.toolResult(); return ok })
	if !strings.Contains(r.Content, "exit code: 0") || !strings.Contains(r.Content, "PATH=") {
		t.Fatalf("the command did not run: %+v", r)
	}
	waitUntil(t, "the answer", func() bool {
		for _, e := range c.events() {
			if e.Kind == gh.KindRunFinished {
				return true
			}
		}
		return false
	})
	var log bytes.Buffer
	for _, e := range c.events() {
		log.Write(e.Payload)
	}
	for _, secret := range []string{shellTestToken, shellTestKey, shellTestSMTPPwd} {
		if strings.Contains(r.Content, secret) {
			t.Errorf("the result holds %q:\n%s", secret, r.Content)
		}
		if strings.Contains(log.String(), secret) {
			t.Errorf("the session log holds %q", secret)
		}
		if strings.Contains(p.out.String(), secret) {
			t.Errorf("the gateway's output holds %q", secret)
		}
	}
	// ls /proc inside shows the sandbox's few processes, not the host's.
	pids := 0
	for _, f := range strings.Fields(r.Content) {
		if _, err := strconv.Atoi(f); err == nil {
			pids++
		}
	}
	if pids > 6 {
		t.Errorf("the command saw %d processes:\n%s", pids, r.Content)
	}
	if leftoverSleep() {
		t.Error("sleep 1000 outlived the command")
	}
	p.stopWith(t, syscall.SIGTERM)
}

// With isolation made unavailable (a bubblewrap that does not exist), the
// call is refused at once with the reason: no card, nothing run.
func TestShellWithoutIsolationIsRefusedWithoutACard(t *testing.T) {
	p, c := shellStack(t, stealCommand, "GATEHOUSE_SHELL_BWRAP=/nonexistent/bwrap")
	var r gh.ToolResult
	waitUntil(t, "the refusal", func() bool { var ok bool; r, ok = c.toolResult(); return ok })
	if !r.IsError || !strings.Contains(r.Content, "isolation is unavailable") {
		t.Fatalf("result %+v", r)
	}
	if g := c.gates(); len(g) != 0 {
		t.Fatalf("a card was opened: %+v", g)
	}
	if !strings.Contains(p.out.String(), "isolation is unavailable") {
		t.Errorf("the operator was not told at start:\n%s", p.out.String())
	}
	p.stopWith(t, syscall.SIGTERM)
}

// A kill -9 of the gateway while an approved command runs takes the whole
// sandbox with it: nothing keeps running unowned.
func TestKilledGatewayLeavesNoSandboxedProcess(t *testing.T) {
	testenv.Bubblewrap(t)
	p, c := shellStack(t, "echo running; sleep 1001")
	var g []gh.Gate
	waitUntil(t, "the approval card", func() bool { g = c.gates(); return len(g) == 1 })
	if code, body := c.do("POST", "/v1/gates/"+g[0].ID+"/decision", map[string]string{"decision": "approve", "by": "ana"}); code != 200 {
		t.Fatalf("approve: %d %s", code, body)
	}
	waitUntil(t, "the command to run", func() bool { return sleeping("1001") })
	p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
	waitUntil(t, "the sandbox to die with the gateway", func() bool { return !sleeping("1001") })
}

// leftoverSleep reports whether a `sleep 1000` runs anywhere on the host.
func leftoverSleep() bool { return sleeping("1000") }

// sleeping reports whether a `sleep <arg>` runs anywhere on the host.
func sleeping(arg string) bool {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && string(raw) == "sleep\x00"+arg+"\x00" {
			return true
		}
	}
	return false
}

// A descriptor the gateway inherited (here a file holding a secret, as a
// supervisor might pass) does not reach an MCP server it starts, isolated
// (writing its listing into a Writable directory) or not.
func TestMCPServerGetsNoInheritedDescriptor(t *testing.T) {
	t.Run("host", func(t *testing.T) { testMCPServerGetsNoInheritedDescriptor(t, "host") })
	t.Run("sandbox", func(t *testing.T) { testenv.Bubblewrap(t); testMCPServerGetsNoInheritedDescriptor(t, "sandbox") })
}

func testMCPServerGetsNoInheritedDescriptor(t *testing.T, isolation string) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret.txt")
	os.WriteFile(secret, []byte("top secret"), 0o600)
	f, err := os.Open(secret)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := filepath.Join(dir, "fds.txt")
	cfg := filepath.Join(dir, "mcp.json")
	raw, _ := json.Marshal(map[string]any{"servers": []map[string]any{{"Name": "probe", "Isolation": isolation, "Writable": []string{dir}, "Command": []string{"/bin/sh", "-c", "ls -l /proc/self/fd > " + out + "; exit 1"}}}})
	os.WriteFile(cfg, raw, 0o600)

	cmd := exec.Command(binary(t), "serve")
	cmd.Env = append(os.Environ(), "GATEHOUSE_ADDR="+freeAddr(t), "GATEHOUSE_DATA_DIR="+filepath.Join(dir, "data"), "GATEHOUSE_MCP_CONFIG="+cfg)
	cmd.ExtraFiles = []*os.File{f} // fd 3 in the gateway, not close-on-exec
	var logs syncBuffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	var listing []byte
	waitUntil(t, "the MCP server to start", func() bool {
		listing, _ = os.ReadFile(out)
		return strings.Contains(string(listing), "\n")
	})
	if strings.Contains(string(listing), "secret.txt") {
		t.Fatalf("the MCP server inherited the gateway's descriptor:\n%s", listing)
	}
}
