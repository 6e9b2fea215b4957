package tools

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	netmail "net/mail"
	"net/url"
	"strconv"
	"strings"
	"time"

	mail "github.com/wneessen/go-mail"
)

// NameEmailSend is the name of the email tool.
const NameEmailSend = "email_send"

// EmailConfig configures email_send.
type EmailConfig struct {
	// SMTPURL is the server to send through: smtp://user:pass@host:port
	// (STARTTLS) or smtps://user:pass@host:port (implicit TLS). The port
	// defaults to 587 for smtp and 465 for smtps. User and password are
	// optional; with them the strongest mechanism the server offers is
	// used (PLAIN and LOGIN only over TLS), or the one named by ?auth=
	// (plain, login, cram-md5, scram-sha-1, scram-sha-256, xoauth2,
	// plain-noenc, login-noenc).
	//
	// The STARTTLS policy of smtp:// is the ?tls= parameter:
	// "opportunistic" (the default: STARTTLS when the server offers it),
	// "mandatory" (refuse to send without STARTTLS) or "none" (never
	// STARTTLS; for a relay on loopback, and for tests).
	//
	// Empty leaves email_send unrunnable.
	SMTPURL string
	// From is the sender address, "bot@example.com" or
	// "Gatehouse <bot@example.com>". Empty leaves email_send unrunnable.
	From string
	// Timeout bounds the whole SMTP conversation of one send.
	// Defaults to 30s.
	Timeout time.Duration
	// TLSConfig is used for STARTTLS and implicit TLS. Defaults to verifying
	// the server's certificate against the system roots for the URL's host.
	TLSConfig *tls.Config
	// InstallID names this install in every Message-ID, with the domain
	// of From after the @: two installs (or a fresh data directory) that
	// send in sessions of the same id never give the same Message-ID, so a
	// mail service that deduplicates on it drops nothing of ours. cmd
	// keeps a random one in the store, so every replica on one database
	// uses the same. Empty: the Message-ID is the idempotency key alone,
	// at "gatehouse" (as before installs had an id).
	InstallID string
	// Tour sends the built-in tour's calls to a dev mailbox (see TourMail:
	// only calls the tour made, and those never over SMTP). Defaults to
	// nil: a tour call is refused.
	Tour *TourMail
}

// EmailSend is the email_send tool: one plain-text mail over SMTP.
type EmailSend struct {
	cfg  EmailConfig
	smtp *smtpTarget // nil when the config is unusable
	from *netmail.Address
	err  error // why the tool is not runnable
}

type smtpTarget struct {
	host      string
	port      int
	implicit  bool // smtps
	policy    mail.TLSPolicy
	user, pwd string
	auth      mail.SMTPAuthType // "" with no credentials
}

// NewEmailSend returns email_send with cfg.
func NewEmailSend(cfg EmailConfig) *EmailSend {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 30 * time.Second
	}
	t := &EmailSend{cfg: cfg}
	if cfg.SMTPURL == "" || cfg.From == "" {
		t.err = errors.New("no SMTP configured: set GATEHOUSE_SMTP_URL and GATEHOUSE_EMAIL_FROM")
		return t
	}
	target, err := parseSMTPURL(cfg.SMTPURL)
	if err != nil {
		t.err = fmt.Errorf("GATEHOUSE_SMTP_URL: %w", err)
		return t
	}
	from, err := netmail.ParseAddress(cfg.From)
	if err != nil {
		t.err = fmt.Errorf("GATEHOUSE_EMAIL_FROM %q is not an email address: %v", cfg.From, err)
		return t
	}
	t.smtp, t.from = target, from
	return t
}

func parseSMTPURL(raw string) (*smtpTarget, error) {
	u, err := url.Parse(raw)
	if err != nil {
		// url.Parse quotes the whole URL, password included: don't repeat it.
		return nil, errors.New("not a valid URL")
	}
	t := &smtpTarget{host: u.Hostname(), policy: mail.TLSOpportunistic}
	switch u.Scheme {
	case "smtp":
		t.port = 587
	case "smtps":
		t.port, t.implicit = 465, true
	default:
		return nil, fmt.Errorf("scheme %q: want smtp:// or smtps://", u.Scheme)
	}
	if t.host == "" {
		return nil, errors.New("no host")
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("bad port %q", p)
		}
		t.port = n
	}
	q := u.Query()
	switch v := strings.ToLower(q.Get("tls")); v {
	case "", "opportunistic":
	case "mandatory":
		t.policy = mail.TLSMandatory
	case "none":
		if t.implicit {
			return nil, errors.New("tls=none contradicts smtps:// (implicit TLS)")
		}
		t.policy = mail.NoTLS
	default:
		return nil, fmt.Errorf("tls=%q: want opportunistic, mandatory or none", v)
	}
	if u.User != nil {
		t.user = u.User.Username()
		t.pwd, _ = u.User.Password()
		t.auth = mail.SMTPAuthAutoDiscover
	}
	if v := q.Get("auth"); v != "" {
		a := mail.SMTPAuthType(strings.ToUpper(v))
		switch a {
		case mail.SMTPAuthPlain, mail.SMTPAuthLogin, mail.SMTPAuthCramMD5, mail.SMTPAuthSCRAMSHA1,
			mail.SMTPAuthSCRAMSHA256, mail.SMTPAuthXOAUTH2, mail.SMTPAuthPlainNoEnc,
			mail.SMTPAuthLoginNoEnc, mail.SMTPAuthAutoDiscover:
		default:
			return nil, fmt.Errorf("auth=%q is not a mechanism this client knows", v)
		}
		if u.User == nil {
			return nil, fmt.Errorf("auth=%s needs a user in the URL", v)
		}
		t.auth = a
	}
	return t, nil
}

// Name implements Tool.
func (t *EmailSend) Name() string { return NameEmailSend }

// Description implements Tool.
func (t *EmailSend) Description() string {
	return "Send a plain-text email. A person approves each email before it is sent."
}

// Schema implements Tool.
func (t *EmailSend) Schema() json.RawMessage {
	return json.RawMessage(`{
  "type": "object",
  "properties": {
    "to": {"type": "string", "description": "Recipient address, or several separated by commas (\"sara@example.com\", \"Sara <sara@example.com>, bo@example.com\")."},
    "subject": {"type": "string", "description": "Subject line, one line."},
    "body": {"type": "string", "description": "Plain-text body."}
  },
  "required": ["to", "subject", "body"],
  "additionalProperties": false
}`)
}

// Tier implements Tool: a mail leaves the house.
func (t *EmailSend) Tier() Tier { return Danger }

// Runnable implements Tool.
func (t *EmailSend) Runnable() error { return t.err }

// Idempotent implements Tool. The Message-ID derived from the idempotency
// key lets a receiving system deduplicate, but SMTP itself cannot: a
// retried send may deliver a second copy, so email_send is not idempotent.
func (t *EmailSend) Idempotent() bool { return false }

type emailArgs struct {
	To      string `json:"to"`
	Subject string `json:"subject"`
	Body    string `json:"body"`
}

// Run implements Tool.
func (t *EmailSend) Run(ctx context.Context, call Call) (Result, error) {
	claims, tour := t.tourOf(call.ToolCall)
	switch {
	case tour && (t.cfg.Tour == nil || t.cfg.Tour.Mailbox == nil):
		return ErrorResult("email_send cannot run: the tour's dev mailbox is not configured"), nil
	case claims && !tour:
		return ErrorResult("email_send cannot run: %v", errNotTheTour), nil
	case !tour && t.err != nil:
		return ErrorResult("email_send cannot run: %v", t.err), nil
	}
	var a emailArgs
	if err := json.Unmarshal(call.Arguments, &a); err != nil {
		return ErrorResult("email_send: bad arguments: %v", err), nil
	}
	// Parsed as the approval card showed them (Present): the same parser,
	// the same refusals.
	to, err := parseRecipients(a.To)
	if err != nil {
		return ErrorResult("%v", err), nil
	}
	if err := checkSubject(a.Subject); err != nil {
		return ErrorResult("%v", err), nil
	}
	if tour {
		return t.deliverToDevMailbox(call, sentTo(to), a)
	}

	msg := mail.NewMsg()
	msg.FromMailAddress(t.from)
	msg.ToMailAddress(sentTo(to)...)
	msg.Subject(a.Subject)
	msg.SetDate()
	msg.SetBodyString(mail.TypeTextPlain, a.Body)
	if call.IdempotencyKey != "" {
		// The receipt id in the Message-ID: a receiving system that sees the
		// same id twice can drop the copy — a retry of this call, never
		// another install's mail.
		msg.SetMessageIDWithValue(messageID(call.IdempotencyKey, t.cfg.InstallID, t.from.Address))
	} else {
		msg.SetMessageID()
	}

	client, err := t.client()
	if err != nil {
		return ErrorResult("email_send: not sent: %v", err), nil
	}
	sendCtx, cancel := context.WithTimeout(ctx, t.cfg.Timeout)
	defer cancel()
	err = client.DialAndSendWithContext(sendCtx, msg)
	recipients := make([]string, len(to))
	for i, r := range to {
		recipients[i] = r.Addr.Sent()
	}
	rcpt := strings.Join(recipients, ", ")
	if msg.IsDelivered() {
		// The server accepted the mail; a failure after that (closing the
		// connection) does not unsend it.
		out := fmt.Sprintf("sent to %s, Message-ID %s", rcpt, msg.GetMessageID())
		if resp := strings.TrimSpace(msg.ServerResponse()); resp != "" {
			// The server's reply text is its own words: fenced.
			return Result{Content: out + "; the server said: " + resp, External: true}, nil
		}
		return Result{Content: out}, nil
	}
	if err == nil {
		return ErrorResult("email_send: the server did not confirm the mail to %s", rcpt), fmt.Errorf("email_send: %w: no confirmation", ErrOutcomeUnknown)
	}
	var se *mail.SendError
	if errors.As(err, &se) && (se.Reason == mail.ErrWriteContent || (se.Reason == mail.ErrSMTPDataClose && se.ErrorCode() == 0)) {
		// The message went (partly) over the wire and no verdict came back.
		return smtpErrorResult("email_send: the outcome is unknown: the connection failed while the mail to %s was being handed over (%v); it may or may not have been sent", rcpt, err),
			fmt.Errorf("email_send: %w: %v", ErrOutcomeUnknown, err)
	}
	if ctx.Err() != nil {
		return ErrorResult("email_send: not sent: %v", ctx.Err()), ctx.Err()
	}
	return smtpErrorResult("email_send: not sent to %s: %v", rcpt, err), nil
}

// sentTo are the recipients as SMTP gets them: each address exactly as
// the card showed it sent (mailaddr.Address.Sent).
func sentTo(to []recipient) []*netmail.Address {
	out := make([]*netmail.Address, len(to))
	for i, r := range to {
		out[i] = r.mail()
	}
	return out
}

// smtpErrorResult is an error result that quotes an SMTP error: its text
// holds the server's reply ("550 5.1.1 …"), words a remote server chose,
// so it is External and the toolworker fences it.
func smtpErrorResult(format string, args ...any) Result {
	r := ErrorResult(format, args...)
	r.External = true
	return r
}

func (t *EmailSend) client() (*mail.Client, error) {
	s := t.smtp
	opts := []mail.Option{
		mail.WithPort(s.port),
		mail.WithTimeout(t.cfg.Timeout),
		mail.WithTLSPolicy(s.policy),
	}
	if s.implicit {
		opts = append(opts, mail.WithSSL())
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if t.cfg.TLSConfig != nil {
		tc = t.cfg.TLSConfig.Clone()
	}
	if tc.ServerName == "" {
		tc.ServerName = s.host
	}
	opts = append(opts, mail.WithTLSConfig(tc))
	if s.auth != "" {
		opts = append(opts, mail.WithSMTPAuth(s.auth), mail.WithUsername(s.user), mail.WithPassword(s.pwd))
	}
	return mail.NewClient(s.host, opts...)
}

// messageID is the Message-ID (without its angle brackets) of the call
// with idempotency key key: the key, then the install's id, at the
// sender's domain. The same call on the same install always gives the
// same one; another install, or another call, never does.
func messageID(key, install, from string) string {
	domain := "gatehouse"
	if install == "" {
		return messageIDLocalPart(key) + "@" + domain
	}
	if _, d, ok := strings.Cut(from, "@"); ok && d != "" && !strings.ContainsAny(d, "<>[] \t\"") {
		domain = d
	}
	return messageIDLocalPart(key) + "." + messageIDLocalPart(install) + "@" + domain
}

// messageIDLocalPart turns an idempotency key into the part of a Message-ID
// before the @. A key made of letters, digits, '-', '_' and inner dots is
// kept as it is; any other byte is written %XX, so two keys never give the
// same Message-ID.
func messageIDLocalPart(key string) string {
	plain := func(c byte) bool {
		return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
	}
	ok := key != "" && key[0] != '.' && key[len(key)-1] != '.' && !strings.Contains(key, "..")
	for i := 0; ok && i < len(key); i++ {
		ok = plain(key[i]) || key[i] == '.'
	}
	if ok {
		return key
	}
	var b strings.Builder
	for i := 0; i < len(key); i++ {
		if c := key[i]; plain(c) {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}
