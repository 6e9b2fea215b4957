// Package modeltest holds fake model servers for tests: real HTTP servers on
// loopback (httptest) that speak the OpenAI chat completions and Anthropic
// Messages streaming protocols strictly, refusing what the real services (and
// strict local servers) refuse. Each fake answers requests from a queue of
// programmed Replies and records every request it got.
package modeltest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// ToolCall is a tool call a fake answers with; Arguments is raw JSON text.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string
}

// Reply programs a fake's answer to one request.
type Reply struct {
	// Text is streamed in a few deltas (or as Chunks, if set).
	Text   string
	Chunks []string
	// ToolCalls are streamed after the text, arguments in pieces.
	ToolCalls []ToolCall
	// Thinking, for the Anthropic fake, is streamed as a signed thinking
	// block before everything else, and RedactedThinking as a
	// redacted_thinking block after it; both only when the request
	// enabled thinking, as the real API thinks only then.
	Thinking         string
	RedactedThinking string
	// Status, if not 0 or 200, answers with this HTTP status and the
	// provider's error body, with RetryAfter as Retry-After if set.
	Status     int
	RetryAfter string
	// Hang holds the request open, sending nothing, until the client leaves.
	Hang bool
	// Stall sends the start of the stream and the first delta, then holds
	// the request open until the client leaves.
	Stall bool
	// Garbage streams an unparseable event after a valid start.
	Garbage bool
	// Cut sends the start of the stream and the first delta, then ends the
	// response cleanly without the rest (no finish, no terminator).
	Cut bool
	// Reset sends the start of the stream, then drops the TCP connection.
	Reset bool
	// StopReason overrides the finish_reason (OpenAI) or stop_reason
	// (Anthropic) the fake would choose.
	StopReason string
	// Token counts reported in usage. Default to 11 and 7.
	InputTokens, OutputTokens int
	// Before, if set, runs when the request is taken, before anything is
	// answered: a test's way to make something happen while the request
	// is in flight.
	Before func()
}

func (r Reply) deltas() []string {
	if r.Chunks != nil {
		return r.Chunks
	}
	return SplitText(r.Text, 3)
}

func (r Reply) usage() (in, out int) {
	in, out = r.InputTokens, r.OutputTokens
	if in == 0 {
		in = 11
	}
	if out == 0 {
		out = 7
	}
	return in, out
}

// SplitText splits s into at most n non-empty pieces (whole if short).
func SplitText(s string, n int) []string {
	if s == "" {
		return nil
	}
	words := strings.SplitAfter(s, " ")
	if len(words) < n {
		return []string{s}
	}
	per := (len(words) + n - 1) / n
	var out []string
	for i := 0; i < len(words); i += per {
		out = append(out, strings.Join(words[i:min(i+per, len(words))], ""))
	}
	return out
}

// splitN splits s into at most n byte pieces (for tool argument deltas).
func splitN(s string, n int) []string {
	if len(s) <= n {
		return []string{s}
	}
	per := (len(s) + n - 1) / n
	var out []string
	for i := 0; i < len(s); i += per {
		out = append(out, s[i:min(i+per, len(s))])
	}
	return out
}

// Request is a request a fake got.
type Request struct {
	Time   time.Time // when it arrived
	Method string
	Path   string
	Header http.Header
	Body   []byte
	Model  string // the "model" of the body
	Status int    // the status the fake answered
}

// JSON decodes the body.
func (r Request) JSON() map[string]any {
	var m map[string]any
	_ = json.Unmarshal(r.Body, &m)
	return m
}

// fake is the part both servers share: the reply queue and the record.
type fake struct {
	tb   testing.TB
	done chan struct{}

	mu     sync.Mutex
	queue  []Reply
	def    *Reply
	reqs   []Request
	nextID int
}

func newFake(tb testing.TB) *fake {
	return &fake{tb: tb, done: make(chan struct{})}
}

// Push queues replies, answered in order, one per valid request.
func (f *fake) Push(replies ...Reply) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.queue = append(f.queue, replies...)
}

// SetDefault sets the reply used when the queue is empty. Without one, an
// unexpected request fails the test and gets a 400.
func (f *fake) SetDefault(r Reply) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.def = &r
}

// Requests returns a copy of the requests received so far.
func (f *fake) Requests() []Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]Request, len(f.reqs))
	copy(out, f.reqs)
	return out
}

// Models returns the model of each request received, in order.
func (f *fake) Models() []string {
	var out []string
	for _, r := range f.Requests() {
		out = append(out, r.Model)
	}
	return out
}

func (f *fake) record(r Request) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reqs = append(f.reqs, r)
	return len(f.reqs) - 1
}

func (f *fake) setStatus(i, status int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reqs[i].Status = status
}

// statusWriter records the status of request i the moment the header is
// written: a client can finish reading before the handler returns, and a
// test that looks then must see the status already.
type statusWriter struct {
	http.ResponseWriter
	f    *fake
	i    int
	done bool
}

func (w *statusWriter) WriteHeader(status int) {
	if !w.done {
		w.done = true
		w.f.setStatus(w.i, status)
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if !w.done {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(p)
}

func (w *statusWriter) Flush() {
	if fl, ok := w.ResponseWriter.(http.Flusher); ok {
		fl.Flush()
	}
}

// Hijack passes through, for Reset.
func (w *statusWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	hj, ok := w.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, http.ErrNotSupported
	}
	return hj.Hijack()
}

// Unwrap lets http.ResponseController reach the connection.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// pop takes the next reply and runs its Before.
func (f *fake) pop() (Reply, bool) {
	r, ok := f.take()
	if ok && r.Before != nil {
		r.Before()
	}
	return r, ok
}

func (f *fake) take() (Reply, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.queue) > 0 {
		r := f.queue[0]
		f.queue = f.queue[1:]
		return r, true
	}
	if f.def != nil {
		return *f.def, true
	}
	return Reply{}, false
}

func (f *fake) newID(prefix string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nextID++
	return fmt.Sprintf("%s%d", prefix, f.nextID)
}

// wait blocks until the client leaves or the fake closes.
func (f *fake) wait(r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-f.done:
	}
}

// sse writes SSE blocks and flushes each one.
type sse struct {
	w http.ResponseWriter
}

func startSSE(w http.ResponseWriter) sse {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	return sse{w}
}

func (s sse) raw(text string) {
	_, _ = fmt.Fprint(s.w, text)
	if fl, ok := s.w.(http.Flusher); ok {
		fl.Flush()
	}
}

func (s sse) data(v any) {
	b, _ := json.Marshal(v)
	s.raw("data: " + string(b) + "\n\n")
}

func (s sse) event(name string, v any) {
	b, _ := json.Marshal(v)
	s.raw("event: " + name + "\ndata: " + string(b) + "\n\n")
}

// reset drops the connection without ending the response.
func (s sse) reset() {
	hj, ok := s.w.(http.Hijacker)
	if !ok {
		return
	}
	conn, buf, err := hj.Hijack()
	if err != nil {
		return
	}
	_ = buf.Flush()
	_ = conn.Close()
}

func writeJSON(w http.ResponseWriter, status int, retryAfter string, v any) {
	w.Header().Set("Content-Type", "application/json")
	if retryAfter != "" {
		w.Header().Set("Retry-After", retryAfter)
	}
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
