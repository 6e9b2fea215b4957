package scalebench

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/httpapi"
	"github.com/gatehouse/gatehouse/internal/testing/stacktest"
)

// openStream opens session's SSE stream on a bare connection and reads
// the response's head. Nothing reads the connection after that: no
// goroutine and no buffer of the client's stay behind, so what the
// process holds per stream is the server's.
func openStream(addr, session string) (net.Conn, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(c, "GET /v1/sessions/%s/stream HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nAccept: text/event-stream\r\n\r\n", session, addr, stacktest.TestToken)
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	res, err := http.ReadResponse(bufio.NewReaderSize(c, 512), nil)
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("stream %s: %w", session, err)
	}
	c.SetReadDeadline(time.Time{})
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "text/event-stream" {
		c.Close()
		return nil, fmt.Errorf("stream %s: %s %s", session, res.Status, res.Header.Get("Content-Type"))
	}
	return c, nil
}

// openStreams measures the gateway with n SSE streams open, one per
// answered session, against the same gateway with none.
func openStreams(tb testing.TB, backend string, n int) (before, after census) {
	// Two files a stream (both ends are in this process), and the rest.
	raiseFileLimit(tb, uint64(2*n+1024))
	g := startGateway(tb, backend, httpapi.Config{})
	f := newFill("stream-", n)
	g.bulk(tb, "stream-", n)
	// Warm-up: one stream opened, fed and closed, and a turn.
	c, err := openStream(g.env.Addr, f.id(0))
	must(tb, err)
	g.turns(tb, "warm-", 2, 2)
	c.Close()
	before = g.idle(300 * time.Millisecond)
	conns := make([]net.Conn, 0, n)
	tb.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	for i := range n {
		c, err := openStream(g.env.Addr, f.id(i))
		must(tb, err)
		conns = append(conns, c)
	}
	// The streams have sent each session's log (10 events on average)
	// and wait; the census counts them waiting.
	after = g.idle(time.Second)
	return before, after
}

// BenchmarkOpenStreams reports what an open SSE stream costs the running
// gateway: goroutines and heap in use after GC with 1,000 streams (each
// on its own answered session, GATEHOUSE_SCALE_STREAMS to change)
// against none. The client side is bare connections nobody reads, so
// the figures are the server's (and the client's socket, a few hundred
// bytes). Run with -benchtime=1x.
func BenchmarkOpenStreams(b *testing.B) {
	n := envInt(b, "GATEHOUSE_SCALE_STREAMS", 1000)
	for _, backend := range backends {
		b.Run(backend, func(b *testing.B) {
			before, after := openStreams(b, backend, n)
			b.ReportMetric(float64(after.goroutines-before.goroutines)/float64(n), "goroutines-per-stream")
			b.ReportMetric(perSession(after.heapInuse, before.heapInuse, n), "heap-bytes-per-stream")
			b.Logf("%s: %d streams: goroutines %d → %d, heap in use %d → %d bytes", backend, n, before.goroutines, after.goroutines, before.heapInuse, after.heapInuse)
		})
	}
}

// TestOpenStreamsHoldBoundedGoroutines: an open, idle SSE stream holds a
// fixed number of goroutines (its connection's and its handler's), not
// one more per event or session size; 100 streams, at most 3 each.
func TestOpenStreamsHoldBoundedGoroutines(t *testing.T) {
	before, after := openStreams(t, "sqlite", 100)
	per := float64(after.goroutines-before.goroutines) / 100
	t.Logf("100 streams: goroutines %d → %d (%.2f a stream)", before.goroutines, after.goroutines, per)
	if per > 3 {
		t.Errorf("%.2f goroutines a stream", per)
	}
}
