package connlimit

import (
	"context"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"
)

// Within max a connection is plain; over it (within the reserve) it is
// marked for OverCap and its reads never wait past the hold; beyond the
// reserve it is closed unanswered; closing connections frees their slots.
func TestListenerCountsAndMarks(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := Listener(inner, 1, 1, slog.New(slog.DiscardHandler))
	defer ln.Close()
	dial := func() net.Conn {
		c, err := net.Dial("tcp", inner.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	accept := func() net.Conn {
		c, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		return c
	}

	dial()
	first := accept()
	if OverCap(ConnContext(context.Background(), first)) {
		t.Fatal("a connection within the cap is marked over it")
	}
	dial()
	second := accept()
	if !OverCap(ConnContext(context.Background(), second)) {
		t.Fatal("a connection over the cap is not marked")
	}
	if cc := second.(*capConn); !cc.clamp(time.Time{}).Equal(cc.until) || !cc.clamp(time.Now().Add(time.Hour)).Equal(cc.until) {
		t.Fatal("an over-cap connection's read deadline is not held to its hold")
	}

	// Beyond the reserve: Accept closes it and waits for the next one.
	third := dial()
	next := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			c = nil
		}
		next <- c
	}()
	_ = third.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := third.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("a connection beyond the reserve was not closed: %v", err)
	}
	first.Close()
	second.Close()
	dial()
	fourth := <-next
	if fourth == nil {
		t.Fatal("no connection accepted after the others closed")
	}
	if OverCap(ConnContext(context.Background(), fourth)) {
		t.Fatal("a connection after the others closed is still marked over the cap")
	}
}
