package openaiapi

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/httpapi/connlimit"
	"github.com/openai/openai-go/v3"
)

// emitter writes one reply, as it comes: text, then finish; or fail.
type emitter interface {
	// text adds content to the reply.
	text(s string) error
	// ping keeps a waiting stream open; a no-op for a plain response.
	ping() error
	// finish ends the reply (finish_reason "stop").
	finish(u gh.Usage)
	// fail ends the reply with an error.
	fail(err error)
}

// emitter readies the response for a reply that may come long after the
// request: the request's deadlines are replaced by a bound on each write
// (connlimit.LongLived), or the server would cut the wait at its write
// timeout.
func (h *Handler) emitter(w http.ResponseWriter, r *http.Request, req chatRequest) emitter {
	lw := connlimit.LongLived(w, h.cfg.WriteTimeout)
	model := req.model
	if model == "" {
		model = ModelID
	}
	base := reply{h: h, w: w, r: r, lw: lw, id: "chatcmpl-" + randomID(), created: time.Now().Unix(), model: model}
	if !req.stream {
		return &whole{reply: base}
	}
	s := &stream{reply: base, usage: req.includeUsage, bw: bufio.NewWriter(lw)}
	s.start()
	return s
}

// reply is what both kinds of reply share.
type reply struct {
	h       *Handler
	w       http.ResponseWriter
	r       *http.Request
	lw      *connlimit.BoundedWriter
	id      string
	created int64
	model   string
}

func (r reply) usage(u gh.Usage) openai.CompletionUsage {
	p, c := usage(u)
	return openai.CompletionUsage{PromptTokens: p, CompletionTokens: c, TotalTokens: p + c}
}

// whole is a chat.completion: the reply is written once it is complete.
type whole struct {
	reply
	content strings.Builder
}

func (o *whole) text(s string) error { o.content.WriteString(s); return nil }
func (o *whole) ping() error         { return nil }

func (o *whole) finish(u gh.Usage) {
	defer o.lw.Arm()
	o.lw.Arm()
	writeJSON(o.w, http.StatusOK, completion{ID: o.id, Created: o.created, Model: o.model, Usage: o.usage(u),
		Choices: []completionChoice{{Message: answerMessage{Content: o.content.String()}, FinishReason: "stop"}}})
}

func (o *whole) fail(err error) {
	defer o.lw.Arm()
	o.lw.Arm()
	o.h.writeError(o.w, o.r, err)
}

// stream is a Server-Sent Events stream of chat.completion.chunk, ended
// by "data: [DONE]". Its status is 200 from the start, so a failure after
// it is an error event, which OpenAI's clients report.
type stream struct {
	reply
	bw    *bufio.Writer
	usage bool
	// err is the first failed write: nothing more is sent after it.
	err error
}

func (s *stream) start() {
	h := s.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	h.Set("X-Content-Type-Options", "nosniff")
	s.w.WriteHeader(http.StatusOK)
	s.chunk(delta{Role: "assistant", Content: new(string)}, nil, nil)
}

func (s *stream) text(t string) error {
	return s.chunk(delta{Content: &t}, nil, nil)
}

func (s *stream) ping() error {
	return s.write(": keep-alive\n\n")
}

func (s *stream) finish(u gh.Usage) {
	stop := "stop"
	if s.chunk(delta{}, &stop, nil) != nil {
		return
	}
	if s.usage {
		total := s.reply.usage(u)
		if s.event(chunk{ID: s.id, Created: s.created, Model: s.model, Choices: []chunkChoice{}, Usage: &total}) != nil {
			return
		}
	}
	s.write("data: [DONE]\n\n")
}

func (s *stream) fail(err error) {
	s.event(s.h.errorBody(s.r, err))
}

// chunk sends one chunk of the one choice.
func (s *stream) chunk(d delta, finish *string, u *openai.CompletionUsage) error {
	return s.event(chunk{ID: s.id, Created: s.created, Model: s.model, Usage: u,
		Choices: []chunkChoice{{Delta: d, FinishReason: finish}}})
}

func (s *stream) event(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		s.h.log.Error("openai stream encode failed", "err", err)
		return err
	}
	return s.write("data: " + string(b) + "\n\n")
}

// write sends and flushes; after a failed write (the client is gone or
// stopped reading) nothing more is sent.
func (s *stream) write(frame string) error {
	if s.err != nil {
		return s.err
	}
	_, err := s.bw.WriteString(frame)
	if err == nil {
		err = s.bw.Flush()
	}
	if err == nil {
		err = s.lw.Flush()
	}
	s.err = err
	return err
}

func randomID() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}
