package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/adapters/slackchat/slacktest"
	"github.com/gatehouse/gatehouse/models/modeltest"
)

// The HTTP limits as an attacker on loopback meets them, against the real
// binary: idle keep-alive connections and slow webhook bodies are closed
// by the server after their timeouts while the gateway keeps answering,
// and its files and goroutines come back; at the connection cap clients
// get a clear 503 while the probes answer.

// noKeepAlive opens a connection per request, so the test's own requests
// hold nothing open on the server between them.
var noKeepAlive = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 60 * time.Second}

// hangGuard bounds how long the test waits for something that must
// happen; it is not a speed assertion.
const hangGuard = 30 * time.Second

// openFileCount counts the open files of process pid.
func openFileCount(t *testing.T, pid int) int {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatalf("count open files: %v", err)
	}
	return len(ents)
}

// goroutineCount reads go_goroutines from the gateway's /metrics.
func goroutineCount(t *testing.T, addr string) int {
	t.Helper()
	resp, err := noKeepAlive.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "go_goroutines "); ok {
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("go_goroutines %q", v)
			}
			return int(n)
		}
	}
	t.Fatal("/metrics has no go_goroutines")
	return 0
}

// turnAnswered sends text to session and waits for the answer in its log.
func turnAnswered(t *testing.T, addr, session, text, answer string) {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"text": text})
	resp, err := noKeepAlive.Post("http://"+addr+"/v1/sessions/"+session+"/input", "application/json", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("input to %s: %d", session, resp.StatusCode)
	}
	waitUntil(t, "the answer to "+text, func() bool {
		resp, err := noKeepAlive.Get("http://" + addr + "/v1/sessions/" + session + "/events")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out struct{ Events []gh.Event }
		_ = json.NewDecoder(resp.Body).Decode(&out)
		for _, e := range out.Events {
			var a gh.AssistantMessage
			if e.Kind == gh.KindAssistantMessage && json.Unmarshal(e.Payload, &a) == nil && a.Text == answer {
				return true
			}
		}
		return false
	})
}

// answerOf GETs url on a connection of its own: status, headers, JSON body.
func answerOf(t *testing.T, url string) (int, http.Header, map[string]string) {
	t.Helper()
	resp, err := noKeepAlive.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	var body map[string]string
	_ = json.NewDecoder(resp.Body).Decode(&body)
	return resp.StatusCode, resp.Header, body
}

// heldConn is a keep-alive connection that made one request and now sits
// idle.
type heldConn struct {
	net.Conn
	br *bufio.Reader
}

func holdConn(t *testing.T, addr string) *heldConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	h := &heldConn{Conn: c, br: bufio.NewReader(c)}
	fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: %s\r\n\r\n", addr)
	_ = c.SetReadDeadline(time.Now().Add(hangGuard))
	resp, err := http.ReadResponse(h.br, nil)
	if err != nil {
		t.Fatalf("request on a held connection: %v", err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("request on a held connection: %d", resp.StatusCode)
	}
	return h
}

// closedByServer reports whether the server closed c (a read ending in
// EOF or a reset) before the hang guard.
func (c *heldConn) closedByServer() bool {
	_ = c.SetReadDeadline(time.Now().Add(hangGuard))
	_, err := io.Copy(io.Discard, c.br)
	return !errors.Is(err, os.ErrDeadlineExceeded)
}

// slowBody opens POST /hooks/slack announcing a 1 MiB body and trickles
// it a byte at a time. It returns a channel that receives the status the
// server answered with (0 when it closed without an answer), or -1 when
// the connection was still open at the hang guard.
func slowBody(t *testing.T, addr string) <-chan int {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "POST /hooks/slack HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"+
		"X-Slack-Request-Timestamp: %d\r\nX-Slack-Signature: v0=00\r\nContent-Length: %d\r\n\r\n{", addr, time.Now().Unix(), 1<<20)
	stop := make(chan struct{})
	go func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				if _, err := c.Write([]byte(" ")); err != nil {
					return
				}
			}
		}
	}()
	out := make(chan int, 1)
	go func() {
		defer close(stop)
		_ = c.SetReadDeadline(time.Now().Add(hangGuard))
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		switch {
		case err == nil:
			resp.Body.Close()
			out <- resp.StatusCode
		case errors.Is(err, os.ErrDeadlineExceeded):
			out <- -1
		default:
			out <- 0
		}
	}()
	return out
}

// settleCounts waits for the gateway's open files and goroutines to stop
// moving and returns them: connections of earlier requests close after
// the idle timeout.
func settleCounts(t *testing.T, p *proc) (files, routines int) {
	t.Helper()
	time.Sleep(3 * time.Second) // past the 2s idle timeout of anything left open
	return openFileCount(t, p.cmd.Process.Pid), goroutineCount(t, p.addr)
}

func TestIdleAndSlowConnectionsAreShedWhileTheGatewayServes(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("counts open files in /proc")
	}
	slack := slacktest.NewSlack(t)
	model := modeltest.NewOpenAI(t, "test-key")
	model.SetDefault(modeltest.Reply{Text: "Still here."})
	p := start(t, "GATEHOUSE_MODEL=openai:test-model", "OPENAI_API_KEY=test-key", "OPENAI_BASE_URL="+model.BaseURL(),
		"SLACK_BOT_TOKEN="+slack.BotToken, "SLACK_SIGNING_SECRET="+slack.SigningSecret, "SLACK_API_URL="+slack.URL,
		"GATEHOUSE_HTTP_IDLE_TIMEOUT=2s", "GATEHOUSE_HTTP_READ_TIMEOUT=2s")

	// A turn first, so the model client's connection is part of the
	// baseline.
	turnAnswered(t, p.addr, "warm", "hello", "Still here.")
	baseFiles, baseRoutines := settleCounts(t, p)

	idle := make([]*heldConn, 300)
	for i := range idle {
		idle[i] = holdConn(t, p.addr)
	}
	slow := make([]<-chan int, 60)
	for i := range slow {
		slow[i] = slowBody(t, p.addr)
	}

	// The gateway serves during the flood.
	if code, _, body := answerOf(t, "http://"+p.addr+"/healthz"); code != 200 || body["status"] != "ok" {
		t.Fatalf("healthz during the flood: %d %v", code, body)
	}
	turnAnswered(t, p.addr, "during", "are you there?", "Still here.")

	for i, c := range idle {
		if !c.closedByServer() {
			t.Fatalf("idle keep-alive connection %d was never closed by the server", i)
		}
	}
	for i, ch := range slow {
		switch code := <-ch; {
		case code == -1:
			t.Fatalf("slow webhook body %d: the connection was still open at the hang guard", i)
		case code >= 200 && code < 300:
			t.Fatalf("slow webhook body %d: answered %d", i, code)
		}
	}

	// Files and goroutines return to the baseline: nothing of the flood
	// is left behind.
	const fileSlack, routineSlack = 10, 20
	var files, routines int
	waitUntil(t, "open files and goroutines back to the baseline", func() bool {
		files, routines = openFileCount(t, p.cmd.Process.Pid), goroutineCount(t, p.addr)
		return files <= baseFiles+fileSlack && routines <= baseRoutines+routineSlack
	})
	t.Logf("open files %d (baseline %d), goroutines %d (baseline %d)", files, baseFiles, routines, baseRoutines)
	p.stopWith(t, syscall.SIGTERM)
}

// At GATEHOUSE_HTTP_MAX_CONNS a new client gets 503 with Retry-After and
// a typed error at once, and /healthz still answers (through the reserve,
// and on GATEHOUSE_PROBE_ADDR); when the connections close, the gateway
// serves again.
func TestConnectionCapGivesAClearAnswerAndHealthStaysUp(t *testing.T) {
	probe := freeAddr(t)
	p := start(t, "GATEHOUSE_HTTP_MAX_CONNS=20", "GATEHOUSE_PROBE_ADDR="+probe)
	var held []*heldConn
	for range 20 {
		held = append(held, holdConn(t, p.addr))
	}

	code, h, body := answerOf(t, "http://"+p.addr+"/v1/info")
	if code != 503 || body["code"] != "unavailable" || !strings.Contains(body["message"], "limit of 20 open connections") || h.Get("Retry-After") == "" {
		t.Fatalf("over the cap: %d %v %v", code, h, body)
	}
	for _, url := range []string{"http://" + p.addr + "/healthz", "http://" + p.addr + "/readyz", "http://" + probe + "/healthz", "http://" + probe + "/readyz"} {
		if code, _, body := answerOf(t, url); code != 200 {
			t.Fatalf("%s at the cap: %d %v", url, code, body)
		}
	}

	// Even with the reserve full of connections that send nothing, the
	// probe listener answers.
	var silent []net.Conn
	for range 64 {
		c, err := net.Dial("tcp", p.addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		silent = append(silent, c)
	}
	if code, _, body := answerOf(t, "http://"+probe+"/healthz"); code != 200 {
		t.Fatalf("probe listener with the reserve full: %d %v", code, body)
	}

	for _, c := range held {
		c.Close()
	}
	for _, c := range silent {
		c.Close()
	}
	waitUntil(t, "the gateway serving again", func() bool {
		resp, err := noKeepAlive.Get("http://" + p.addr + "/v1/info")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	p.stopWith(t, syscall.SIGTERM)
}

// With an open-file limit too low for the connection cap, the gateway
// lowers the cap at start and says so; a flood of connections then gets
// refusals instead of running the process out of files, and the gateway
// (its database included) works once the flood is gone.
func TestLowFileLimitLowersTheConnectionCap(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("sets the limit with the shell's ulimit")
	}
	model := modeltest.NewOpenAI(t, "test-key")
	model.SetDefault(modeltest.Reply{Text: "Fine."})
	p := startLimited(t, 400, "GATEHOUSE_MODEL=openai:test-model", "OPENAI_API_KEY=test-key", "OPENAI_BASE_URL="+model.BaseURL())
	if !strings.Contains(p.out.String(), "lowered the cap") {
		t.Fatalf("no warning about the lowered cap:\n%s", p.out.String())
	}
	var flood []net.Conn
	for range 500 {
		c, err := net.Dial("tcp", p.addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		flood = append(flood, c)
	}
	// A client beyond the cap is refused or closed, never left hanging.
	resp, err := noKeepAlive.Get("http://" + p.addr + "/v1/info")
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode != 503 {
			t.Fatalf("with 500 connections open: %d", resp.StatusCode)
		}
	}
	for _, c := range flood {
		c.Close()
	}
	waitUntil(t, "the gateway serving again", func() bool {
		resp, err := noKeepAlive.Get("http://" + p.addr + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	turnAnswered(t, p.addr, "after", "hello", "Fine.")
	if strings.Contains(p.out.String(), "too many open files") {
		t.Fatalf("the gateway ran out of files:\n%s", p.out.String())
	}
	p.stopWith(t, syscall.SIGTERM)
}

// startLimited starts the gateway as start does, under an open-file
// limit (soft and hard) of files.
func startLimited(t *testing.T, files int, extraEnv ...string) *proc {
	t.Helper()
	return launch(t, exec.Command("sh", "-c", `ulimit -n "$1" && exec "$2" serve`, "sh", strconv.Itoa(files), binary(t)), extraEnv...)
}

// The limits' settings have the documented defaults, take values from the
// environment, and a bad value stops the gateway naming the setting.
func TestHTTPLimitSettings(t *testing.T) {
	c, err := loadConfig("", env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.HTTPReadTimeout != 30*time.Second || c.HTTPWriteTimeout != 60*time.Second || c.HTTPIdleTimeout != 120*time.Second ||
		c.HTTPMaxHeaderBytes != 65536 || c.HTTPMaxConns != 16384 || c.HTTPMaxStreams != 8192 || c.ProbeAddr != "" {
		t.Fatalf("defaults: %+v", c)
	}
	c, err = loadConfig("", env(map[string]string{"GATEHOUSE_HTTP_WRITE_TIMEOUT": "5s", "GATEHOUSE_HTTP_MAX_STREAMS": "3",
		"GATEHOUSE_HTTP_MAX_HEADER_BYTES": "8192", "GATEHOUSE_PROBE_ADDR": "127.0.0.1:8081"}))
	if err != nil || c.HTTPWriteTimeout != 5*time.Second || c.HTTPMaxStreams != 3 || c.HTTPMaxHeaderBytes != 8192 || c.ProbeAddr != "127.0.0.1:8081" {
		t.Fatalf("from the environment: %+v %v", c, err)
	}
	for name, value := range map[string]string{
		"GATEHOUSE_HTTP_READ_TIMEOUT":     "soon",
		"GATEHOUSE_HTTP_IDLE_TIMEOUT":     "-1s",
		"GATEHOUSE_HTTP_MAX_CONNS":        "0",
		"GATEHOUSE_HTTP_MAX_STREAMS":      "many",
		"GATEHOUSE_HTTP_MAX_HEADER_BYTES": "-5",
	} {
		if _, err := loadConfig("", env(map[string]string{name: value})); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s=%s: %v", name, value, err)
		}
	}
}
