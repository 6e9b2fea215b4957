package tools_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"math/big"
	"net"
	netmail "net/mail"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/tools/toolstest"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/tools"
)

// delivery is one DATA the test SMTP server accepted.
type delivery struct {
	From      string
	To        []string
	Subject   string
	Body      string
	MessageID string
	AuthUser  string
	TLS       bool
}

// smtpRecorder is a go-smtp backend that records every DATA.
type smtpRecorder struct {
	mu    sync.Mutex
	got   []delivery
	users map[string]string // user → password; nil: no AUTH offered
}

func (b *smtpRecorder) NewSession(c *smtp.Conn) (smtp.Session, error) {
	_, isTLS := c.TLSConnectionState()
	return &smtpSession{be: b, tls: isTLS}, nil
}

func (b *smtpRecorder) deliveries() []delivery {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]delivery(nil), b.got...)
}

type smtpSession struct {
	be   *smtpRecorder
	tls  bool
	user string
	from string
	to   []string
}

func (s *smtpSession) AuthMechanisms() []string {
	if s.be.users == nil {
		return nil
	}
	return []string{sasl.Plain}
}

func (s *smtpSession) Auth(mech string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, user, pass string) error {
		if s.be.users[user] != pass || pass == "" {
			return errors.New("bad credentials")
		}
		s.user = user
		return nil
	}), nil
}

func (s *smtpSession) Mail(from string, _ *smtp.MailOptions) error {
	if s.be.users != nil && s.user == "" {
		return smtp.ErrAuthRequired
	}
	s.from = from
	return nil
}

func (s *smtpSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	s.to = append(s.to, to)
	return nil
}

func (s *smtpSession) Data(r io.Reader) error {
	raw, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	m, err := netmail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		return err
	}
	body, _ := io.ReadAll(m.Body)
	d := delivery{
		From: s.from, To: append([]string(nil), s.to...),
		Subject: m.Header.Get("Subject"), Body: string(body),
		MessageID: m.Header.Get("Message-Id"), AuthUser: s.user,
		TLS: s.tls,
	}
	s.be.mu.Lock()
	s.be.got = append(s.be.got, d)
	s.be.mu.Unlock()
	return nil
}

func (s *smtpSession) Reset()        { s.from, s.to = "", nil }
func (s *smtpSession) Logout() error { return nil }

// startSMTP runs be on a loopback port; with tc set it offers STARTTLS.
func startSMTP(t *testing.T, be *smtpRecorder, tc *tls.Config) string {
	t.Helper()
	return serveSMTP(t, be, tc, false)
}

// serveSMTP runs be on a loopback port; implicit speaks TLS from the first
// byte (smtps), else tc (if set) is offered through STARTTLS.
func serveSMTP(t *testing.T, be *smtpRecorder, tc *tls.Config, implicit bool) string {
	t.Helper()
	srv := smtp.NewServer(be)
	srv.Domain = "localhost"
	srv.ReadTimeout = 10 * time.Second
	srv.WriteTimeout = 10 * time.Second
	srv.TLSConfig = tc
	log := &testLogger{t: t}
	srv.ErrorLog = log
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if implicit {
		ln = tls.NewListener(ln, tc)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { log.stop(); _ = srv.Close() })
	return addr
}

// testLogger logs the server's errors to the test until the test ends:
// the server may still log as it stops, and logging to an ended test is
// a data race in testing.
type testLogger struct {
	t       *testing.T
	mu      sync.Mutex
	stopped bool
}

func (l *testLogger) stop() { l.mu.Lock(); l.stopped = true; l.mu.Unlock() }

func (l *testLogger) Printf(format string, v ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.stopped {
		l.t.Logf("smtp server: "+format, v...)
	}
}

func (l *testLogger) Println(v ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.stopped {
		l.t.Log(append([]any{"smtp server:"}, v...)...)
	}
}

func TestEmailSendDeliversOnceWithIdempotencyKey(t *testing.T) {
	be := &smtpRecorder{}
	addr := startSMTP(t, be, nil)
	tool := tools.NewEmailSend(tools.EmailConfig{
		SMTPURL: "smtp://" + addr + "?tls=none",
		From:    "Gatehouse <bot@example.com>",
		Timeout: 5 * time.Second,
	})
	if err := tool.Runnable(); err != nil {
		t.Fatalf("Runnable: %v", err)
	}
	if tool.Tier() != tools.Danger || tool.Idempotent() {
		t.Fatalf("tier %s idempotent %v; want danger, not idempotent", tool.Tier(), tool.Idempotent())
	}
	res, err := tool.Run(context.Background(), tools.Call{ToolCall: gh.ToolCall{ID: "call_1", Arguments: toolstest.Args(t, map[string]string{"to": "Sara <sara@example.com>", "subject": "Report", "body": "The report is ready.\n"})}, IdempotencyKey: "rcpt_01HXYZ"})
	if err != nil || res.IsError {
		t.Fatalf("Run: %v %+v", err, res)
	}
	got := be.deliveries()
	if len(got) != 1 {
		t.Fatalf("%d deliveries, want exactly 1: %+v", len(got), got)
	}
	d := got[0]
	if d.From != "bot@example.com" || len(d.To) != 1 || d.To[0] != "sara@example.com" {
		t.Errorf("envelope from %q to %q", d.From, d.To)
	}
	if d.Subject != "Report" || strings.TrimSpace(d.Body) != "The report is ready." {
		t.Errorf("subject %q body %q", d.Subject, d.Body)
	}
	if d.MessageID != "<rcpt_01HXYZ@gatehouse>" {
		t.Errorf("Message-ID %q, want <rcpt_01HXYZ@gatehouse>", d.MessageID)
	}
	if !strings.Contains(res.Content, "<rcpt_01HXYZ@gatehouse>") || !strings.Contains(res.Content, "sara@example.com") {
		t.Errorf("result %q should name the recipient and Message-ID", res.Content)
	}
}

func TestEmailSendMessageIDEncodesOddKeys(t *testing.T) {
	be := &smtpRecorder{}
	addr := startSMTP(t, be, nil)
	tool := tools.NewEmailSend(tools.EmailConfig{SMTPURL: "smtp://" + addr + "?tls=none", From: "bot@example.com"})
	for _, key := range []string{"sess:1/call 2", "sess%3A1%2Fcall%202"} {
		res, err := tool.Run(context.Background(), tools.Call{ToolCall: gh.ToolCall{Arguments: toolstest.Args(t, map[string]string{"to": "a@example.com", "subject": "s", "body": "b"})}, IdempotencyKey: key})
		if err != nil || res.IsError {
			t.Fatalf("Run: %v %+v", err, res)
		}
	}
	got := be.deliveries()
	if len(got) != 2 {
		t.Fatalf("%d deliveries", len(got))
	}
	for _, d := range got {
		id, err := (&netmail.AddressParser{}).Parse(strings.Trim(d.MessageID, "<>"))
		if err != nil || !strings.HasSuffix(id.Address, "@gatehouse") {
			t.Errorf("Message-ID %q is not a valid msg-id: %v", d.MessageID, err)
		}
	}
	if got[0].MessageID == got[1].MessageID {
		t.Errorf("two keys gave one Message-ID %q", got[0].MessageID)
	}
}

func TestEmailSendBadAddressIsAnErrorResultNotASend(t *testing.T) {
	be := &smtpRecorder{}
	addr := startSMTP(t, be, nil)
	tool := tools.NewEmailSend(tools.EmailConfig{SMTPURL: "smtp://" + addr + "?tls=none", From: "bot@example.com"})
	for _, to := range []string{"sara", "sara@", "Sara <sara@example.com", ""} {
		res, err := tool.Run(context.Background(), tools.Call{ToolCall: gh.ToolCall{Arguments: toolstest.Args(t, map[string]string{"to": to, "subject": "s", "body": "b"})}, IdempotencyKey: "k"})
		if err != nil {
			t.Fatalf("%q: err %v", to, err)
		}
		if !res.IsError || !strings.Contains(res.Content, "not sent") {
			t.Errorf("%q: result %+v, want an error saying not sent", to, res)
		}
	}
	res, _ := tool.Run(context.Background(), tools.Call{ToolCall: gh.ToolCall{Arguments: toolstest.Args(t, map[string]string{"to": "a@example.com", "subject": "a\r\nBcc: x@example.com", "body": "b"})}})
	if !res.IsError {
		t.Errorf("a subject with a line break was sent: %+v", res)
	}
	if n := len(be.deliveries()); n != 0 {
		t.Fatalf("%d mails sent for bad arguments", n)
	}
}

func TestEmailSendNotRunnableWithoutSMTP(t *testing.T) {
	for _, cfg := range []tools.EmailConfig{
		{},
		{SMTPURL: "smtp://127.0.0.1:25"},
		{From: "bot@example.com"},
	} {
		tool := tools.NewEmailSend(cfg)
		err := tool.Runnable()
		if err == nil || !strings.Contains(err.Error(), "GATEHOUSE_SMTP_URL") {
			t.Errorf("%+v: Runnable %v, want the no-SMTP error", cfg, err)
		}
		r := tools.NewRegistry(tool)
		var ce *tools.CheckError
		if err := r.Check(tools.NameEmailSend, toolstest.Args(t, map[string]string{"to": "a@example.com", "subject": "s", "body": "b"})); !errors.As(err, &ce) || ce.Code != tools.CodeToolUnavailable {
			t.Errorf("Check: %v, want tool-unavailable", err)
		}
	}
	for _, u := range []string{"http://host", "smtp://", "smtp://host:0", "smtp://host?tls=maybe", "smtps://host?tls=none", "smtp://host?auth=plain"} {
		tool := tools.NewEmailSend(tools.EmailConfig{SMTPURL: u, From: "bot@example.com"})
		if tool.Runnable() == nil {
			t.Errorf("%s: runnable, want a config error", u)
		}
	}
	if err := tools.NewEmailSend(tools.EmailConfig{SMTPURL: "smtp://u:secret@host", From: "bot"}).Runnable(); err == nil || strings.Contains(err.Error(), "secret") {
		t.Errorf("bad From: %v (must fail and not show the password)", err)
	}
}

func TestEmailSendSTARTTLSAndAuth(t *testing.T) {
	cert, pool := selfSigned(t)
	be := &smtpRecorder{users: map[string]string{"bot": "s3cret"}}
	addr := startSMTP(t, be, &tls.Config{Certificates: []tls.Certificate{cert}})
	cfg := tools.EmailConfig{
		SMTPURL:   "smtp://bot:s3cret@" + addr + "?tls=mandatory",
		From:      "bot@example.com",
		TLSConfig: &tls.Config{RootCAs: pool},
		Timeout:   5 * time.Second,
	}
	res, err := tools.NewEmailSend(cfg).Run(context.Background(), tools.Call{ToolCall: gh.ToolCall{Arguments: toolstest.Args(t, map[string]string{"to": "a@example.com", "subject": "s", "body": "b"})}, IdempotencyKey: "k1"})
	if err != nil || res.IsError {
		t.Fatalf("Run: %v %+v", err, res)
	}
	got := be.deliveries()
	if len(got) != 1 || !got[0].TLS || got[0].AuthUser != "bot" {
		t.Fatalf("deliveries %+v, want one over TLS authenticated as bot", got)
	}

	// Wrong password: refused, nothing sent, an error result (not outcome unknown).
	cfg.SMTPURL = "smtp://bot:wrong@" + addr + "?tls=mandatory"
	res, err = tools.NewEmailSend(cfg).Run(context.Background(), tools.Call{ToolCall: gh.ToolCall{Arguments: toolstest.Args(t, map[string]string{"to": "a@example.com", "subject": "s", "body": "b"})}})
	if err != nil || !res.IsError {
		t.Fatalf("wrong password: %v %+v", err, res)
	}
	if len(be.deliveries()) != 1 {
		t.Fatal("a mail went through with a wrong password")
	}
}

func TestEmailSendImplicitTLS(t *testing.T) {
	cert, pool := selfSigned(t)
	be := &smtpRecorder{users: map[string]string{"bot": "s3cret"}}
	addr := serveSMTP(t, be, &tls.Config{Certificates: []tls.Certificate{cert}}, true)
	tool := tools.NewEmailSend(tools.EmailConfig{
		SMTPURL:   "smtps://bot:s3cret@" + addr,
		From:      "bot@example.com",
		TLSConfig: &tls.Config{RootCAs: pool},
		Timeout:   5 * time.Second,
	})
	res, err := tool.Run(context.Background(), tools.Call{ToolCall: gh.ToolCall{Arguments: toolstest.Args(t, map[string]string{"to": "a@example.com, Bo <bo@example.com>", "subject": "s", "body": "b"})}, IdempotencyKey: "k2"})
	if err != nil || res.IsError {
		t.Fatalf("Run: %v %+v", err, res)
	}
	got := be.deliveries()
	if len(got) != 1 || !got[0].TLS || got[0].AuthUser != "bot" || len(got[0].To) != 2 {
		t.Fatalf("deliveries %+v, want one over implicit TLS to two recipients", got)
	}

	// A certificate the client does not trust: refused before anything is sent.
	tool = tools.NewEmailSend(tools.EmailConfig{SMTPURL: "smtps://bot:s3cret@" + addr, From: "bot@example.com", Timeout: 5 * time.Second})
	res, err = tool.Run(context.Background(), tools.Call{ToolCall: gh.ToolCall{Arguments: toolstest.Args(t, map[string]string{"to": "a@example.com", "subject": "s", "body": "b"})}})
	if err != nil || !res.IsError || len(be.deliveries()) != 1 {
		t.Fatalf("untrusted certificate: %v %+v", err, res)
	}
}

func TestEmailSendTimeout(t *testing.T) {
	// A server that accepts the connection and never greets.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var conns []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	defer func() {
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	}()
	tool := tools.NewEmailSend(tools.EmailConfig{SMTPURL: "smtp://" + ln.Addr().String() + "?tls=none", From: "bot@example.com", Timeout: 300 * time.Millisecond})
	start := time.Now()
	res, err := tool.Run(context.Background(), tools.Call{ToolCall: gh.ToolCall{Arguments: toolstest.Args(t, map[string]string{"to": "a@example.com", "subject": "s", "body": "b"})}})
	if time.Since(start) > 5*time.Second {
		t.Fatalf("took %s", time.Since(start))
	}
	if err != nil || !res.IsError || !strings.Contains(res.Content, "not sent") {
		t.Fatalf("got %v %+v, want a not-sent error result", err, res)
	}
}

func selfSigned(t *testing.T) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "gatehouse test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA:         true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool
}

// Two installs sending in sessions of the same id (a second gateway, a
// fresh data directory) give distinct Message-IDs at the sender's domain,
// so a mail service that deduplicates on it drops neither; a retry of the
// same call on one install gives the same one, so it can drop the copy.
func TestEmailSendMessageIDIsUniquePerInstall(t *testing.T) {
	be := &smtpRecorder{}
	addr := startSMTP(t, be, nil)
	send := func(install string) string {
		t.Helper()
		tool := tools.NewEmailSend(tools.EmailConfig{SMTPURL: "smtp://" + addr + "?tls=none", From: "Gatehouse <bot@mail.example.com>", InstallID: install})
		n := len(be.deliveries())
		res, err := tool.Run(context.Background(), tools.Call{ToolCall: gh.ToolCall{ID: "call_1", Arguments: toolstest.Args(t, map[string]string{"to": "a@example.com", "subject": "s", "body": "b"})}, IdempotencyKey: "rcpt_sess-1_call_1"})
		if err != nil || res.IsError {
			t.Fatalf("Run: %v %+v", err, res)
		}
		got := be.deliveries()
		if len(got) != n+1 {
			t.Fatalf("%d deliveries, want %d", len(got), n+1)
		}
		return got[n].MessageID
	}
	first, second, retry := send("inst1a2b3c"), send("inst9z8y7x"), send("inst1a2b3c")
	if first == second {
		t.Fatalf("two installs gave one Message-ID %q", first)
	}
	if retry != first {
		t.Fatalf("a retry on the same install gave %q, the first send %q", retry, first)
	}
	if first != "<rcpt_sess-1_call_1.inst1a2b3c@mail.example.com>" {
		t.Errorf("Message-ID %q, want the key and the install id at the sender's domain", first)
	}
	id, err := (&netmail.AddressParser{}).Parse(strings.Trim(second, "<>"))
	if err != nil || !strings.HasSuffix(id.Address, "@mail.example.com") {
		t.Errorf("Message-ID %q is not a valid msg-id at the sender's domain: %v", second, err)
	}
}
