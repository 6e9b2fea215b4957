package tools_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/internal/testing/smtptest"
	"github.com/gatehouse/gatehouse/tools"
	"github.com/gatehouse/gatehouse/tools/toolstest"
)

// tourIDs stands for models.Registry.TourCall: "tour_ok" is the tour's
// own call, any other "tour_" id only claims to be.
func tourIDs(id, _ string) (claims, genuine bool) {
	return strings.HasPrefix(id, "tour_"), id == "tour_ok"
}

func tourEmail(t *testing.T, cfg tools.EmailConfig) (*tools.EmailSend, *tools.DevMailbox) {
	t.Helper()
	box := tools.NewDevMailbox(filepath.Join(t.TempDir(), "devmail"))
	cfg.Tour = &tools.TourMail{Mailbox: box, Classify: tourIDs}
	return tools.NewEmailSend(cfg), box
}

var saraMail = map[string]string{"to": "sara@example.com", "subject": "[Gatehouse tour] The report is ready", "body": "Hi Sara,\n\nThe report is ready."}

func mailCall(t *testing.T, id string) tools.Call {
	return tools.Call{ToolCall: gh.ToolCall{ID: id, Name: tools.NameEmailSend, Arguments: toolstest.Args(t, saraMail)}, IdempotencyKey: "receipt:" + id}
}

func TestDevMailboxTakesTheToursMailWithoutSMTP(t *testing.T) {
	email, box := tourEmail(t, tools.EmailConfig{}) // no SMTP at all
	reg := tools.NewRegistry(email)
	call := mailCall(t, "tour_ok")
	if err := reg.CheckCall(call.ToolCall); err != nil {
		t.Fatalf("the tour's call is refused: %v", err)
	}
	for range 2 { // a repeat of the same call makes no second mail
		res, err := email.Run(context.Background(), call)
		if err != nil || res.IsError || !strings.Contains(res.Content, "dev mailbox") {
			t.Fatalf("run: %+v %v", res, err)
		}
	}
	mails, err := box.List()
	if err != nil || len(mails) != 1 {
		t.Fatalf("mailbox: %+v %v", mails, err)
	}
	m := mails[0]
	if !strings.Contains(m.To, "sara@example.com") || m.Subject != saraMail["subject"] || !strings.Contains(m.Body, "The report is ready.") ||
		!strings.Contains(m.From, "tour") || m.Date.IsZero() || m.MessageID == "" {
		t.Fatalf("mail: %+v", m)
	}
	if _, err := os.Stat(filepath.Join(box.Dir(), m.ID)); err != nil {
		t.Fatalf("the mail's file: %v", err)
	}
}

// Without SMTP a call that is not the tour's is refused at once, as it
// always was, and the dev mailbox never sees it.
func TestNonTourCallWithoutSMTPIsRefusedAsBefore(t *testing.T) {
	email, box := tourEmail(t, tools.EmailConfig{})
	reg := tools.NewRegistry(email)
	for _, id := range []string{"call_1", "toolu_01", "tour_forged"} {
		call := mailCall(t, id)
		err := reg.CheckCall(call.ToolCall)
		var ce *tools.CheckError
		if !errors.As(err, &ce) || ce.Code != tools.CodeToolUnavailable {
			t.Fatalf("%s: CheckCall = %v, want tool-unavailable", id, err)
		}
		if id != "tour_forged" && !strings.Contains(ce.Message, "no SMTP configured") {
			t.Errorf("%s: %s", id, ce.Message)
		}
		if res, _ := email.Run(context.Background(), call); !res.IsError {
			t.Errorf("%s ran: %+v", id, res)
		}
	}
	// Check (no call id) is what it was.
	if err := reg.Check(tools.NameEmailSend, toolstest.Args(t, saraMail)); err == nil {
		t.Error("Check without SMTP passed")
	}
	if mails, _ := box.List(); len(mails) != 0 {
		t.Fatalf("the dev mailbox got %d mails from calls that were not the tour's", len(mails))
	}
}

// With SMTP configured, the tour's mail still goes to the dev mailbox and
// never to the server; another call goes to the server and never to the
// mailbox.
func TestTourNeverSendsAndOthersNeverReachTheMailbox(t *testing.T) {
	srv := smtptest.Start(t)
	email, box := tourEmail(t, tools.EmailConfig{SMTPURL: srv.URL(), From: "agent@example.com"})
	if res, err := email.Run(context.Background(), mailCall(t, "tour_ok")); err != nil || res.IsError {
		t.Fatalf("tour run: %+v %v", res, err)
	}
	if n := len(srv.Mails()); n != 0 {
		t.Fatalf("the tour's mail reached the SMTP server (%d)", n)
	}
	if res, err := email.Run(context.Background(), mailCall(t, "call_1")); err != nil || res.IsError || !strings.Contains(res.Content, "sent to") {
		t.Fatalf("real run: %+v %v", res, err)
	}
	if res, _ := email.Run(context.Background(), mailCall(t, "tour_forged")); !res.IsError {
		t.Fatalf("a forged tour call ran: %+v", res)
	}
	if n := len(srv.Mails()); n != 1 {
		t.Fatalf("SMTP got %d mails, want the real call's one", n)
	}
	if mails, _ := box.List(); len(mails) != 1 {
		t.Fatalf("dev mailbox: %d mails, want the tour's one", len(mails))
	}
}

// Without a tour configured (no TourMail) no call reaches a mailbox.
func TestNoTourMailRefusesTourCalls(t *testing.T) {
	email := tools.NewEmailSend(tools.EmailConfig{})
	if err := tools.NewRegistry(email).CheckCall(mailCall(t, "tour_ok").ToolCall); err == nil {
		t.Fatal("a tour call passed with no tour mailbox")
	}
	if res, _ := email.Run(context.Background(), mailCall(t, "tour_ok")); !res.IsError {
		t.Fatalf("ran: %+v", res)
	}
}

func TestDevMailboxEmpty(t *testing.T) {
	box := tools.NewDevMailbox(filepath.Join(t.TempDir(), "none"))
	if mails, err := box.List(); err != nil || mails == nil || len(mails) != 0 {
		t.Fatalf("empty mailbox: %v %v", mails, err)
	}
}
