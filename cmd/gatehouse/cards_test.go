package main

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"unicode/utf8"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/adapters/adaptertest"
	"github.com/gatehouse/gatehouse/adapters/discord/discordtest"
	"github.com/gatehouse/gatehouse/adapters/slackchat/slacktest"
	"github.com/gatehouse/gatehouse/adapters/telegram/telegramtest"
	"github.com/gatehouse/gatehouse/internal/testing/smtptest"
)

// The card is the effect, through the real binary and the three platform
// fakes: a recipient padded so that a 300-character clip would show only
// "sara@example.com" shows the attacker's address on every card; markup
// and a bidi override in the subject are shown as written; a long body is
// clipped to fit each platform, marked, with the link to the whole card.
func TestCardsShowTheRecipientTheSendUsesOnEveryPlatform(t *testing.T) {
	tg := telegramtest.NewTelegram(t, telegramtest.TelegramOptions{})
	dc := discordtest.NewDiscord(t)
	sl := slacktest.NewSlack(t)
	smtp := smtptest.Start(t)

	padded := `"sara@example.com` + strings.Repeat(" ", 290) + `" <evil@attacker.example>`
	subject := "Q3 <b>report</b> **final** <@U123> \u202Etxt.exe"
	body := strings.Repeat("The quarterly numbers are attached; nothing here is markup: *a* _b_ <i>c</i>.\n", 80) // 6,400 characters
	args, _ := json.Marshal(map[string]string{"to": padded, "subject": subject, "body": body})
	script := filepath.Join(t.TempDir(), "script.json")
	if err := os.WriteFile(script, []byte(`[
		{"match": "Person:", "text": "{\"facts\":[]}"},
		{"match": "email the report", "toolCalls": [{"name": "email_send", "arguments": `+string(args)+`}]},
		{"match": "*", "text": "Noted."}
	]`), 0o600); err != nil {
		t.Fatal(err)
	}
	p := start(t, "GATEHOUSE_MODEL=scripted:demo", "GATEHOUSE_SCRIPT_FILE="+script,
		"GATEHOUSE_SMTP_URL="+smtp.URL(), "GATEHOUSE_EMAIL_FROM=agent@example.com",
		"GATEHOUSE_PUBLIC_URL=https://gatehouse.example.com/",
		"TELEGRAM_BOT_TOKEN="+tg.Token, "TELEGRAM_API_URL="+tg.URL, "TELEGRAM_ALLOWED_USERS="+tg.UserID("alice"),
		"DISCORD_BOT_TOKEN="+dc.Token(), "DISCORD_API_URL="+dc.URL(), "DISCORD_ALLOWED_USERS="+dc.UserID("alice"),
		"SLACK_BOT_TOKEN="+sl.BotToken, "SLACK_APP_TOKEN="+sl.AppToken, "SLACK_API_URL="+sl.URL, "SLACK_ALLOWED_USERS="+sl.UserID("alice"))

	// shown is what a person sees of the card on each platform: Telegram's
	// text after its HTML is parsed, Discord's content, Slack's sections.
	for _, c := range []struct {
		platform string
		fake     adaptertest.Fake
		max      int
		shown    func(card adaptertest.Message) string
	}{
		{"telegram", tg, 4096, func(m adaptertest.Message) string { return m.Text }},
		{"discord", dc, 2000, func(m adaptertest.Message) string { return m.Text }},
		{"slack", sl, 3000 * 50, func(m adaptertest.Message) string {
			for _, post := range sl.Posts("room") {
				if post.TS == m.ID {
					return strings.Join(post.Sections, "")
				}
			}
			return ""
		}},
	} {
		c.fake.Say("room", "alice", "Please email the report to Sara.", false)
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("%s: messages %+v, refused %v", c.platform, c.fake.Messages("room"), c.fake.Errors())
			}
		})
		card := waitFakeCard(t, c.platform, c.fake, "room")
		text := c.shown(card)
		t.Logf("%s card:\n%s", c.platform, text)
		if n := utf8.RuneCountInString(text); n > c.max || n == 0 {
			t.Fatalf("%s: a card of %d characters", c.platform, n)
		}
		for _, want := range []string{
			// The address the mail goes to, first, whole; the name apart.
			"To: evil@attacker.example (display name \"sara@example.com" + strings.Repeat(" ", 290) + "\")",
			"the mail goes to evil@attacker.example",
			// The long body is cut to fit, marked, with where to read it.
			"│ The quarterly numbers are attached",
			"more characters not shown",
			"✂ Clipped to fit this chat. The whole card: https://gatehouse.example.com/admin#card=g_",
		} {
			if !strings.Contains(text, want) {
				t.Fatalf("%s: the card lacks %q:\n%s", c.platform, want, text)
			}
		}
		// The subject whole, its markup and bidi override shown as written,
		// in each platform's escaping.
		subjectShown := map[string]string{
			"telegram": `Subject: Q3 <b>report</b> **final** <@U123> \u202Etxt.exe`,
			"discord":  `Subject: Q3 \<b>report\</b> \*\*final\*\* \<@U123> \\u202Etxt.exe`,
			"slack":    `Subject: Q3 &lt;b&gt;report&lt;/b&gt; **final** &lt;@U123&gt; \u202Etxt.exe`,
		}[c.platform]
		if !strings.Contains(text, subjectShown) || strings.Contains(text, "\u202E") {
			t.Fatalf("%s: the subject must show as written (%s):\n%s", c.platform, subjectShown, text)
		}
	}
	for name, f := range map[string]adaptertest.Fake{"telegram": tg, "discord": dc, "slack": sl} {
		if errs := f.Errors(); len(errs) > 0 {
			t.Fatalf("%s refused requests: %v", name, errs)
		}
	}
	if n := len(smtp.Mails()); n != 0 {
		t.Fatalf("%d mails before any approval", n)
	}
	// The link's card is the API's: every field whole, as committed.
	res, err := http.Get("http://" + p.addr + "/v1/gates?state=pending")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out struct {
		Gates []struct {
			ID     string
			Fields []gh.CardField
		}
	}
	json.NewDecoder(res.Body).Decode(&out)
	if len(out.Gates) != 3 {
		t.Fatalf("%d pending gates, want one per platform", len(out.Gates))
	}
	for _, g := range out.Gates {
		if len(g.Fields) != 3 || g.Fields[0].Value != `evil@attacker.example (display name "sara@example.com`+strings.Repeat(" ", 290)+`") ⚠ the display name looks like an address; the mail goes to evil@attacker.example` ||
			g.Fields[1].Value != subject || g.Fields[2].Value != body || !g.Fields[2].FreeText {
			t.Fatalf("gate %s fields %+v", g.ID, g.Fields)
		}
	}
	p.stopWith(t, syscall.SIGTERM)
}
