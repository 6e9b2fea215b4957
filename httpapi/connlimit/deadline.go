package connlimit

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// SetDeadlines gives a request write to be answered and, when it has a
// body, read to deliver it. Once the body is read (at once without one)
// the read deadline becomes the write deadline: Go's server then reads
// the connection in the background to notice a client going away, and
// that read failing at its deadline cancels the request's context. So a
// handler stops when its answer can no longer be written, and not while
// it still can. Per request rather than server-wide, because a
// server-wide write timeout would cut a long-lived response (LongLived).
func SetDeadlines(w http.ResponseWriter, r *http.Request, read, write time.Duration) {
	now := time.Now()
	end := now.Add(write)
	rc := http.NewResponseController(w)
	// Errors mean the writer cannot take deadlines (a test recorder);
	// there is nothing to bound then.
	_ = rc.SetWriteDeadline(end)
	if r.Body == nil || r.Body == http.NoBody {
		_ = rc.SetReadDeadline(end)
		return
	}
	_ = rc.SetReadDeadline(now.Add(read))
	r.Body = &deadlineBody{ReadCloser: r.Body, done: func() { _ = rc.SetReadDeadline(end) }}
}

// deadlineBody calls done once the body has been read to its end.
type deadlineBody struct {
	io.ReadCloser
	once sync.Once
	done func()
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if errors.Is(err, io.EOF) {
		b.once.Do(b.done)
	}
	return n, err
}

// IsTimeout reports whether err is a deadline passing (a body that did not
// arrive in time).
func IsTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

// LongLived readies w for a response that outlives the write deadline of
// SetDeadlines (an SSE stream): it clears the request's deadlines and
// returns a writer that bounds each write by d instead, so a client that
// stops reading is dropped while one that reads is never cut. Call it
// before the first write.
func LongLived(w http.ResponseWriter, d time.Duration) *BoundedWriter {
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Time{})
	_ = rc.SetWriteDeadline(time.Time{})
	return &BoundedWriter{w: w, rc: rc, d: d}
}

// BoundedWriter writes and flushes a long-lived response, each write
// under a fresh deadline.
type BoundedWriter struct {
	w  http.ResponseWriter
	rc *http.ResponseController
	d  time.Duration
}

// Arm sets the deadline for the next write. Defer it at the end of the
// handler too, so the server's own last write (the end of the chunked
// body) has one that has not passed.
func (b *BoundedWriter) Arm() { _ = b.rc.SetWriteDeadline(time.Now().Add(b.d)) }

func (b *BoundedWriter) Write(p []byte) (int, error) {
	b.Arm()
	return b.w.Write(p)
}

// Flush sends what was written, under a fresh deadline.
func (b *BoundedWriter) Flush() error {
	b.Arm()
	return b.rc.Flush()
}
