package httpapi_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/httpapi"
	"github.com/gatehouse/gatehouse/internal/testing/testenv"
	"github.com/gatehouse/gatehouse/kernel"
	"github.com/gatehouse/gatehouse/store"
	"github.com/gatehouse/gatehouse/store/postgres"
	"github.com/gatehouse/gatehouse/store/sqlite"
	"github.com/gatehouse/gatehouse/store/storetest"
)

// waitFor bounds how long a test waits for something that must happen; it
// is a hang guard, not a speed assertion.
const waitFor = 20 * time.Second

// backend opens real stores: a fresh one, and a second handle on the same
// database (another replica).
type backend struct {
	name string
	open func(t *testing.T) (st store.Store, peer func() store.Store)
}

var backends = []backend{
	{"sqlite", func(t *testing.T) (store.Store, func() store.Store) {
		path := filepath.Join(t.TempDir(), "gatehouse.db")
		open := func() store.Store {
			// NORMAL: these tests are about the API, not power-cut
			// durability, and fsync per commit only makes them slow.
			st, err := sqlite.Open(context.Background(), sqlite.Config{Path: path, Synchronous: "NORMAL"})
			if err != nil {
				t.Fatalf("open sqlite: %v", err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		}
		return open(), open
	}},
	{"postgres", func(t *testing.T) (store.Store, func() store.Store) {
		url := testenv.PostgresURL(t)
		open := func() store.Store {
			return storetest.OpenPostgres(t, postgres.Config{URL: url})
		}
		return open(), open
	}},
}

// env is one server over one real store.
type env struct {
	t     *testing.T
	k     *kernel.Kernel
	srv   *httpapi.Server
	ts    *httptest.Server
	token string
	peer  func() store.Store
}

// run runs fn against every backend.
func run(t *testing.T, cfg httpapi.Config, fn func(t *testing.T, e *env)) {
	t.Helper()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			st, peer := b.open(t)
			fn(t, newEnv(t, st, peer, cfg))
		})
	}
}

func newEnv(t *testing.T, st store.Store, peer func() store.Store, cfg httpapi.Config) *env {
	k := kernel.New(st, kernel.Config{})
	cfg.Kernel, cfg.Store = k, st
	if cfg.APIToken == "" {
		cfg.APIToken = testToken // the API has no open mode
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	srv := httpapi.New(cfg)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		ts.CloseClientConnections()
		ts.Close()
	})
	return &env{t: t, k: k, srv: srv, ts: ts, token: cfg.APIToken, peer: peer}
}

// reply is an HTTP answer.
type reply struct {
	status int
	header http.Header
	body   []byte
}

func (r reply) decode(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decode %s: %v", r.body, err)
	}
}

// code returns the error code of a JSON error answer.
func (r reply) code(t *testing.T) gh.Code {
	t.Helper()
	var e struct {
		Code    gh.Code `json:"code"`
		Message string  `json:"message"`
	}
	r.decode(t, &e)
	return e.Code
}

func (r reply) message(t *testing.T) string {
	t.Helper()
	var e struct {
		Message string `json:"message"`
	}
	r.decode(t, &e)
	return e.Message
}

// do sends a request; body is sent as is when it is a string, as JSON
// otherwise. The env's token is sent unless headers set Authorization.
func (e *env) do(method, path string, body any, headers ...string) reply {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, e.ts.URL+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if e.token != "" {
		req.Header.Set("Authorization", "Bearer "+e.token)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i] == "Host" {
			req.Host = headers[i+1]
			continue
		}
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := e.ts.Client().Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return reply{status: resp.StatusCode, header: resp.Header, body: data}
}

// expect fails unless the answer has the status (and, for errors, code).
func (r reply) expect(t *testing.T, status int, code gh.Code) reply {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d: %s", r.status, status, r.body)
	}
	if code != "" {
		if got := r.code(t); got != code {
			t.Fatalf("code %q, want %q: %s", got, code, r.body)
		}
	}
	return r
}

type inputReply struct {
	Seq       int64 `json:"seq"`
	RunID     int64 `json:"runId"`
	Duplicate bool  `json:"duplicate"`
}

// input posts an input and expects 202.
func (e *env) input(session string, body any, headers ...string) inputReply {
	e.t.Helper()
	var out inputReply
	e.do("POST", "/v1/sessions/"+session+"/input", body, headers...).expect(e.t, http.StatusAccepted, "").decode(e.t, &out)
	return out
}

type eventsReply struct {
	Events  []gh.Event `json:"events"`
	LastSeq int64      `json:"lastSeq"`
}

func (e *env) events(session, query string) eventsReply {
	e.t.Helper()
	var out eventsReply
	e.do("GET", "/v1/sessions/"+session+"/events"+query, nil).expect(e.t, http.StatusOK, "").decode(e.t, &out)
	return out
}

// userMessage decodes a user.message payload.
func userMessage(t *testing.T, ev gh.Event) gh.UserMessage {
	t.Helper()
	if ev.Kind != gh.KindUserMessage {
		t.Fatalf("event %d is %s, want user.message", ev.Seq, ev.Kind)
	}
	var m gh.UserMessage
	if err := json.Unmarshal(ev.Payload, &m); err != nil {
		t.Fatalf("payload of %d: %v", ev.Seq, err)
	}
	return m
}

// commit commits a user message straight through the kernel, creating
// the session if needed.
func commit(t *testing.T, k *kernel.Kernel, session, text string) int64 {
	t.Helper()
	if _, _, err := k.CreateSession(context.Background(), gh.Session{ID: session}); err != nil {
		t.Fatal(err)
	}
	return commitTo(t, k, session, text)
}

// commitTo commits a user message to an existing session.
func commitTo(t *testing.T, k *kernel.Kernel, session, text string) int64 {
	t.Helper()
	ctx := context.Background()
	payload, _ := json.Marshal(gh.UserMessage{Text: text, Delivery: gh.DeliveryQueue, Source: "test"})
	c, err := k.EdgeCommit(ctx, kernel.EdgeInput{SessionID: session, Event: gh.NewEvent{Kind: gh.KindUserMessage, Payload: payload}})
	if err != nil {
		t.Fatal(err)
	}
	return c.Event.Seq
}

// frame is one Server-Sent Events frame, or a comment.
type frame struct {
	ID      string
	HasID   bool
	Event   string
	Data    string
	Comment string
}

// readFrame parses the next frame from r (the text/event-stream format:
// field lines up to a blank line; lines starting with ':' are comments).
func readFrame(r *bufio.Reader) (frame, error) {
	var f frame
	var data []string
	seen := false
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			if errors.Is(err, io.EOF) && line == "" && !seen {
				return f, io.EOF
			}
			return f, err
		}
		line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
		if line == "" {
			if !seen {
				continue
			}
			f.Data = strings.Join(data, "\n")
			return f, nil
		}
		seen = true
		if strings.HasPrefix(line, ":") {
			f.Comment = strings.TrimPrefix(strings.TrimPrefix(line, ":"), " ")
			continue
		}
		name, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch name {
		case "id":
			f.ID, f.HasID = value, true
		case "event":
			f.Event = value
		case "data":
			data = append(data, value)
		}
	}
}

// sse is an open stream whose frames a goroutine reads.
type sse struct {
	t      *testing.T
	resp   *http.Response
	frames chan frame
	ended  chan error
	cancel context.CancelFunc
}

// openStream opens GET path (with headers) and expects an event stream.
func openStream(t *testing.T, client *http.Client, url string, headers ...string) *sse {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(url, "access_token=") {
		req.Header.Set("Authorization", "Bearer "+testToken) // unless headers say otherwise
	}
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i] == "Host" {
			req.Host = headers[i+1]
			continue
		}
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := client.Do(req)
	if err != nil {
		cancel()
		t.Fatalf("open stream: %v", err)
	}
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		t.Fatalf("open stream: status %d: %s", resp.StatusCode, body)
	}
	s := &sse{t: t, resp: resp, frames: make(chan frame, 1024), ended: make(chan error, 1), cancel: cancel}
	go func() {
		br := bufio.NewReader(resp.Body)
		for {
			f, err := readFrame(br)
			if err != nil {
				s.ended <- err
				close(s.frames)
				return
			}
			s.frames <- f
		}
	}()
	t.Cleanup(s.close)
	return s
}

func (s *sse) close() {
	s.cancel()
	s.resp.Body.Close()
}

// next returns the next frame.
func (s *sse) next() frame {
	s.t.Helper()
	select {
	case f, ok := <-s.frames:
		if !ok {
			s.t.Fatalf("stream ended: %v", <-s.ended)
		}
		return f
	case <-time.After(waitFor):
		s.t.Fatal("no frame arrived")
	}
	return frame{}
}

// nextEvent returns the next frame that is not a comment.
func (s *sse) nextEvent() frame {
	s.t.Helper()
	for {
		if f := s.next(); f.Event != "" || f.HasID || f.Data != "" {
			return f
		}
	}
}

// committed returns the next committed event (a frame with an id),
// checking that its id, event name and data agree.
func (s *sse) committed() gh.Event {
	s.t.Helper()
	for {
		f := s.nextEvent()
		if !f.HasID {
			continue
		}
		var ev gh.Event
		if err := json.Unmarshal([]byte(f.Data), &ev); err != nil {
			s.t.Fatalf("frame data %q: %v", f.Data, err)
		}
		if f.ID != itoa(ev.Seq) || f.Event != string(ev.Kind) {
			s.t.Fatalf("frame id %q event %q, data seq %d kind %s", f.ID, f.Event, ev.Seq, ev.Kind)
		}
		return ev
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
