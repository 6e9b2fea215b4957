package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/httpapi"
	"github.com/gatehouse/gatehouse/kernel"
)

// listening starts a server on a loopback port over a fresh SQLite store,
// stopped when the test ends.
func listening(t *testing.T, cfg httpapi.Config) (*httpapi.Server, *kernel.Kernel) {
	t.Helper()
	st, _ := backends[0].open(t)
	k := kernel.New(st, kernel.Config{})
	cfg.Kernel, cfg.Store, cfg.Addr = k, st, "127.0.0.1:0"
	if cfg.APIToken == "" {
		cfg.APIToken = testToken
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	srv := httpapi.New(cfg)
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		defer cancel()
		_ = srv.Stop(ctx)
	})
	return srv, k
}

// fresh is a client that opens a connection per request, so it holds none
// of the server's slots between requests.
func fresh() *http.Client {
	return &http.Client{Transport: tokenTransport{base: &http.Transport{DisableKeepAlives: true}}, Timeout: waitFor}
}

// getReply GETs url with c.
func getReply(t *testing.T, c *http.Client, url string) reply {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return reply{status: resp.StatusCode, header: resp.Header, body: body}
}

// rawConn is a client connection driven by hand.
type rawConn struct {
	net.Conn
	br *bufio.Reader
}

func dial(t *testing.T, addr string) *rawConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawConn{Conn: c, br: bufio.NewReader(c)}
}

// do sends one keep-alive request and reads its answer.
func (c *rawConn) do(t *testing.T, method, path string) *http.Response {
	t.Helper()
	if _, err := fmt.Fprintf(c, "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer "+testToken+"\r\n\r\n", method, path); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(waitFor))
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// closedByServer waits for the server to close c: a read that ends with
// EOF or a reset, not our own hang guard.
func (c *rawConn) closedByServer(t *testing.T, what string) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(waitFor))
	_, err := io.Copy(io.Discard, c.br)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("%s: the server never closed the connection", what)
	}
}

// An idle keep-alive connection is closed after IdleTimeout instead of
// holding a file forever.
func TestIdleKeepAliveConnectionsAreClosed(t *testing.T) {
	srv, _ := listening(t, httpapi.Config{IdleTimeout: 200 * time.Millisecond})
	conns := make([]*rawConn, 20)
	for i := range conns {
		conns[i] = dial(t, srv.Addr())
		if resp := conns[i].do(t, "GET", "/healthz"); resp.StatusCode != http.StatusOK {
			t.Fatalf("healthz: %d", resp.StatusCode)
		}
	}
	for i, c := range conns {
		c.closedByServer(t, fmt.Sprintf("idle connection %d", i))
	}
}

// A body that trickles in is cut at ReadTimeout, on the API and on a
// webhook alike, with a typed error; nothing reaches the handler or the
// log. A body sent in time is unaffected.
func TestSlowBodiesAreCutAtTheReadTimeout(t *testing.T) {
	var hookCalls atomic.Int32
	hook := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hookCalls.Add(1)
		w.WriteHeader(http.StatusOK)
	})
	srv, k := listening(t, httpapi.Config{ReadTimeout: 300 * time.Millisecond, Hooks: map[string]http.Handler{"test": hook}})

	for _, path := range []string{"/v1/sessions/s1/input", "/hooks/test"} {
		c := dial(t, srv.Addr())
		fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer "+testToken+"\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{\"text\":\"h", path)
		_ = c.SetReadDeadline(time.Now().Add(waitFor))
		resp, err := http.ReadResponse(c.br, nil)
		if err != nil {
			t.Fatalf("%s: no answer to a slow body: %v", path, err)
		}
		body, _ := io.ReadAll(resp.Body)
		r := reply{status: resp.StatusCode, header: resp.Header, body: body}
		r.expect(t, http.StatusBadRequest, gh.CodeInvalid)
		if msg := r.message(t); !strings.Contains(msg, "did not arrive within the read timeout of 300ms") {
			t.Fatalf("%s: message %q", path, msg)
		}
		c.closedByServer(t, path)
	}
	if n := hookCalls.Load(); n != 0 {
		t.Fatalf("the webhook handler saw %d cut bodies", n)
	}
	if _, err := k.Session(context.Background(), "s1"); !gh.IsCode(err, gh.CodeUnknownSession) {
		t.Fatalf("a cut input created its session: %v", err)
	}

	resp, err := fresh().Post("http://"+srv.Addr()+"/v1/sessions/s1/input", "application/json", strings.NewReader(`{"text":"in time"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("a body sent in time: %d", resp.StatusCode)
	}
	resp, err = fresh().Post("http://"+srv.Addr()+"/hooks/test", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || hookCalls.Load() != 1 {
		t.Fatalf("a webhook sent in time: %d, %d calls", resp.StatusCode, hookCalls.Load())
	}
}

// The SSE stream lives far past the read and write timeouts that bound
// every other request.
func TestStreamOutlivesTheRequestTimeouts(t *testing.T) {
	srv, k := listening(t, httpapi.Config{ReadTimeout: 100 * time.Millisecond, WriteTimeout: 100 * time.Millisecond, Heartbeat: 30 * time.Millisecond})
	commit(t, k, "s1", "first")
	s := openStream(t, fresh(), "http://"+srv.Addr()+"/v1/sessions/s1/stream")
	if ev := s.committed(); ev.Seq != 1 {
		t.Fatalf("seq %d", ev.Seq)
	}
	time.Sleep(time.Second) // ten times both timeouts
	commitTo(t, k, "s1", "later")
	if ev := s.committed(); ev.Seq != 2 || userMessage(t, ev).Text != "later" {
		t.Fatalf("after the timeouts: %+v", ev)
	}
}

// A stream whose client stops reading is dropped once a write has waited
// WriteTimeout, freeing its slot under MaxStreams.
func TestStreamDropsAClientThatStopsReading(t *testing.T) {
	srv, k := listening(t, httpapi.Config{WriteTimeout: 300 * time.Millisecond, MaxStreams: 1, Heartbeat: 50 * time.Millisecond})
	commit(t, k, "s1", "hi")
	stuck := dial(t, srv.Addr())
	fmt.Fprintf(stuck, "GET /v1/sessions/s1/stream HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer "+testToken+"\r\n\r\n")
	_ = stuck.SetReadDeadline(time.Now().Add(waitFor))
	resp, err := http.ReadResponse(stuck.br, nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("open the stream: %v %v", resp, err)
	}
	// It holds the only slot.
	getReply(t, fresh(), "http://"+srv.Addr()+"/v1/sessions/s1/stream").expect(t, http.StatusServiceUnavailable, gh.CodeUnavailable)

	// More than the socket buffers on both ends hold, never read.
	big := strings.Repeat("x", 256<<10)
	for range 100 {
		commitTo(t, k, "s1", big)
	}
	deadline := time.Now().Add(waitFor)
	for {
		resp, err := fresh().Head("http://" + srv.Addr() + "/v1/sessions/s1/stream")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the stream of a client that stopped reading still holds its slot (%d)", resp.StatusCode)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Over MaxStreams a new stream gets 503 with Retry-After and a typed
// error; once one ends, a new one opens.
func TestStreamCapRefusesWithRetryAfter(t *testing.T) {
	run(t, httpapi.Config{MaxStreams: 2}, func(t *testing.T, e *env) {
		commit(t, e.k, "s1", "hi")
		a := openStream(t, e.ts.Client(), e.streamURL("s1", ""))
		openStream(t, e.ts.Client(), e.streamURL("s1", ""))
		r := e.do("GET", "/v1/sessions/s1/stream", nil).expect(t, http.StatusServiceUnavailable, gh.CodeUnavailable)
		if r.header.Get("Retry-After") == "" || !strings.Contains(r.message(t), "limit of 2 open streams") {
			t.Fatalf("refusal: %v %s", r.header, r.body)
		}
		// Other routes are not held to the stream cap.
		e.do("GET", "/v1/sessions/s1/events", nil).expect(t, http.StatusOK, "")
		a.close()
		deadline := time.Now().Add(waitFor)
		for e.do("HEAD", "/v1/sessions/s1/stream", nil).status != http.StatusOK {
			if time.Now().After(deadline) {
				t.Fatal("a closed stream did not free its slot")
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}

// At MaxConns a new connection gets a fast 503 with Retry-After instead
// of waiting, while /healthz and /readyz still answer through the
// reserve and on the probe listener; beyond the reserve a connection is
// closed at once; and the cap frees up as connections close.
func TestConnectionCapAnswersAndProbesStayUp(t *testing.T) {
	srv, _ := listening(t, httpapi.Config{MaxConns: 4, ProbeReserve: 2, ProbeAddr: "127.0.0.1:0"})
	base := "http://" + srv.Addr()
	var held []*rawConn
	for range 4 {
		c := dial(t, srv.Addr())
		c.do(t, "GET", "/healthz")
		held = append(held, c)
	}

	r := getReply(t, fresh(), base+"/v1/info").expect(t, http.StatusServiceUnavailable, gh.CodeUnavailable)
	if r.header.Get("Retry-After") == "" || !strings.Contains(r.message(t), "limit of 4 open connections") {
		t.Fatalf("over the cap: %v %s", r.header, r.body)
	}
	for _, p := range []string{"/healthz", "/readyz"} {
		if r := getReply(t, fresh(), base+p); r.status != http.StatusOK {
			t.Fatalf("%s over the cap: %d %s", p, r.status, r.body)
		}
	}

	// Fill the reserve with connections that send nothing.
	for range 2 {
		c := dial(t, srv.Addr())
		held = append(held, c)
	}
	time.Sleep(100 * time.Millisecond) // let the server accept them
	dial(t, srv.Addr()).closedByServer(t, "a connection beyond the reserve")

	// The probe listener answers however full the main one is, and
	// serves nothing else.
	probe := "http://" + srv.ProbeAddr()
	for _, p := range []string{"/healthz", "/readyz"} {
		if r := getReply(t, fresh(), probe+p); r.status != http.StatusOK {
			t.Fatalf("%s on the probe listener: %d %s", p, r.status, r.body)
		}
	}
	getReply(t, fresh(), probe+"/v1/info").expect(t, http.StatusNotFound, gh.CodeNotFound)

	for _, c := range held {
		c.Close()
	}
	// Until the server has seen them close, a new connection may still
	// be over the cap or beyond the reserve.
	deadline := time.Now().Add(waitFor)
	for {
		resp, err := fresh().Get(base + "/v1/info")
		if err == nil {
			var info map[string]any
			jerr := json.NewDecoder(resp.Body).Decode(&info)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				if jerr != nil || info["version"] == nil {
					t.Fatalf("info: %v %v", info, jerr)
				}
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cap did not free up: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
