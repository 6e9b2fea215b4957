package main

import (
	"encoding/json"
	"strings"
	"syscall"
	"testing"

	"github.com/gatehouse/gatehouse/adapters/telegram/telegramtest"
	"github.com/gatehouse/gatehouse/gateway/chat"
	"github.com/gatehouse/gatehouse/models/modeltest"
)

// Files sent in a Telegram chat, through the real binary and the
// Telegram fake: "/library" as a document's caption adds it to the chat's
// library, the next turn is given its passage and its answer cites it; a
// broken PDF and a
// binary called .txt are refused in the chat; "/library shared" as a
// reply to the document asks an approver, the requester cannot approve
// it, the approver does from the approvers' chat, and the chat hears it
// was added.
func TestTelegramLibraryUploads(t *testing.T) {
	tg := telegramtest.NewTelegram(t, telegramtest.TelegramOptions{})
	model := modeltest.NewOpenAI(t, "test-key")
	model.SetDefault(modeltest.Reply{Text: "Noted."})
	envs := append([]string{"GATEHOUSE_DATA_DIR=" + t.TempDir(), "GATEHOUSE_MODEL=openai:test-model", "OPENAI_API_KEY=test-key",
		"OPENAI_BASE_URL=" + model.BaseURL(), "GATEHOUSE_APPROVERS_LIBRARY_ADD=telegram:" + tg.UserID("carol"),
		"GATEHOUSE_APPROVAL_CHAT=telegram:" + tg.ChatID("group-approvers")}, telegramEnvs(tg)...)
	p := start(t, envs...)

	reply := func(what, words string) string {
		t.Helper()
		var got string
		waitUntil(t, what, func() bool {
			for _, m := range tg.Messages("alice") {
				if strings.Contains(m.Text, words) {
					got = m.Text
					return true
				}
			}
			return false
		})
		return got
	}
	const handbook = "# Handbook\n\n## Zorblax calibration\n\nCalibrate the zorblax with the quindle wrench every Tuesday before standup.\n"
	_, docMsg := tg.SayDocument("alice", "alice", "/library", "handbook.md", "text/markdown", []byte(handbook))
	if got := reply("the chat's library add answered", "this chat's library"); !strings.Contains(got, "Added") || !strings.Contains(got, "handbook.md") {
		t.Fatalf("the answer to /library: %q", got)
	}

	model.Push(modeltest.Reply{Text: "Per handbook.md: use the quindle wrench, every Tuesday."})
	tg.Say("alice", "alice", "How do I calibrate the zorblax?", false)
	// The answer names the document it was given: the chat gets its
	// Sources line.
	if got := reply("the answer to the question", "quindle wrench, every Tuesday"); !strings.Contains(got, "Sources:") || !strings.Contains(got, "Zorblax calibration") {
		t.Fatalf("the answer has no sources line: %q", got)
	}
	given := false
	for _, r := range model.Requests() {
		given = given || strings.Contains(string(r.Body), "quindle wrench every Tuesday")
	}
	if !given {
		t.Fatal("the model was not given the chat's document's passage")
	}

	tg.SayDocument("alice", "alice", "/library", "scan.pdf", "application/pdf", []byte("%PDF-1.4\nthis is not a PDF body at all\n"))
	if got := reply("the broken PDF refused", "scan.pdf"); !strings.Contains(got, "Not added") {
		t.Fatalf("the broken PDF's answer: %q", got)
	}
	tg.SayDocument("alice", "alice", "/library", "notes.txt", "text/plain", []byte{0x7f, 'E', 'L', 'F', 2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3, 0})
	if got := reply("the binary refused", "notes.txt"); !strings.Contains(got, "Not added") {
		t.Fatalf("the binary's answer: %q", got)
	}

	tg.ReplyCommand("alice", "alice", "/library shared", docMsg)
	reply("the shared request answered", "Asked an approver")
	card := waitCard(t, tg, "alice")
	copyCard := waitCard(t, tg, "group-approvers")
	if !strings.Contains(card.Text, "handbook.md") || !strings.Contains(card.Text, "shared library") {
		t.Fatalf("the card says %q", card.Text)
	}
	if got, err := tg.Press("alice", card.ID, button(t, card, chat.ChoiceApprove), "alice"); err != nil || !strings.Contains(got, "cannot decide") {
		t.Fatalf("the requester's own press: %q %v", got, err)
	}
	if got, err := tg.Press("group-approvers", copyCard.ID, button(t, copyCard, chat.ChoiceApprove), "carol"); err != nil || !strings.Contains(got, "Approved") {
		t.Fatalf("the approver's press: %q %v", got, err)
	}
	if got := reply("the shared add told", "to the shared library, approved by carol"); !strings.Contains(got, "handbook.md") {
		t.Fatalf("the shared add's notice: %q", got)
	}
	tgEdited(t, tg, "alice", card.ID, "Approved by carol")
	var docs struct {
		Documents []struct{ Collection, Name, Source string }
	}
	if err := json.Unmarshal([]byte(getText(t, "http://"+p.addr+"/v1/documents?collection=shared")), &docs); err != nil ||
		len(docs.Documents) != 1 || docs.Documents[0].Name != "handbook.md" || docs.Documents[0].Source != "chat" {
		t.Fatalf("the shared collection: %+v %v", docs, err)
	}
	if errs := tg.Errors(); len(errs) != 0 {
		t.Fatalf("the fake refused: %q", errs)
	}
	p.stopWith(t, syscall.SIGTERM)
}
