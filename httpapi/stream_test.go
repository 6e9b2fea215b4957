package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/httpapi"
	"github.com/gatehouse/gatehouse/kernel"
)

func (e *env) streamURL(session, query string) string {
	return e.ts.URL + "/v1/sessions/" + session + "/stream" + query
}

func TestStreamFrames(t *testing.T) {
	run(t, httpapi.Config{}, func(t *testing.T, e *env) {
		commit(t, e.k, "s1", "one")
		commit(t, e.k, "s1", "two")
		s := openStream(t, e.ts.Client(), e.streamURL("s1", ""))
		for _, h := range []struct{ name, want string }{
			{"Content-Type", "text/event-stream"},
			{"Cache-Control", "no-cache"},
			{"X-Accel-Buffering", "no"},
		} {
			if got := s.resp.Header.Get(h.name); got != h.want {
				t.Errorf("%s = %q, want %q", h.name, got, h.want)
			}
		}
		for _, want := range []int64{1, 2} {
			ev := s.committed()
			if ev.Seq != want || ev.SessionID != "s1" || ev.Kind != gh.KindUserMessage {
				t.Fatalf("frame %+v, want seq %d", ev, want)
			}
		}
		if m := userMessage(t, s.committed0(e, 3, "three")); m.Text != "three" {
			t.Fatalf("live event text %q", m.Text)
		}

		// Partial text: a frame without an id.
		e.k.PublishPartial(kernel.Partial{SessionID: "s1", GenerationID: "u3-a1", Text: "Hel"})
		e.k.PublishPartial(kernel.Partial{SessionID: "other", Text: "not for s1"})
		e.k.PublishPartial(kernel.Partial{SessionID: "s1", GenerationID: "u3-a1", Text: "lo"})
		for _, want := range []string{"Hel", "lo"} {
			f := s.nextEvent()
			if f.HasID || f.Event != "partial" {
				t.Fatalf("partial frame %+v: want event partial without id", f)
			}
			var p kernel.Partial
			if err := json.Unmarshal([]byte(f.Data), &p); err != nil {
				t.Fatal(err)
			}
			if p.Text != want || p.SessionID != "s1" || p.GenerationID != "u3-a1" {
				t.Fatalf("partial %+v, want text %q", p, want)
			}
		}
		// Committed events keep flowing after partials.
		commit(t, e.k, "s1", "four")
		if ev := s.committed(); ev.Seq != 4 {
			t.Fatalf("seq %d, want 4", ev.Seq)
		}
	})
}

// committed0 commits text through the API and returns the stream's next
// committed event, which must carry seq want.
func (s *sse) committed0(e *env, want int64, text string) gh.Event {
	s.t.Helper()
	e.input("s1", map[string]any{"text": text})
	ev := s.committed()
	if ev.Seq != want {
		s.t.Fatalf("seq %d, want %d", ev.Seq, want)
	}
	return ev
}

func TestStreamResume(t *testing.T) {
	run(t, httpapi.Config{Poll: 10 * time.Millisecond}, func(t *testing.T, e *env) {
		commit(t, e.k, "s1", "1")
		commit(t, e.k, "s1", "2")
		s := openStream(t, e.ts.Client(), e.streamURL("s1", ""))
		last := s.committed().Seq
		last = max(last, s.committed().Seq)
		if last != 2 {
			t.Fatalf("last seen %d, want 2", last)
		}
		s.close()

		// Committed while disconnected.
		for _, text := range []string{"3", "4", "5"} {
			commit(t, e.k, "s1", text)
		}
		// Last-Event-ID wins over after.
		s = openStream(t, e.ts.Client(), e.streamURL("s1", "?after=4"), "Last-Event-ID", itoa(last))
		var got []int64
		for len(got) < 3 {
			got = append(got, s.committed().Seq)
		}
		commit(t, e.k, "s1", "6")
		got = append(got, s.committed().Seq)
		// Polls ran while waiting; one more commit shows nothing was sent
		// twice in between.
		commit(t, e.k, "s1", "7")
		got = append(got, s.committed().Seq)
		if want := []int64{3, 4, 5, 6, 7}; !equal(got, want) {
			t.Fatalf("after reconnect at %d got %v, want %v", last, got, want)
		}
		s.close()

		// Without Last-Event-ID, after is the resume point.
		s = openStream(t, e.ts.Client(), e.streamURL("s1", "?after=6"))
		if ev := s.committed(); ev.Seq != 7 {
			t.Fatalf("after=6 gave seq %d first", ev.Seq)
		}
	})
}

func TestStreamPagesLongLogs(t *testing.T) {
	run(t, httpapi.Config{}, func(t *testing.T, e *env) {
		// Two full pages of the stream's reads (500 each), then a live one.
		const n = 1000
		commit(t, e.k, "s1", "1")
		for i := 1; i < n; i++ {
			commitTo(t, e.k, "s1", itoa(int64(i+1)))
		}
		s := openStream(t, e.ts.Client(), e.streamURL("s1", ""))
		for want := int64(1); want <= n; want++ {
			if ev := s.committed(); ev.Seq != want {
				t.Fatalf("seq %d, want %d", ev.Seq, want)
			}
		}
		commit(t, e.k, "s1", "live")
		if ev := s.committed(); ev.Seq != n+1 {
			t.Fatalf("seq %d, want %d", ev.Seq, n+1)
		}
	})
}

func TestStreamHeartbeat(t *testing.T) {
	run(t, httpapi.Config{Heartbeat: 20 * time.Millisecond}, func(t *testing.T, e *env) {
		commit(t, e.k, "s1", "hi")
		s := openStream(t, e.ts.Client(), e.streamURL("s1", ""))
		if ev := s.committed(); ev.Seq != 1 {
			t.Fatalf("seq %d", ev.Seq)
		}
		for {
			f := s.next()
			if f.Comment == "ping" && !f.HasID && f.Event == "" {
				return
			}
		}
	})
}

// A commit made through another replica (another kernel, so no in-process
// signal) reaches the stream by the poll.
func TestStreamSeesOtherReplicas(t *testing.T) {
	run(t, httpapi.Config{Poll: 20 * time.Millisecond}, func(t *testing.T, e *env) {
		other := kernel.New(e.peer(), kernel.Config{})
		commit(t, e.k, "s1", "here")
		s := openStream(t, e.ts.Client(), e.streamURL("s1", ""))
		if ev := s.committed(); ev.Seq != 1 {
			t.Fatalf("seq %d", ev.Seq)
		}
		commit(t, other, "s1", "there")
		ev := s.committed()
		if ev.Seq != 2 || userMessage(t, ev).Text != "there" {
			t.Fatalf("event %+v", ev)
		}
	})
}

func TestStreamRefusals(t *testing.T) {
	run(t, httpapi.Config{APIToken: "tok"}, func(t *testing.T, e *env) {
		e.do("GET", "/v1/sessions/nope/stream", nil).expect(t, http.StatusNotFound, gh.CodeUnknownSession)
		commit(t, e.k, "s1", "hi")
		r := e.do("GET", "/v1/sessions/s1/stream", nil, "Last-Event-ID", "x").expect(t, http.StatusBadRequest, gh.CodeInvalid)
		if ct := r.header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("refusal Content-Type %q", ct)
		}
		e.do("GET", "/v1/sessions/s1/stream?after=-2", nil).expect(t, http.StatusBadRequest, gh.CodeInvalid)
		e.do("GET", "/v1/sessions/s1/stream", nil, "Authorization", "Bearer nope").expect(t, http.StatusUnauthorized, gh.CodeUnauthorized)
		// EventSource cannot set headers: the token rides in the query.
		s := openStream(t, e.ts.Client(), e.streamURL("s1", "?access_token=tok"))
		if ev := s.committed(); ev.Seq != 1 {
			t.Fatalf("seq %d", ev.Seq)
		}
	})
}

// Stop ends open streams, so draining does not wait for them, and refuses
// new ones.
func TestStreamEndsOnStop(t *testing.T) {
	run(t, httpapi.Config{}, func(t *testing.T, e *env) {
		commit(t, e.k, "s1", "hi")
		s := openStream(t, e.ts.Client(), e.streamURL("s1", ""))
		if ev := s.committed(); ev.Seq != 1 {
			t.Fatalf("seq %d", ev.Seq)
		}
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		defer cancel()
		if err := e.srv.Stop(ctx); err != nil {
			t.Fatalf("stop: %v", err)
		}
		for {
			select {
			case _, ok := <-s.frames:
				if ok {
					continue
				}
				if err := <-s.ended; err != io.EOF {
					t.Fatalf("stream ended with %v, want a clean end", err)
				}
			case <-time.After(waitFor):
				t.Fatal("stream still open after Stop")
			}
			break
		}
		e.do("GET", "/v1/sessions/s1/stream", nil).expect(t, http.StatusServiceUnavailable, gh.CodeUnavailable)
	})
}

// With a listening server, Stop returns once streams end instead of
// waiting for its deadline.
func TestStopDrainsListeningServer(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			st, _ := b.open(t)
			k := kernel.New(st, kernel.Config{})
			srv := httpapi.New(httpapi.Config{Addr: "127.0.0.1:0", Kernel: k, Store: st, APIToken: testToken, Logger: slog.New(slog.DiscardHandler)})
			if err := srv.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			commit(t, k, "s1", "hi")
			s := openStream(t, http.DefaultClient, "http://"+srv.Addr()+"/v1/sessions/s1/stream")
			if ev := s.committed(); ev.Seq != 1 {
				t.Fatalf("seq %d", ev.Seq)
			}
			ctx, cancel := context.WithTimeout(context.Background(), waitFor)
			defer cancel()
			if err := srv.Stop(ctx); err != nil {
				t.Fatalf("stop with an open stream: %v", err)
			}
			if err := <-srv.Done(); err != nil {
				t.Fatalf("done: %v", err)
			}
		})
	}
}
