package tools

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	netmail "net/mail"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	mail "github.com/wneessen/go-mail"

	gh "github.com/gatehouse/gatehouse"
)

// TourMail routes the built-in tour's email_send calls to a dev mailbox.
//
// Which mailbox a call reaches is decided by the call itself, not by a
// setting: a call the tour made (its id carries a MAC only the tour's
// model can make, models.Registry.TourCall) is always written to Mailbox
// and never sent over SMTP, whatever SMTP is configured; every other call
// goes over SMTP as before, and is refused at once when there is none. A
// call whose id claims to be the tour's but is not genuine (a tour call
// from before a restart, or a forged id) is refused. So a real model can
// never deliver to the dev mailbox, and the tour can never send real mail.
type TourMail struct {
	// Mailbox receives the tour's mails. Required.
	Mailbox *DevMailbox
	// Classify says whether a call's id claims to be the tour's and
	// whether it is (models.Registry.TourCall). Required.
	Classify func(callID, tool string) (claims, genuine bool)
}

// DevMail is one mail in the dev mailbox.
type DevMail struct {
	ID        string    `json:"id"` // the file's name
	MessageID string    `json:"messageId"`
	From      string    `json:"from"`
	To        string    `json:"to"`
	Subject   string    `json:"subject"`
	Body      string    `json:"body"`
	Date      time.Time `json:"date"`
}

// DevMailbox keeps mails as .eml files in a directory (0700, files 0600)
// instead of sending them: the tour's mailbox, under the data directory.
type DevMailbox struct {
	dir string
}

// NewDevMailbox returns the mailbox in dir; the directory is made on the
// first delivery.
func NewDevMailbox(dir string) *DevMailbox { return &DevMailbox{dir: dir} }

// Dir is where the mails are written.
func (m *DevMailbox) Dir() string { return m.dir }

// deliver writes msg under a name derived from key (the call's receipt
// id), so a repeated delivery of one call replaces its file instead of
// making a second mail. It returns the file's name.
func (m *DevMailbox) deliver(msg *mail.Msg, key string) (string, error) {
	if err := os.MkdirAll(m.dir, 0o700); err != nil {
		return "", gh.Wrap(gh.CodeInternal, err, "dev mailbox %s", m.dir)
	}
	var buf bytes.Buffer
	if _, err := msg.WriteTo(&buf); err != nil {
		return "", gh.Wrap(gh.CodeInternal, err, "dev mailbox: write the message")
	}
	name := time.Now().UTC().Format("20060102T150405.000000Z") + ".eml"
	if key != "" {
		name = "mail-" + messageIDLocalPart(key) + ".eml"
	}
	tmp, err := os.CreateTemp(m.dir, ".incoming-*")
	if err != nil {
		return "", gh.Wrap(gh.CodeInternal, err, "dev mailbox %s", m.dir)
	}
	defer os.Remove(tmp.Name()) // gone after the rename; cleans up a failure
	if _, err := tmp.Write(buf.Bytes()); err != nil {
		tmp.Close()
		return "", gh.Wrap(gh.CodeInternal, err, "dev mailbox: write %s", name)
	}
	if err := tmp.Close(); err != nil {
		return "", gh.Wrap(gh.CodeInternal, err, "dev mailbox: write %s", name)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(m.dir, name)); err != nil {
		return "", gh.Wrap(gh.CodeInternal, err, "dev mailbox: keep %s", name)
	}
	return name, nil
}

// List returns the mails, newest first; none when nothing was delivered.
func (m *DevMailbox) List() ([]DevMail, error) {
	entries, err := os.ReadDir(m.dir)
	if errors.Is(err, os.ErrNotExist) {
		return []DevMail{}, nil
	}
	if err != nil {
		return nil, gh.Wrap(gh.CodeInternal, err, "dev mailbox %s", m.dir)
	}
	out := []DevMail{}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".eml") {
			continue
		}
		d, err := readDevMail(filepath.Join(m.dir, e.Name()))
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	slices.SortStableFunc(out, func(a, b DevMail) int { return b.Date.Compare(a.Date) })
	return out, nil
}

func readDevMail(path string) (DevMail, error) {
	f, err := os.Open(path)
	if err != nil {
		return DevMail{}, gh.Wrap(gh.CodeInternal, err, "dev mailbox: read %s", filepath.Base(path))
	}
	defer f.Close()
	msg, err := netmail.ReadMessage(f)
	if err != nil {
		return DevMail{}, gh.Wrap(gh.CodeInternal, err, "dev mailbox: %s is not a mail", filepath.Base(path))
	}
	body, err := io.ReadAll(msg.Body)
	if err != nil {
		return DevMail{}, gh.Wrap(gh.CodeInternal, err, "dev mailbox: read %s", filepath.Base(path))
	}
	var dec mime.WordDecoder
	header := func(k string) string {
		v := msg.Header.Get(k)
		if d, err := dec.DecodeHeader(v); err == nil {
			return d
		}
		return v
	}
	date, _ := msg.Header.Date()
	return DevMail{
		ID: filepath.Base(path), MessageID: strings.Trim(header("Message-Id"), "<>"),
		From: header("From"), To: header("To"), Subject: header("Subject"),
		Body: strings.ReplaceAll(string(body), "\r\n", "\n"), Date: date,
	}, nil
}

// tourOf classifies a call: made by the tour, claiming to be, or neither.
func (t *EmailSend) tourOf(c gh.ToolCall) (claims, genuine bool) {
	if t.cfg.Tour == nil || t.cfg.Tour.Classify == nil {
		return strings.Contains(c.ID, "tour_"), false
	}
	return t.cfg.Tour.Classify(c.ID, c.Name)
}

// RunnableFor implements CallChecker: the tour's calls need only the dev
// mailbox; a call that claims to be the tour's and is not is refused;
// every other call needs SMTP (Runnable).
func (t *EmailSend) RunnableFor(c gh.ToolCall) error {
	switch claims, genuine := t.tourOf(c); {
	case genuine && t.cfg.Tour.Mailbox == nil:
		return errors.New("the tour's dev mailbox is not configured")
	case genuine:
		return nil
	case claims:
		return errNotTheTour
	}
	return t.err
}

var errNotTheTour = errors.New("this call's id claims to come from the tour, but this gateway's tour did not make it " +
	"(a tour call from before a restart is not honoured); ask the tour again")

// deliverToDevMailbox is Run for a call the tour made: the mail is built
// as for SMTP and written to the dev mailbox.
func (t *EmailSend) deliverToDevMailbox(call Call, to []*netmail.Address, a emailArgs) (Result, error) {
	msg := mail.NewMsg(mail.WithEncoding(mail.NoEncoding))
	if err := msg.From("Gatehouse tour <tour@gatehouse.invalid>"); err != nil {
		return ErrorResult("email_send: %v", err), nil
	}
	msg.ToMailAddress(to...)
	msg.Subject(a.Subject)
	msg.SetDate()
	msg.SetBodyString(mail.TypeTextPlain, a.Body)
	if call.IdempotencyKey != "" {
		msg.SetMessageIDWithValue(messageID(call.IdempotencyKey, t.cfg.InstallID, "tour@gatehouse.invalid"))
	} else {
		msg.SetMessageID()
	}
	name, err := t.cfg.Tour.Mailbox.deliver(msg, call.IdempotencyKey)
	if err != nil {
		return ErrorResult("email_send: not delivered to the dev mailbox: %v", err), nil
	}
	rcpt := make([]string, len(to))
	for i, r := range to {
		rcpt[i] = r.Address
	}
	return Result{Content: fmt.Sprintf("delivered to the dev mailbox (tour only, not sent): to %s, file %s",
		strings.Join(rcpt, ", "), name)}, nil
}
