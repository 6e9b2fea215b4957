package main

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
	"syscall"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/internal/testing/smtptest"
	"github.com/gatehouse/gatehouse/internal/testing/testenv"
	"github.com/gatehouse/gatehouse/models/modeltest"
)

// Dependencies fail and come back, under a stream of messages and presses:
// a private Postgres cluster is restarted (pg_ctl stop -m fast / start), a
// private Redis is killed and started again empty, and the SMTP server and
// the model API go away for GATEHOUSE_TEST_OUTAGE (default 15s). The
// gateway — one process, never restarted — keeps answering /livez,
// reports not-ready while the store is gone and ready after, and at the
// end every acknowledged message is in the log and answered, every
// acknowledged press agrees with the one decision recorded, and no card
// sent more than one mail.
func TestDepsFailAndComeBack(t *testing.T) {
	outage := 15 * time.Second
	if v := os.Getenv("GATEHOUSE_TEST_OUTAGE"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("GATEHOUSE_TEST_OUTAGE: %v", err)
		}
		outage = d
	}
	pg := startPostgres(t)
	rd := startRedis(t)
	mail := smtptest.Start(t)
	smtpLink := newLink(t, mail.Addr)
	model := newEmailModel(t)
	modelLink := newLink(t, model.addr)

	p := start(t,
		"GATEHOUSE_DATABASE_URL="+pg.url, "GATEHOUSE_REDIS_URL="+rd.url(),
		"GATEHOUSE_MODEL=openai:test-model", "OPENAI_API_KEY=test-key", "OPENAI_BASE_URL=http://"+modelLink.addr+"/v1",
		"GATEHOUSE_SMTP_URL=smtp://"+smtpLink.addr+"?tls=none", "GATEHOUSE_EMAIL_FROM=agent@example.com",
		"GATEHOUSE_CONTACTS=Sara=sara@example.com",
		"GATEHOUSE_LEASE_TTL=2s", "GATEHOUSE_MODEL_RETRIES=1", "GATEHOUSE_MODEL_TIMEOUT=20s",
		// A model outage costs attempts: enough of them that every turn
		// outlives it (an operator sizes these to the outages they ride out).
		"GATEHOUSE_MAX_ATTEMPTS=1000", "GATEHOUSE_RETRY_BACKOFF=200ms",
		"GATEHOUSE_APPROVAL_TIMEOUT=30m",
	)
	pid := p.cmd.Process.Pid
	base := "http://" + p.addr
	if code := probe(base + "/readyz"); code != 200 {
		t.Fatalf("/readyz at start: %d", code)
	}

	// /livez is watched for the whole test: it must never fail.
	var livezFail atomic.Value
	stopWatch := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for {
			select {
			case <-stopWatch:
				return
			case <-time.After(100 * time.Millisecond):
			}
			if code := probe(base + "/livez"); code != 200 && livezFail.Load() == nil {
				livezFail.Store(fmt.Sprintf("/livez answered %d at %s", code, time.Now().Format(time.TimeOnly)))
			}
		}
	}()

	// The stream: one message every 500ms, each in its own session, each
	// asking for a mail that needs a card; its card gets two presses at
	// once (approve from the API, deny from the web), retried on errors.
	c := &depsClient{base: base, deadline: time.Now().Add(6 * time.Minute), quit: make(chan struct{})}
	t.Cleanup(func() { close(c.quit) }) // a failed test stops its clients
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		results []*depsResult
	)
	stop := make(chan struct{})
	streaming := make(chan struct{})
	go func() {
		defer close(streaming)
		for n := 0; ; n++ {
			select {
			case <-stop:
				return
			case <-time.After(500 * time.Millisecond):
			}
			r := &depsResult{n: n}
			mu.Lock()
			results = append(results, r)
			mu.Unlock()
			wg.Go(func() { c.drive(r) })
		}
	}()
	chaos(t, base, pg, rd, smtpLink, modelLink, outage)
	time.Sleep(2 * time.Second) // and a little of the calm after
	close(stop)
	<-streaming
	wg.Wait()
	close(stopWatch)
	<-watched
	if t.Failed() {
		return
	}

	if v := livezFail.Load(); v != nil {
		t.Errorf("liveness failed while dependencies came and went: %s", v)
	}
	select {
	case err := <-p.done:
		t.Fatalf("the gateway exited: %v", err)
	default:
	}
	if p.cmd.Process.Pid != pid {
		t.Fatalf("the gateway was restarted")
	}
	if code := probe(base + "/readyz"); code != 200 {
		t.Errorf("/readyz after everything came back: %d", code)
	}

	// Counting, with every dependency up.
	mails := map[string]int{}
	for _, m := range mail.Mails() {
		mails[m.Subject]++
	}
	var acked, decided, approved, sent, unsent int
	for _, r := range results {
		if r.err != nil {
			t.Errorf("message %d: %v", r.n, r.err)
			continue
		}
		acked++
		sid := r.session()
		evs, err := c.events(sid)
		if err != nil {
			t.Fatalf("events of %s: %v", sid, err)
		}
		var users, answers int
		var decisions []gh.GateDecided
		var result *gh.ToolResult
		for _, e := range evs {
			switch e.Kind {
			case gh.KindUserMessage:
				users++
			case gh.KindAssistantMessage:
				var a gh.AssistantMessage
				json.Unmarshal(e.Payload, &a)
				if a.Text != "" && len(a.ToolCalls) == 0 {
					answers++
				}
			case gh.KindGateDecided:
				var d gh.GateDecided
				json.Unmarshal(e.Payload, &d)
				decisions = append(decisions, d)
			case gh.KindToolResult:
				var tr gh.ToolResult
				json.Unmarshal(e.Payload, &tr)
				result = &tr
			}
		}
		if users != 1 || answers < 1 {
			t.Errorf("%s: acknowledged input in the log %d times, answered %d times; want 1 and at least 1", sid, users, answers)
		}
		if len(decisions) != 1 {
			t.Errorf("%s: %d gate.decided events, want 1 (%d presses acknowledged)", sid, len(decisions), len(r.presses))
			continue
		}
		d := decisions[0]
		decided++
		wins := 0
		for _, pr := range r.presses {
			if pr.Decision != string(d.Decision) || pr.Surface != d.Surface {
				t.Errorf("%s: a press was told %s on %s, the log says %s on %s", sid, pr.Decision, pr.Surface, d.Decision, d.Surface)
			}
			if pr.Won {
				wins++
			}
		}
		if wins > 1 || len(r.presses) == 0 {
			t.Errorf("%s: %d presses acknowledged, %d told they won", sid, len(r.presses), wins)
		}
		got := mails[r.subject()]
		switch {
		case got > 1:
			t.Errorf("%s: %d mails for one card", sid, got)
		case d.Decision != gh.GateApproved && got != 0:
			t.Errorf("%s: %s, yet %d mail sent", sid, d.Decision, got)
		case d.Decision == gh.GateApproved && result != nil && !result.IsError && got != 1:
			t.Errorf("%s: approved and sent (%q), but %d mails arrived", sid, result.Content, got)
		}
		if d.Decision == gh.GateApproved {
			approved++
			if got == 1 {
				sent++
			} else {
				unsent++
			}
		}
	}
	t.Logf("%d messages acknowledged and answered, %d decisions, %d approved: %d mails sent, %d not sent (SMTP down, reported); the clients retried %d requests", acked, decided, approved, sent, unsent, c.retries.Load())
	if acked == 0 || approved == 0 {
		t.Errorf("the stream proved nothing: %d acknowledged, %d approved", acked, approved)
	}
	p.stopWith(t, syscall.SIGTERM)
}

// chaos takes the dependencies away and brings them back, checking the
// probes as it goes.
func chaos(t *testing.T, base string, pg *pgCluster, rd *redisServer, smtpLink, modelLink *link, outage time.Duration) {
	time.Sleep(3 * time.Second)
	t.Log("stopping Postgres")
	pg.ctl(t, "stop", "-m", "fast")
	testenv.EventuallyWithin(t, time.Minute, "/readyz 503 with Postgres down", func() bool { return probe(base+"/readyz") == 503 })
	time.Sleep(5 * time.Second)
	if code := probe(base + "/readyz"); code != 503 {
		t.Errorf("/readyz with Postgres still down: %d", code)
	}
	t.Log("starting Postgres")
	pg.start(t)
	testenv.EventuallyWithin(t, time.Minute, "/readyz 200 with Postgres back", func() bool { return probe(base+"/readyz") == 200 })

	time.Sleep(2 * time.Second)
	t.Log("killing Redis")
	rd.kill(t)
	testenv.EventuallyWithin(t, time.Minute, "/readyz 503 with Redis down", func() bool { return probe(base+"/readyz") == 503 })
	time.Sleep(3 * time.Second)
	t.Log("starting Redis, empty")
	rd.start(t)
	testenv.EventuallyWithin(t, time.Minute, "/readyz 200 with Redis back", func() bool { return probe(base+"/readyz") == 200 })

	time.Sleep(2 * time.Second)
	t.Logf("SMTP server and model API down for %s", outage)
	smtpLink.down()
	modelLink.down()
	time.Sleep(outage)
	if code := probe(base + "/readyz"); code != 200 {
		t.Errorf("/readyz with only SMTP and the model down: %d; they are not the store", code)
	}
	smtpLink.up(t)
	modelLink.up(t)
	t.Log("everything is back")
}

var probeClient = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}

// probe returns the status of GET url, or 0 when there was no answer.
func probe(url string) int {
	resp, err := probeClient.Get(url)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// depsResult is what the client of one message was told.
type depsResult struct {
	n       int
	err     error // the client gave up: nothing was acknowledged
	presses []pressAnswer
}

type pressAnswer struct {
	Decision string `json:"decision"`
	Surface  string `json:"surface"`
	Won      bool   `json:"won"`
}

func (r *depsResult) session() string { return fmt.Sprintf("deps-%d", r.n) }
func (r *depsResult) subject() string { return fmt.Sprintf("Report #%d", r.n) }

// depsClient is an API client as a real one behaves: every request is
// retried on a network error or a 5xx until the deadline, inputs with the
// same requestId.
type depsClient struct {
	base     string
	deadline time.Time
	quit     chan struct{}
	retries  atomic.Int64 // requests sent again after an error or a 5xx
}

// wait sleeps d, or reports false when the test is over.
func (c *depsClient) wait(d time.Duration) bool {
	select {
	case <-c.quit:
		return false
	case <-time.After(d):
		return time.Now().Before(c.deadline)
	}
}

var apiClient = &http.Client{Timeout: 15 * time.Second}

// call sends one request until it gets an answer that is not a failure
// of the gateway or its dependencies.
func (c *depsClient) call(method, path string, header http.Header, body, out any) (int, error) {
	var raw []byte
	if body != nil {
		raw, _ = json.Marshal(body)
	}
	last := "the test ended"
	for first := true; first || c.wait(200*time.Millisecond); first = false {
		if !first {
			c.retries.Add(1)
		}
		req, _ := http.NewRequest(method, c.base+path, bytes.NewReader(raw))
		req.Header.Set("Content-Type", "application/json")
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

func (c *depsClient) events(sid string) ([]gh.Event, error) {
	var out struct{ Events []gh.Event }
	_, err := c.call("GET", "/v1/sessions/"+sid+"/events?limit=1000", nil, nil, &out)
	return out.Events, err
}

// drive sends message r.n, presses its card twice at once, and waits for
// the answer.
func (c *depsClient) drive(r *depsResult) {
	sid := r.session()
	text := fmt.Sprintf("Email Sara report #%d, please.", r.n)
	if _, err := c.call("POST", "/v1/sessions/"+sid+"/input", nil, map[string]string{"text": text, "requestId": "req-" + strconv.Itoa(r.n)}, nil); err != nil {
		r.err = err
		return
	}
	var gate gh.Gate
	for {
		var out struct{ Gates []gh.Gate }
		if _, err := c.call("GET", "/v1/gates?session="+sid, nil, nil, &out); err != nil {
			r.err = err
			return
		}
		if len(out.Gates) > 0 {
			gate = out.Gates[0]
			break
		}
		if !c.wait(200 * time.Millisecond) {
			r.err = fmt.Errorf("%s: no card before the deadline", sid)
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
			var a pressAnswer
			if _, err := c.call("POST", "/v1/gates/"+gate.ID+"/decision", press.header, map[string]string{"decision": press.decision}, &a); err != nil {
				mu.Lock()
				r.err = err
				mu.Unlock()
				return
			}
			mu.Lock()
			r.presses = append(r.presses, a)
			mu.Unlock()
		})
	}
	wg.Wait()
	if r.err != nil {
		return
	}
	for c.wait(300 * time.Millisecond) {
		evs, err := c.events(sid)
		if err != nil {
			r.err = err
			return
		}
		for _, e := range evs {
			var f gh.RunFinished
			if e.Kind == gh.KindRunFinished && json.Unmarshal(e.Payload, &f) == nil && f.Status == "done" {
				return
			}
		}
	}
	r.err = fmt.Errorf("%s: no answer before the deadline", sid)
}

// emailModel is the fake OpenAI API, answering by what it is asked: a
// user's "report #N" gets a call of email_send with subject "Report #N",
// anything else (a tool's result) "Done.". The fake answers in the order
// of its queue, so each request's reply is set and the request forwarded
// under one lock, until the fake has answered its headers.
type emailModel struct {
	fake *modeltest.OpenAI
	addr string
	mu   sync.Mutex
}

var reportRE = regexp.MustCompile(`report #(\d+)`)

func newEmailModel(t *testing.T) *emailModel {
	m := &emailModel{fake: modeltest.NewOpenAI(t, "test-key")}
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
	m.addr = srv.Listener.Addr().String()
	return m
}

// link is a TCP forwarder to a server that can be taken down: down closes
// its listener (new connections are refused) and every connection through
// it; up listens on the same address again.
type link struct {
	addr, target string

	mu    sync.Mutex
	ln    net.Listener
	conns map[net.Conn]struct{}
}

func newLink(t *testing.T, target string) *link {
	l := &link{target: target, conns: map[net.Conn]struct{}{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l.addr = ln.Addr().String()
	l.serve(ln)
	t.Cleanup(l.down)
	return l
}

func (l *link) serve(ln net.Listener) {
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

func (l *link) pipe(c net.Conn) {
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

func (l *link) down() {
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

func (l *link) up(t *testing.T) {
	var ln net.Listener
	var err error
	testenv.Eventually(t, "listening on "+l.addr+" again", func() bool {
		ln, err = net.Listen("tcp", l.addr)
		return err == nil
	})
	l.serve(ln)
}

// needService skips the test when a server program is missing, or fails
// it when services are required.
func needService(t *testing.T, what string) {
	t.Helper()
	if testenv.RequireServices() {
		t.Fatalf("%s is required (GATEHOUSE_TEST_REQUIRE_SERVICES=1) but not installed", what)
	}
	t.Skipf("%s not installed: test skipped", what)
}

// pgCluster is a private Postgres cluster on a free loopback port, run as
// the postgres user when the test runs as root (initdb and postgres refuse
// root).
type pgCluster struct {
	bin, dir, data, port, url string
	owner                     *user.User
}

func startPostgres(t *testing.T) *pgCluster {
	t.Helper()
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	sort.Strings(bins)
	if len(bins) == 0 {
		if p, err := exec.LookPath("initdb"); err == nil {
			bins = []string{p}
		} else {
			needService(t, "initdb (Postgres server)")
		}
	}
	c := &pgCluster{bin: filepath.Dir(bins[len(bins)-1])}
	dir, err := os.MkdirTemp("", "gatehouse-deps-pg-")
	if err != nil {
		t.Fatal(err)
	}
	c.dir, c.data = dir, filepath.Join(dir, "data")
	t.Cleanup(func() { os.RemoveAll(dir) })
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			needService(t, "the postgres user (initdb refuses root)")
		}
		c.owner = u
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := c.command("initdb", "-D", c.data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync").CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	_, c.port, _ = net.SplitHostPort(freeAddr(t))
	c.url = "postgres://postgres@127.0.0.1:" + c.port + "/postgres?sslmode=disable"
	c.start(t)
	t.Cleanup(func() { _ = c.command("pg_ctl", "stop", "-D", c.data, "-m", "immediate").Run() })
	return c
}

func (c *pgCluster) command(name string, args ...string) *exec.Cmd {
	prog := filepath.Join(c.bin, name)
	cmd := exec.Command(prog, args...)
	if c.owner != nil {
		cmd = exec.Command("runuser", append([]string{"-u", "postgres", "--", prog}, args...)...)
	}
	cmd.Dir = c.dir // a directory the postgres user may enter
	return cmd
}

func (c *pgCluster) start(t *testing.T) {
	t.Helper()
	opts := fmt.Sprintf("-p %s -c listen_addresses=127.0.0.1 -k %s -c fsync=off -c max_connections=200", c.port, c.dir)
	if out, err := c.command("pg_ctl", "start", "-w", "-t", "60", "-D", c.data, "-l", filepath.Join(c.dir, "log"), "-o", opts).CombinedOutput(); err != nil {
		log, _ := os.ReadFile(filepath.Join(c.dir, "log"))
		t.Fatalf("pg_ctl start: %v\n%s\n%s", err, out, log)
	}
}

func (c *pgCluster) ctl(t *testing.T, args ...string) {
	t.Helper()
	if out, err := c.command("pg_ctl", append(args, "-D", c.data, "-w")...).CombinedOutput(); err != nil {
		t.Fatalf("pg_ctl %v: %v\n%s", args, err, out)
	}
}

// redisServer is a private redis-server on a free loopback port, keeping
// nothing on disk: a restart empties it.
type redisServer struct {
	prog, port, dir string
	cmd             *exec.Cmd
	done            chan struct{}
}

func startRedis(t *testing.T) *redisServer {
	t.Helper()
	prog, err := exec.LookPath("redis-server")
	if err != nil {
		needService(t, "redis-server")
	}
	_, port, _ := net.SplitHostPort(freeAddr(t))
	r := &redisServer{prog: prog, port: port, dir: t.TempDir()}
	r.start(t)
	t.Cleanup(func() { r.kill(t) })
	return r
}

func (r *redisServer) url() string { return "redis://127.0.0.1:" + r.port + "/0" }

func (r *redisServer) start(t *testing.T) {
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
func (r *redisServer) kill(t *testing.T) {
	if r.cmd == nil {
		return
	}
	_ = r.cmd.Process.Kill()
	<-r.done
	r.cmd = nil
}
