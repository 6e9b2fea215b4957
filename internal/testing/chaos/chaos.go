package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/internal/testing/testenv"
	"github.com/gatehouse/gatehouse/models/modeltest"
)

// FreeAddr is a loopback address nothing listens on (a moment ago).
func FreeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// Probe returns the status of GET url, or 0 when there was no answer.
var probeClient = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}

func Probe(url string) int {
	resp, err := probeClient.Get(url)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// Result is what the client of one message was told.
type Result struct {
	N       int
	Err     error // the client gave up: nothing was acknowledged
	Presses []PressAnswer
	// Prefix names the session: Prefix-N. Defaults to "deps".
	Prefix string
}

type PressAnswer struct {
	Decision string `json:"decision"`
	Surface  string `json:"surface"`
	Won      bool   `json:"won"`
}

func (r *Result) Session() string {
	if r.Prefix == "" {
		return fmt.Sprintf("deps-%d", r.N)
	}
	return fmt.Sprintf("%s-%d", r.Prefix, r.N)
}
func (r *Result) Subject() string { return fmt.Sprintf("Report #%d", r.N) }

// Client is an API client as a real one behaves: every request is
// retried on a network error or a 5xx until the deadline, inputs with the
// same requestId.
type Client struct {
	Base     string
	Deadline time.Time
	Quit     chan struct{}
	// Token, when set, is sent as the bearer token.
	Token   string
	Retries atomic.Int64 // requests sent again after an error or a 5xx
}

// wait sleeps d, or reports false when the test is over.
func (c *Client) Wait(d time.Duration) bool {
	select {
	case <-c.Quit:
		return false
	case <-time.After(d):
		return time.Now().Before(c.Deadline)
	}
}

var apiClient = &http.Client{Timeout: 15 * time.Second}

// call sends one request until it gets an answer that is not a failure
// of the gateway or its dependencies.
func (c *Client) Call(method, path string, header http.Header, body, out any) (int, error) {
	var raw []byte
	if body != nil {
		raw, _ = json.Marshal(body)
	}
	last := "the test ended"
	for first := true; first || c.Wait(200*time.Millisecond); first = false {
		if !first {
			c.Retries.Add(1)
		}
		req, _ := http.NewRequest(method, c.Base+path, bytes.NewReader(raw))
		req.Header.Set("Content-Type", "application/json")
		if c.Token != "" {
			req.Header.Set("Authorization", "Bearer "+c.Token)
		}
		for k, v := range header {
			req.Header[k] = v
		}
		resp, err := apiClient.Do(req)
		if err != nil {
			last = err.Error()
			continue
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode >= 500 || resp.StatusCode == 429 {
			last = fmt.Sprintf("%d %s", resp.StatusCode, data)
			continue
		}
		if resp.StatusCode >= 300 {
			return resp.StatusCode, fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, data)
		}
		if out != nil {
			if err := json.Unmarshal(data, out); err != nil {
				return resp.StatusCode, fmt.Errorf("%s %s: %v: %s", method, path, err, data)
			}
		}
		return resp.StatusCode, nil
	}
	return 0, fmt.Errorf("%s %s: no answer before the deadline; last: %s", method, path, last)
}

func (c *Client) Events(sid string) ([]gh.Event, error) {
	var out struct{ Events []gh.Event }
	_, err := c.Call("GET", "/v1/sessions/"+sid+"/events?limit=1000", nil, nil, &out)
	return out.Events, err
}

// drive sends message r.N, presses its card twice at once, and waits for
// the answer.
func (c *Client) Drive(r *Result) {
	sid := r.Session()
	text := fmt.Sprintf("Email Sara report #%d, please.", r.N)
	if _, err := c.Call("POST", "/v1/sessions/"+sid+"/input", nil, map[string]string{"text": text, "requestId": "req-" + strconv.Itoa(r.N)}, nil); err != nil {
		r.Err = err
		return
	}
	var gate gh.Gate
	for {
		var out struct{ Gates []gh.Gate }
		if _, err := c.Call("GET", "/v1/gates?session="+sid, nil, nil, &out); err != nil {
			r.Err = err
			return
		}
		if len(out.Gates) > 0 {
			gate = out.Gates[0]
			break
		}
		if !c.Wait(200 * time.Millisecond) {
			r.Err = fmt.Errorf("%s: no card before the deadline", sid)
			return
		}
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i, press := range []struct {
		decision string
		header   http.Header
	}{{"approve", nil}, {"deny", http.Header{"X-Gatehouse-Source": {"web"}}}} {
		wg.Go(func() {
			time.Sleep(time.Duration(i) * 30 * time.Millisecond)
			var a PressAnswer
			if _, err := c.Call("POST", "/v1/gates/"+gate.ID+"/decision", press.header, map[string]string{"decision": press.decision}, &a); err != nil {
				mu.Lock()
				r.Err = err
				mu.Unlock()
				return
			}
			mu.Lock()
			r.Presses = append(r.Presses, a)
			mu.Unlock()
		})
	}
	wg.Wait()
	if r.Err != nil {
		return
	}
	for c.Wait(300 * time.Millisecond) {
		evs, err := c.Events(sid)
		if err != nil {
			r.Err = err
			return
		}
		for _, e := range evs {
			var f gh.RunFinished
			if e.Kind == gh.KindRunFinished && json.Unmarshal(e.Payload, &f) == nil && f.Status == "done" {
				return
			}
		}
	}
	r.Err = fmt.Errorf("%s: no answer before the deadline", sid)
}

// EmailModel is the fake OpenAI API, answering by what it is asked: a
// user's "report #N" gets a call of email_send with subject "Report #N",
// anything else (a tool's result) "Done.". The fake answers in the order
// of its queue, so each request's reply is set and the request forwarded
// under one lock, until the fake has answered its headers.
type EmailModel struct {
	Addr string
	fake *modeltest.OpenAI
	mu   sync.Mutex
}

var reportRE = regexp.MustCompile(`report #(\d+)`)

func NewEmailModel(t testing.TB) *EmailModel {
	m := &EmailModel{fake: modeltest.NewOpenAI(t, "test-key")}
	target := strings.TrimSuffix(m.fake.BaseURL(), "/v1")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return
		}
		var req struct {
			Messages []json.RawMessage `json:"messages"`
		}
		json.Unmarshal(body, &req)
		reply := modeltest.Reply{Text: "Done."}
		if n := len(req.Messages); n > 0 {
			var last struct{ Role string }
			json.Unmarshal(req.Messages[n-1], &last)
			if mm := reportRE.FindSubmatch(req.Messages[n-1]); last.Role == "user" && mm != nil {
				reply = modeltest.Reply{ToolCalls: []modeltest.ToolCall{{ID: "call_" + string(mm[1]), Name: "email_send",
					Arguments: fmt.Sprintf(`{"to":"Sara","subject":"Report #%s","body":"Report %s is ready."}`, mm[1], mm[1])}}}
			}
		}
		out, _ := http.NewRequestWithContext(r.Context(), r.Method, target+r.URL.RequestURI(), bytes.NewReader(body))
		out.Header = r.Header.Clone()
		m.mu.Lock()
		m.fake.SetDefault(reply)
		resp, err := http.DefaultTransport.RoundTrip(out)
		m.mu.Unlock()
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		buf := make([]byte, 4096)
		for {
			n, err := resp.Body.Read(buf)
			if n > 0 {
				w.Write(buf[:n])
				w.(http.Flusher).Flush()
			}
			if err != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	m.Addr = srv.Listener.Addr().String()
	return m
}

// Link is a TCP forwarder to a server that can be taken down: down closes
// its listener (new connections are refused) and every connection through
// it; up listens on the same address again.
type Link struct {
	Addr   string
	target string

	mu    sync.Mutex
	ln    net.Listener
	conns map[net.Conn]struct{}
}

func NewLink(t testing.TB, target string) *Link {
	l := &Link{target: target, conns: map[net.Conn]struct{}{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l.Addr = ln.Addr().String()
	l.serve(ln)
	t.Cleanup(l.Down)
	return l
}

func (l *Link) serve(ln net.Listener) {
	l.mu.Lock()
	l.ln = ln
	l.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go l.pipe(c)
		}
	}()
}

func (l *Link) pipe(c net.Conn) {
	s, err := net.Dial("tcp", l.target)
	if err != nil {
		c.Close()
		return
	}
	l.mu.Lock()
	if l.ln == nil { // went down meanwhile
		l.mu.Unlock()
		c.Close()
		s.Close()
		return
	}
	l.conns[c], l.conns[s] = struct{}{}, struct{}{}
	l.mu.Unlock()
	done := make(chan struct{}, 2)
	go func() { io.Copy(s, c); done <- struct{}{} }()
	go func() { io.Copy(c, s); done <- struct{}{} }()
	<-done
	c.Close()
	s.Close()
	l.mu.Lock()
	delete(l.conns, c)
	delete(l.conns, s)
	l.mu.Unlock()
}

func (l *Link) Down() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ln != nil {
		l.ln.Close()
		l.ln = nil
	}
	for c := range l.conns {
		c.Close()
	}
}

func (l *Link) Up(t testing.TB) {
	var ln net.Listener
	var err error
	testenv.Eventually(t, "listening on "+l.Addr+" again", func() bool {
		ln, err = net.Listen("tcp", l.Addr)
		return err == nil
	})
	l.serve(ln)
}

// NeedService skips the test when a server program is missing, or fails
// it when services are required.
func NeedService(t testing.TB, what string) {
	t.Helper()
	if testenv.RequireServices() {
		t.Fatalf("%s is required (GATEHOUSE_TEST_REQUIRE_SERVICES=1) but not installed", what)
	}
	t.Skipf("%s not installed: test skipped", what)
}

// Postgres is a private Postgres cluster on a free loopback port, run as
// the postgres user when the test runs as root (initdb and postgres refuse
// root).
type Postgres struct {
	URL                  string
	bin, dir, data, port string
	owner                *user.User
}

func StartPostgres(t testing.TB) *Postgres {
	t.Helper()
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	sort.Strings(bins)
	if len(bins) == 0 {
		if p, err := exec.LookPath("initdb"); err == nil {
			bins = []string{p}
		} else {
			NeedService(t, "initdb (Postgres server)")
		}
	}
	c := &Postgres{bin: filepath.Dir(bins[len(bins)-1])}
	dir, err := os.MkdirTemp("", "gatehouse-deps-pg-")
	if err != nil {
		t.Fatal(err)
	}
	c.dir, c.data = dir, filepath.Join(dir, "data")
	t.Cleanup(func() { os.RemoveAll(dir) })
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			NeedService(t, "the postgres user (initdb refuses root)")
		}
		c.owner = u
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := c.Command("initdb", "-D", c.data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync").CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	_, c.port, _ = net.SplitHostPort(FreeAddr(t))
	c.URL = "postgres://postgres@127.0.0.1:" + c.port + "/postgres?sslmode=disable"
	c.Start(t)
	t.Cleanup(func() { _ = c.Command("pg_ctl", "stop", "-D", c.data, "-m", "immediate").Run() })
	return c
}

func (c *Postgres) Command(name string, args ...string) *exec.Cmd {
	prog := filepath.Join(c.bin, name)
	cmd := exec.Command(prog, args...)
	if c.owner != nil {
		cmd = exec.Command("runuser", append([]string{"-u", "postgres", "--", prog}, args...)...)
	}
	cmd.Dir = c.dir // a directory the postgres user may enter
	return cmd
}

func (c *Postgres) Start(t testing.TB) {
	t.Helper()
	opts := fmt.Sprintf("-p %s -c listen_addresses=127.0.0.1 -k %s -c fsync=off -c max_connections=200", c.port, c.dir)
	if out, err := c.Command("pg_ctl", "start", "-w", "-t", "60", "-D", c.data, "-l", filepath.Join(c.dir, "log"), "-o", opts).CombinedOutput(); err != nil {
		log, _ := os.ReadFile(filepath.Join(c.dir, "log"))
		t.Fatalf("pg_ctl start: %v\n%s\n%s", err, out, log)
	}
}

func (c *Postgres) Ctl(t testing.TB, args ...string) {
	t.Helper()
	if out, err := c.Command("pg_ctl", append(args, "-D", c.data, "-w")...).CombinedOutput(); err != nil {
		t.Fatalf("pg_ctl %v: %v\n%s", args, err, out)
	}
}

// Redis is a private redis-server on a free loopback port, keeping
// nothing on disk: a restart empties it.
type Redis struct {
	prog, port, dir string
	cmd             *exec.Cmd
	done            chan struct{}
}

func StartRedis(t testing.TB) *Redis {
	t.Helper()
	prog, err := exec.LookPath("redis-server")
	if err != nil {
		NeedService(t, "redis-server")
	}
	_, port, _ := net.SplitHostPort(FreeAddr(t))
	r := &Redis{prog: prog, port: port, dir: t.TempDir()}
	r.Start(t)
	t.Cleanup(func() { r.Kill(t) })
	return r
}

func (r *Redis) URL() string { return "redis://127.0.0.1:" + r.port + "/0" }

func (r *Redis) Start(t testing.TB) {
	t.Helper()
	cmd := exec.Command(r.prog, "--port", r.port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", r.dir)
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r.cmd, r.done = cmd, make(chan struct{})
	go func() { cmd.Wait(); close(r.done) }()
	c := goredis.NewClient(&goredis.Options{Addr: "127.0.0.1:" + r.port})
	defer c.Close()
	testenv.Eventually(t, "redis-server answering", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		return c.Ping(ctx).Err() == nil
	})
}

// kill ends the server as a crash would (SIGKILL): what it held is gone.
func (r *Redis) Kill(t testing.TB) {
	if r.cmd == nil {
		return
	}
	_ = r.cmd.Process.Kill()
	<-r.done
	r.cmd = nil
}

// Log is what a session's events say of one conversation.
type Log struct {
	// Users counts the user messages: an acknowledged input is there once.
	Users int
	// Answers are the texts of the completed answers (no tool calls).
	Answers []string
	// Decisions are the gate.decided events.
	Decisions []gh.GateDecided
	// Result is the last tool.result, nil when none.
	Result *gh.ToolResult
	// Finished: a run.finished is in the log.
	Finished bool
}

// ReadLog reads a session's events into a Log.
func ReadLog(evs []gh.Event) Log {
	var l Log
	for _, e := range evs {
		switch e.Kind {
		case gh.KindUserMessage:
			l.Users++
		case gh.KindAssistantMessage:
			var a gh.AssistantMessage
			json.Unmarshal(e.Payload, &a)
			if a.Text != "" && len(a.ToolCalls) == 0 {
				l.Answers = append(l.Answers, a.Text)
			}
		case gh.KindGateDecided:
			var d gh.GateDecided
			json.Unmarshal(e.Payload, &d)
			l.Decisions = append(l.Decisions, d)
		case gh.KindToolResult:
			var tr gh.ToolResult
			json.Unmarshal(e.Payload, &tr)
			l.Result = &tr
		case gh.KindRunFinished:
			l.Finished = true
		}
	}
	return l
}
