package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/adapters/telegram/telegramtest"
	"github.com/gatehouse/gatehouse/internal/testing/smtptest"
	"github.com/gatehouse/gatehouse/memory"
	"github.com/gatehouse/gatehouse/store/sqlite"
)

// The email check's address book is the person's own memory under the
// config's, which everyone shares and which wins a conflict.
func TestPersonContactsAreTheirOwnUnderTheConfigBook(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(t.TempDir(), "m.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	mem := memory.New(st, memory.Config{NoModelPass: true})
	for user, said := range map[string]string{
		"telegram:u_a": "Sara's email is sara-a@example.com. Tom's email is tom-private@example.com.",
		gh.LocalUser:   "Sara's email is sara-web@example.com",
	} {
		if _, err := mem.Remember(ctx, user, memory.Turn{SessionID: "s", Seq: 1, UserText: said}); err != nil {
			t.Fatal(err)
		}
	}
	contacts := personContacts(mem, map[string]string{"Tom": "tom@company.example"})
	if got := contacts(ctx, "telegram:u_a"); len(got) != 2 || got["Sara"] != "sara-a@example.com" || got["Tom"] != "tom@company.example" {
		t.Fatalf("alice's book %v", got)
	}
	if got := contacts(ctx, gh.LocalUser); len(got) != 2 || got["Sara"] != "sara-web@example.com" || got["Tom"] != "tom@company.example" {
		t.Fatalf("the operator's book %v", got)
	}
	if got := contacts(ctx, "telegram:u_b"); len(got) != 1 || got["Tom"] != "tom@company.example" {
		t.Fatalf("bob's book %v", got)
	}
}

// Two Telegram users and the web user each tell the agent who their Sara
// is; each one's "Email Sara" card names their own Sara, through the real
// binary and the Telegram fake.
func TestEveryPersonsCardShowsTheirOwnSara(t *testing.T) {
	tg := telegramtest.NewTelegram(t, telegramtest.TelegramOptions{})
	smtp := smtptest.Start(t)
	// The scripted model: the memory model pass gets an empty fact list,
	// "Email Sara" asks for email_send, anything else is noted. What is
	// remembered comes from the rule pass over each person's own words.
	script := filepath.Join(t.TempDir(), "script.json")
	if err := os.WriteFile(script, []byte(`[
		{"match": "Person:", "text": "{\"facts\":[]}"},
		{"match": "email sara", "toolCalls": [{"name": "email_send", "arguments": {"to": "Sara", "subject": "Report", "body": "The report is ready."}}]},
		{"match": "*", "text": "Noted."}
	]`), 0o600); err != nil {
		t.Fatal(err)
	}
	p := start(t, "GATEHOUSE_MODEL=scripted:demo", "GATEHOUSE_SCRIPT_FILE="+script,
		"GATEHOUSE_SMTP_URL="+smtp.URL(), "GATEHOUSE_EMAIL_FROM=agent@example.com",
		"TELEGRAM_BOT_TOKEN="+tg.Token, "TELEGRAM_API_URL="+tg.URL, "TELEGRAM_ALLOWED_USERS="+tg.UserID("alice")+","+tg.UserID("bob"))
	sara := map[string]string{"alice": "sara-a@example.com", "bob": "sara-b@example.com", "web": "sara-web@example.com"}
	web := func(text, requestID string) {
		t.Helper()
		raw, _ := json.Marshal(map[string]string{"text": text, "requestId": requestID})
		req, _ := http.NewRequest("POST", "http://"+p.addr+"/v1/sessions/w1/input", bytes.NewReader(raw))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Gatehouse-Source", "web")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != 202 {
			t.Fatalf("web input: %d", res.StatusCode)
		}
	}
	for _, who := range []string{"alice", "bob"} {
		tg.Say(who, who, "Sara's email is "+sara[who], false)
		waitUntil(t, who+"'s first answer", func() bool { return count(chatTexts(tg, who), "Noted.") == 1 })
	}
	web("Sara's email is "+sara["web"], "r1")
	waitUntil(t, "the web user's first answer", func() bool {
		for _, e := range sessionEvents(t, p.addr, "w1") {
			if e.Kind == gh.KindAssistantMessage && strings.Contains(string(e.Payload), "Noted.") {
				return true
			}
		}
		return false
	})
	// Memory is told after the turn settles: wait until the operator's
	// Sara is kept before asking for the mail.
	waitUntil(t, "the web user's Sara remembered", func() bool {
		res, err := http.Get("http://" + p.addr + "/v1/memory?user=local")
		if err != nil {
			return false
		}
		defer res.Body.Close()
		var out struct{ Facts []struct{ Value string } }
		json.NewDecoder(res.Body).Decode(&out)
		return len(out.Facts) == 1 && out.Facts[0].Value == sara["web"]
	})

	for _, who := range []string{"alice", "bob"} {
		tg.Say(who, who, "Email Sara that the report is ready.", false)
		var card string
		waitUntil(t, who+"'s card", func() bool {
			for _, m := range tg.Messages(who) {
				if len(m.Buttons) > 0 {
					card = m.Text
					return true
				}
			}
			return false
		})
		if !strings.Contains(card, "email_send") || !strings.Contains(card, sara[who]) {
			t.Fatalf("%s's card must send to their own Sara (%s): %q", who, sara[who], card)
		}
		for other, addr := range sara {
			if other != who && strings.Contains(card, addr) {
				t.Fatalf("%s's card shows %s's Sara: %q", who, other, card)
			}
		}
	}
	web("Email Sara that the report is ready.", "r2")
	g := gatesOfWait(t, p.addr, "w1")
	var args map[string]string
	if err := json.Unmarshal(g.Arguments, &args); err != nil || g.Tool != "email_send" || args["to"] != sara["web"] {
		t.Fatalf("the web user's card %s %s, want it to %s", g.Tool, g.Arguments, sara["web"])
	}
	if n := len(smtp.Mails()); n != 0 {
		t.Fatalf("%d mails sent before any approval", n)
	}
	p.stopWith(t, syscall.SIGTERM)
}

func gatesOfWait(t *testing.T, addr, session string) gh.Gate {
	t.Helper()
	var g []gh.Gate
	waitUntil(t, "a card in "+session, func() bool { g = gatesOf(t, addr, session, gh.GatePending); return len(g) == 1 })
	return g[0]
}
