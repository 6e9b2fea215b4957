package httpapi

import (
	"bufio"
	"errors"
	"net/http"
	"strings"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/cards"
	"github.com/gatehouse/gatehouse/httpapi/connlimit"
	"github.com/gatehouse/gatehouse/httpapi/sse"
)

// streamPage is how many events one read of the stream fetches.
const streamPage = 500

// stream: GET /v1/sessions/{id}/stream → Server-Sent Events.
//
// Committed events, partial text and ": ping" comments are framed by
// package sse; only committed events carry an id, so a reconnect's
// Last-Event-ID is always a committed seq. The stream resumes after the
// Last-Event-ID header, else the after query parameter, else from the
// start.
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
	if err := s.ownSession(ctx, id); err != nil {
		writeError(w, r, s.log, err)
		return
	}

	// A stream outlives the request deadlines; each write is bounded by
	// WriteTimeout instead, so a client that stops reading is dropped
	// while one that reads is never cut.
	lw := connlimit.LongLived(w, s.cfg.WriteTimeout)
	defer lw.Arm()
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
	// Other replicas' commits come as signals too while the session is
	// followed; the poll is then only a safety net.
	every := s.cfg.Poll
	if release, err := s.k.Follow(ctx, id); err == nil {
		defer release()
		every = 15 * s.cfg.Poll
	} else if ctx.Err() == nil {
		s.log.Debug("stream not followed across replicas; polling", "session", id, "err", err)
	}
	poll := time.NewTicker(every)
	defer poll.Stop()
	// readAll sends everything committed after the cursor, from the store.
	readAll := func() bool {
		for {
			evs, err := s.k.Events(ctx, id, cursor, streamPage)
			if err != nil {
				if ctx.Err() == nil {
					s.log.Warn("stream read failed; closing it", "session", id, "after", cursor, "err", err)
				}
				return false
			}
			for _, e := range evs {
				if err := sse.WriteEvent(bw, cards.Worded(e)); err != nil {
					s.log.Error("stream encode failed", "session", id, "seq", e.Seq, "err", err)
					return false
				}
				cursor = e.Seq
			}
			if len(evs) > 0 {
				if err := flush(); err != nil {
					return false
				}
			}
			if len(evs) < streamPage {
				return true
			}
		}
	}
	// sendPublished sends the events this process committed and published
	// since the last wake-up, with no read, when they follow the cursor
	// without a gap; otherwise (a commit that only signalled, events out
	// of order) the store is read.
	sendPublished := func() bool {
		evs, complete := sub.Take()
		if !complete {
			return readAll()
		}
		sent := false
		for _, e := range evs {
			if e.Seq <= cursor {
				continue // read already
			}
			if e.Seq != cursor+1 {
				return readAll() // a gap: what is missing is in the store
			}
			if err := sse.WriteEvent(bw, cards.Worded(e)); err != nil {
				s.log.Error("stream encode failed", "session", id, "seq", e.Seq, "err", err)
				return false
			}
			cursor, sent = e.Seq, true
		}
		return !sent || flush() == nil
	}
	// The first read covers whatever was published before it.
	sub.Take()
	fromStore := true
	for {
		if fromStore && !readAll() || !fromStore && !sendPublished() {
			return
		}
		// Wait for something to send.
	wait:
		for {
			select {
			case <-ctx.Done():
				return
			case <-sub.Committed:
				// Partials published before the commit go first.
				if err := sse.DrainPartials(bw, sub.Partials); err != nil {
					return
				}
				fromStore = false
				break wait
			case <-poll.C:
				// Another replica's commits are seen by reading.
				fromStore = true
				break wait
			case p := <-sub.Partials:
				if err := sse.WritePartial(bw, p); err != nil {
					return
				}
				if err := sse.DrainPartials(bw, sub.Partials); err != nil {
					return
				}
				if err := flush(); err != nil {
					return
				}
			case <-heartbeat.C:
				if err := sse.WritePing(bw); err != nil {
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
