package httpapi

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/kernel"
)

// streamPage is how many events one read of the stream fetches.
const streamPage = 500

// stream: GET /v1/sessions/{id}/stream → Server-Sent Events.
//
// Committed events are frames "id: <seq>\nevent: <kind>\ndata: <event>\n\n";
// partial text is "event: partial\ndata: <partial>\n\n" with no id, so a
// reconnect's Last-Event-ID is always a committed seq; ": ping" comments
// keep an idle stream open. The stream resumes after the Last-Event-ID
// header, else the after query parameter, else from the start.
func (s *Server) stream(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	cursor, err := resumePoint(r)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	ctx, release, err := s.trackStream(r.Context())
	defer release()
	if errors.Is(err, errTooManyStreams) {
		var ge *gh.Error
		errors.As(err, &ge)
		s.refuse(w, &s.streamRefused, "stream cap reached: refusing new streams with 503", ge)
		return
	}
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	// Subscribe before the first read: a commit between the read and the
	// wait then still signals.
	sub := s.k.Subscribe(id)
	defer sub.Close()
	if _, err := s.session(ctx, id); err != nil {
		writeError(w, r, s.log, err)
		return
	}

	// A stream outlives the request deadlines; each write is bounded
	// instead, so a client that stops reading is dropped.
	lw := s.longLived(w)
	defer lw.arm()
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}
	bw := bufio.NewWriter(lw)
	flush := func() error {
		if err := bw.Flush(); err != nil {
			return err
		}
		return lw.Flush()
	}
	if err := flush(); err != nil {
		return
	}

	heartbeat := time.NewTicker(s.cfg.Heartbeat)
	defer heartbeat.Stop()
	poll := time.NewTicker(s.cfg.Poll)
	defer poll.Stop()
	for {
		// Read everything committed after the cursor.
		for {
			evs, err := s.k.Events(ctx, id, cursor, streamPage)
			if err != nil {
				if ctx.Err() == nil {
					s.log.Warn("stream read failed; closing it", "session", id, "after", cursor, "err", err)
				}
				return
			}
			for _, e := range evs {
				if err := writeEvent(bw, e); err != nil {
					s.log.Error("stream encode failed", "session", id, "seq", e.Seq, "err", err)
					return
				}
				cursor = e.Seq
			}
			if len(evs) > 0 {
				if err := flush(); err != nil {
					return
				}
			}
			if len(evs) < streamPage {
				break
			}
		}
		// Wait for something to send.
	wait:
		for {
			select {
			case <-ctx.Done():
				return
			case <-sub.Committed:
				// Partials published before the commit go first.
				if err := drainPartials(bw, sub.Partials); err != nil {
					return
				}
				break wait
			case <-poll.C:
				break wait
			case p := <-sub.Partials:
				if err := writePartial(bw, p); err != nil {
					return
				}
				if err := drainPartials(bw, sub.Partials); err != nil {
					return
				}
				if err := flush(); err != nil {
					return
				}
			case <-heartbeat.C:
				if _, err := bw.WriteString(": ping\n\n"); err != nil {
					return
				}
				if err := flush(); err != nil {
					return
				}
			}
		}
	}
}

// resumePoint is the seq a stream starts after: Last-Event-ID, else the
// after query parameter, else 0.
func resumePoint(r *http.Request) (int64, error) {
	if v := strings.TrimSpace(r.Header.Get("Last-Event-ID")); v != "" {
		return parseSeq("Last-Event-ID", v)
	}
	return querySeq(r, "after", 0)
}

func writeEvent(bw *bufio.Writer, e gh.Event) error {
	data, err := json.Marshal(e)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(bw, "id: %d\nevent: %s\ndata: %s\n\n", e.Seq, e.Kind, data)
	return err
}

func writePartial(bw *bufio.Writer, p kernel.Partial) error {
	data, err := json.Marshal(p)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(bw, "event: partial\ndata: %s\n\n", data)
	return err
}

// drainPartials writes the partials already waiting, without blocking.
func drainPartials(bw *bufio.Writer, ch <-chan kernel.Partial) error {
	for {
		select {
		case p := <-ch:
			if err := writePartial(bw, p); err != nil {
				return err
			}
		default:
			return nil
		}
	}
}
