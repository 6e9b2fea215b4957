package main

import (
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/internal/testing/testenv"
	"github.com/gatehouse/gatehouse/models/modeltest"
)

// guardEnv probes twice a second and restarts after four failures in a
// row: quick enough for a test, slow enough for a busy machine.
var guardEnv = []string{"GATEHOUSE_GUARD_INTERVAL=500ms", "GATEHOUSE_GUARD_FAILURES=4", "GATEHOUSE_GUARD_BACKOFF=100ms"}

// startGuard runs `gatehouse guard` and waits for its child to answer.
// At the end of the test the guard is stopped with SIGTERM and waited
// for, so its child has drained before the data directory goes.
func startGuard(t *testing.T, extraEnv ...string) *proc {
	t.Helper()
	p := launch(t, exec.Command(binary(t), "guard"), append(append([]string{}, guardEnv...), extraEnv...)...)
	// The guard counts failures once it has seen the child answer (before
	// that, the child is starting): wait for that.
	waitUntil(t, "the guard seeing its child live", func() bool { return strings.Contains(p.out.String(), "guard: child is live") })
	t.Cleanup(func() {
		if p.cmd.Process.Signal(syscall.SIGTERM) != nil {
			return // already exited
		}
		select {
		case <-p.done:
		case <-time.After(90 * time.Second):
			t.Errorf("the guard did not exit after SIGTERM")
		}
	})
	return p
}

type livezBody struct {
	Status  string
	PID     int
	Running int
	Paused  bool
	Message string
	Loops   []struct {
		Name string
		OK   bool
	}
}

// livez asks /livez once; ok is false when nothing answered.
func livez(addr string) (code int, body livezBody, ok bool) {
	c := http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get("http://" + addr + "/livez")
	if err != nil {
		return 0, body, false
	}
	defer resp.Body.Close()
	_ = json.NewDecoder(resp.Body).Decode(&body)
	return resp.StatusCode, body, true
}

func mustLivez(t *testing.T, addr string) livezBody {
	t.Helper()
	code, body, ok := livez(addr)
	if !ok || code != 200 || body.Status != "ok" || body.PID == 0 {
		t.Fatalf("livez: %v %d %+v", ok, code, body)
	}
	return body
}

func readyzCode(addr string) int {
	c := http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get("http://" + addr + "/readyz")
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// watchChild checks for a while that the same child keeps answering
// /livez with 200, and passes each answer to also.
func watchChild(t *testing.T, p *proc, pid int, d time.Duration, also func(livezBody)) {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(250 * time.Millisecond) {
		code, body, ok := livez(p.addr)
		if !ok || code != 200 || body.PID != pid {
			t.Fatalf("the child %d is no longer live or was replaced: %v %d %+v\n%s", pid, ok, code, body, p.out.String())
		}
		if also != nil {
			also(body)
		}
	}
	if strings.Contains(p.out.String(), "restarting the child") {
		t.Fatalf("the guard restarted the child:\n%s", p.out.String())
	}
}

// A child that stops answering (SIGSTOP: the process exists, its port
// accepts, nothing answers) is killed after the failed probes and
// replaced.
func TestGuardRestartsAChildWhoseLivezStopsAnswering(t *testing.T) {
	p := startGuard(t)
	old := mustLivez(t, p.addr).PID
	if old == p.cmd.Process.Pid {
		t.Fatalf("/livez answered by the guard itself (pid %d), not its child", old)
	}
	if err := syscall.Kill(old, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(old, syscall.SIGKILL) })
	var now livezBody
	waitUntil(t, "a new child answering /livez", func() bool {
		code, body, ok := livez(p.addr)
		now = body
		return ok && code == 200 && body.PID != 0 && body.PID != old
	})
	if err := syscall.Kill(old, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("the stopped child %d still exists (%v): it was not killed", old, err)
	}
	if out := p.out.String(); !strings.Contains(out, "/livez failed 4 probes in a row") || !strings.Contains(out, "restarting the child") {
		t.Fatalf("the guard did not say why it restarted:\n%s", out)
	}
	if code := readyzCode(p.addr); code != 200 {
		t.Fatalf("the new child %d is not ready: %d", now.PID, code)
	}
	// SIGTERM to the guard: forwarded, drained, the guard exits 0.
	p.stopWith(t, syscall.SIGTERM)
	if out := p.out.String(); !strings.Contains(out, "drained") {
		t.Fatalf("the child did not drain:\n%s", out)
	}
}

// tcpProxy stands between the gateway and Postgres, so a test can take
// the database away (connections reset, the port refusing) and bring it
// back on the same address.
type tcpProxy struct {
	t      *testing.T
	target string
	addr   string
	mu     sync.Mutex
	ln     net.Listener
	conns  []net.Conn
}

func newTCPProxy(t *testing.T, target string) *tcpProxy {
	px := &tcpProxy{t: t, target: target, addr: freeAddr(t)}
	px.open()
	t.Cleanup(px.close)
	return px
}

func (px *tcpProxy) open() {
	ln, err := net.Listen("tcp", px.addr)
	if err != nil {
		px.t.Fatal(err)
	}
	px.mu.Lock()
	px.ln = ln
	px.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", px.target)
			if err != nil {
				c.Close()
				continue
			}
			px.mu.Lock()
			px.conns = append(px.conns, c, up)
			px.mu.Unlock()
			go func() { io.Copy(up, c); up.Close() }()
			go func() { io.Copy(c, up); c.Close() }()
		}
	}()
}

// close refuses new connections and resets the open ones.
func (px *tcpProxy) close() {
	px.mu.Lock()
	defer px.mu.Unlock()
	if px.ln != nil {
		px.ln.Close()
		px.ln = nil
	}
	for _, c := range px.conns {
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetLinger(0)
		}
		c.Close()
	}
	px.conns = nil
}

// A child whose database is down is not ready, but alive: the guard
// leaves it, and it recovers by itself when the database is back.
func TestGuardDoesNotRestartAChildWhoseDatabaseIsDown(t *testing.T) {
	base := testenv.PostgresURL(t)
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	px := newTCPProxy(t, u.Host)
	u.Host = px.addr
	p := startGuard(t, "GATEHOUSE_DATABASE_URL="+u.String())
	pid := mustLivez(t, p.addr).PID
	if code := readyzCode(p.addr); code != 200 {
		t.Fatalf("readyz before: %d", code)
	}

	px.close()
	waitUntil(t, "/readyz to report the database gone", func() bool { return readyzCode(p.addr) == 503 })
	// Long enough for the claim loop to back off several times (1s, 2s,
	// 4s, 8s …) and for the guard to probe dozens of times.
	watchChild(t, p, pid, 20*time.Second, nil)

	px.open()
	waitUntil(t, "/readyz to recover", func() bool { return readyzCode(p.addr) == 200 })
	if got := mustLivez(t, p.addr).PID; got != pid {
		t.Fatalf("the child was replaced: %d, was %d", got, pid)
	}
}

// A child whose only worker is busy with a turn that hangs in the model
// is alive: its claim loop goes round, and the guard leaves it.
func TestGuardDoesNotRestartAChildWhoseWorkersAreBusy(t *testing.T) {
	fake := modeltest.NewOpenAI(t, "test-key")
	fake.Push(modeltest.Reply{Hang: true})
	fake.SetDefault(modeltest.Reply{Text: "late"})
	p := startGuard(t, "GATEHOUSE_MODEL=openai:test-model", "OPENAI_API_KEY=test-key", "OPENAI_BASE_URL="+fake.BaseURL(),
		"GATEHOUSE_WORKERS=1", "GATEHOUSE_MODEL_RETRIES=1", "GATEHOUSE_DRAIN_TIMEOUT=3s")
	pid := mustLivez(t, p.addr).PID
	if code, body := post(t, "http://"+p.addr+"/v1/sessions/s1/input", map[string]string{"text": "hello", "requestId": "r1"}); code != 202 {
		t.Fatalf("input: %d %v", code, body)
	}
	waitUntil(t, "the turn hanging in the model", func() bool {
		_, body, _ := livez(p.addr)
		return len(fake.Requests()) == 1 && body.Running == 1
	})
	// Longer than five claim-loop polls: a loop that stopped while its
	// workers are busy would be stale by then.
	watchChild(t, p, pid, 8*time.Second, func(b livezBody) {
		if b.Running != 1 {
			t.Fatalf("the hung turn is not running any more: %+v", b)
		}
	})
}

// A reload (gatehouse reload → SIGHUP to the guard) pauses claims, waits
// for the running turn to finish, and only then replaces the child; a
// pending approval made before it is decided after it, and its effect
// runs once.
func TestGuardReloadWaitsForARunningTurnAndKeepsApprovals(t *testing.T) {
	s := newEmailStack(t)
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	s.fake.Push(modeltest.Reply{Text: "the slow answer", Before: func() {
		close(entered)
		select {
		case <-release:
		case <-time.After(2 * time.Minute):
		}
	}})
	p := startGuard(t, s.envs...)

	s.ask(p.addr)
	g := waitGate(t, p.addr)
	if code, body := post(t, "http://"+p.addr+"/v1/sessions/s2/input", map[string]string{"text": "Take your time.", "requestId": "r2"}); code != 202 {
		t.Fatalf("input: %d %v", code, body)
	}
	select {
	case <-entered:
	case <-time.After(time.Minute):
		t.Fatal("the second turn never reached the model")
	}
	old := mustLivez(t, p.addr).PID

	reload := exec.Command(binary(t), "reload")
	reload.Env = p.cmd.Env
	if out, err := reload.CombinedOutput(); err != nil || !strings.Contains(string(out), "asked the guard") {
		t.Fatalf("gatehouse reload: %v\n%s", err, out)
	}
	waitUntil(t, "claims paused", func() bool { _, b, _ := livez(p.addr); return b.Paused })
	// The turn is still running: the child stays.
	watchChild(t, p, old, 3*time.Second, func(b livezBody) {
		if !b.Paused || b.Running != 1 {
			t.Fatalf("during the reload: %+v", b)
		}
	})

	once.Do(func() { close(release) })
	var now livezBody
	waitUntil(t, "the new child", func() bool {
		code, b, ok := livez(p.addr)
		now = b
		return ok && code == 200 && b.PID != 0 && b.PID != old
	})
	if now.Paused {
		t.Fatalf("the new child starts paused: %+v", now)
	}
	// The slow turn ran once, to its end, on the old child.
	started, answers := 0, 0
	for _, e := range sessionEvents(t, p.addr, "s2") {
		switch e.Kind {
		case gh.KindRunStarted:
			started++
		case gh.KindAssistantMessage:
			var a gh.AssistantMessage
			json.Unmarshal(e.Payload, &a)
			if a.Text == "the slow answer" {
				answers++
			}
		}
	}
	if started != 1 || answers != 1 {
		t.Fatalf("the slow turn: %d attempts, %d answers", started, answers)
	}
	if out := p.out.String(); !strings.Contains(out, "reload: no turn running; stopping the child") || strings.Contains(out, "killing it") {
		t.Fatalf("the reload did not wait for the turn, or killed the child:\n%s", out)
	}

	// The approval card made before the reload is pending after it, and
	// approving it sends one mail.
	if got := waitGate(t, p.addr); got.ID != g.ID {
		t.Fatalf("gate after the reload: %+v, was %+v", got, g)
	}
	if len(s.smtp.Mails()) != 0 {
		t.Fatal("mail sent before approval")
	}
	if code, body := post(t, "http://"+p.addr+"/v1/gates/"+g.ID+"/decision", map[string]string{"decision": "approve", "by": "ana"}); code != 200 || body["won"] != true {
		t.Fatalf("approve after the reload: %d %v", code, body)
	}
	waitUntil(t, "the answer", func() bool { return settledRuns(t, p.addr) == 1 })
	if n := len(s.smtp.Mails()); n != 1 {
		t.Fatalf("%d mails", n)
	}
	p.stopWith(t, syscall.SIGTERM)
}

// Without a guard, `gatehouse reload` says so and fails.
func TestReloadWithoutAGuardFails(t *testing.T) {
	cmd := exec.Command(binary(t), "reload")
	cmd.Env = append(cmd.Environ(), "GATEHOUSE_DATA_DIR="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(string(out), "no guard runs") {
		t.Fatalf("reload without a guard: %v\n%s", err, out)
	}
}

// /livez on the probe listener and the main one, with the loops named.
func TestLivezOnBothListeners(t *testing.T) {
	probeAddr := freeAddr(t)
	p := start(t, "GATEHOUSE_PROBE_ADDR="+probeAddr)
	for _, addr := range []string{p.addr, probeAddr} {
		b := mustLivez(t, addr)
		if b.PID != p.cmd.Process.Pid || len(b.Loops) != 2 || b.Loops[1].Name != "workers" || !b.Loops[1].OK {
			t.Fatalf("livez on %s: %+v", addr, b)
		}
	}
}
