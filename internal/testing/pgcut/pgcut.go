// Package pgcut is a test harness: a loopback TCP proxy in front of a
// Postgres server that a test can cut (every connection dropped, new ones
// refused: the server is gone, as in a failover's gap), restore, or make
// lose the answer of the next COMMIT (the server commits, the client
// hears nothing: a connection that died during COMMIT). It reads the
// server's side of the wire protocol only far enough to find a
// CommandComplete "COMMIT"; the client's side is copied as it is. It
// needs sslmode=disable (no SSLRequest on the wire).
package pgcut

import (
	"encoding/binary"
	"io"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
)

// Proxy forwards loopback connections to a Postgres server.
type Proxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	conns map[net.Conn]struct{}
	cut   bool

	loseCommit atomic.Bool
	lost       atomic.Int64
}

// Start proxies to target (host:port) until tb's cleanup.
func Start(tb testing.TB, target string) *Proxy {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	p := &Proxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	go p.serve()
	tb.Cleanup(func() {
		ln.Close()
		p.Cut()
	})
	return p
}

// URL is u (a Postgres URL) pointed at the proxy.
func (p *Proxy) URL(tb testing.TB, u string) string {
	tb.Helper()
	pu, err := url.Parse(u)
	if err != nil {
		tb.Fatal(err)
	}
	pu.Host = p.ln.Addr().String()
	return pu.String()
}

// Target is the host:port of the server a Postgres URL names.
func Target(tb testing.TB, u string) string {
	tb.Helper()
	pu, err := url.Parse(u)
	if err != nil {
		tb.Fatal(err)
	}
	if pu.Port() == "" {
		return pu.Hostname() + ":5432"
	}
	return pu.Host
}

// Cut drops every connection and refuses new ones until Restore.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for c := range p.conns {
		c.Close()
	}
}

// Restore lets connections through again.
func (p *Proxy) Restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = false
}

// LoseNextCommit makes the next COMMIT's answer never reach its client:
// its connection is dropped right after the server said COMMIT.
func (p *Proxy) LoseNextCommit() { p.loseCommit.Store(true) }

// Lost is how many COMMIT answers were lost.
func (p *Proxy) Lost() int64 { return p.lost.Load() }

func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.conns, c)
}

func (p *Proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.handle(c)
	}
}

func (p *Proxy) handle(client net.Conn) {
	if !p.track(client) {
		client.Close()
		return
	}
	defer p.untrack(client)
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		client.Close()
		return
	}
	if !p.track(server) {
		client.Close()
		server.Close()
		return
	}
	defer p.untrack(server)
	done := make(chan struct{}, 2)
	go func() {
		io.Copy(server, client)
		done <- struct{}{}
	}()
	go func() {
		p.answers(client, server)
		done <- struct{}{}
	}()
	<-done
	client.Close()
	server.Close()
	<-done
}

// answers copies the server's messages to the client, one by one, and
// drops the connection instead of passing on a COMMIT it was told to lose.
func (p *Proxy) answers(client, server net.Conn) {
	var head [5]byte
	for {
		if _, err := io.ReadFull(server, head[:]); err != nil {
			return
		}
		n := int(binary.BigEndian.Uint32(head[1:])) - 4
		if n < 0 {
			return
		}
		body := make([]byte, n)
		if _, err := io.ReadFull(server, body); err != nil {
			return
		}
		if head[0] == 'C' && len(body) >= 6 && string(body[:6]) == "COMMIT" && p.loseCommit.CompareAndSwap(true, false) {
			p.lost.Add(1)
			return // committed on the server; the client never hears it
		}
		if _, err := client.Write(append(head[:], body...)); err != nil {
			return
		}
	}
}
