// Package smtptest is a real SMTP server on loopback (emersion/go-smtp) that
// records every message it accepts, for tests of outbound email. It can hold
// a DATA command after the message arrived, before it answers, to put a
// client in the window between "sent" and "known to be sent".
package smtptest

import (
	"bytes"
	"io"
	"net"
	netmail "net/mail"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-smtp"
)

// Mail is one accepted message.
type Mail struct {
	From      string
	To        []string
	Subject   string
	Body      string
	MessageID string
}

// Server records mail.
type Server struct {
	// Addr is host:port.
	Addr string

	mu   sync.Mutex
	got  []Mail
	hold chan struct{} // non-nil: DATA waits for it to close
	// Arrived receives a value each time a message's data arrived.
	Arrived chan Mail
}

// Start runs a server for the test's life.
func Start(t testing.TB) *Server {
	t.Helper()
	s := &Server{Arrived: make(chan Mail, 100)}
	srv := smtp.NewServer(backend{s})
	srv.Domain = "localhost"
	srv.ReadTimeout = 30 * time.Second
	srv.WriteTimeout = 30 * time.Second
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.Addr = ln.Addr().String()
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { s.Release(); _ = srv.Close() })
	return s
}

// URL is the GATEHOUSE_SMTP_URL for this server (no TLS on loopback).
func (s *Server) URL() string { return "smtp://" + s.Addr + "?tls=none" }

// Hold makes the next DATA commands record their message and then wait,
// without answering, until Release.
func (s *Server) Hold() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hold == nil {
		s.hold = make(chan struct{})
	}
}

// Release lets held DATA commands answer.
func (s *Server) Release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hold != nil {
		close(s.hold)
		s.hold = nil
	}
}

// Mails returns the messages accepted so far.
func (s *Server) Mails() []Mail {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Mail(nil), s.got...)
}

type backend struct{ s *Server }

func (b backend) NewSession(*smtp.Conn) (smtp.Session, error) { return &session{s: b.s}, nil }

type session struct {
	s    *Server
	from string
	to   []string
}

func (x *session) AuthMechanisms() []string { return nil }
func (x *session) Mail(from string, _ *smtp.MailOptions) error {
	x.from = from
	return nil
}
func (x *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	x.to = append(x.to, to)
	return nil
}

func (x *session) Data(r io.Reader) error {
	raw, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	m := Mail{From: x.from, To: append([]string(nil), x.to...)}
	if msg, err := netmail.ReadMessage(bytes.NewReader(raw)); err == nil {
		body, _ := io.ReadAll(msg.Body)
		m.Subject, m.Body, m.MessageID = msg.Header.Get("Subject"), string(body), msg.Header.Get("Message-Id")
	}
	x.s.mu.Lock()
	x.s.got = append(x.s.got, m)
	hold := x.s.hold
	x.s.mu.Unlock()
	x.s.Arrived <- m
	if hold != nil {
		<-hold
	}
	return nil
}

func (x *session) Reset()        { x.from, x.to = "", nil }
func (x *session) Logout() error { return nil }
