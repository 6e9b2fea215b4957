package main

import (
	"encoding/json"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/adapters/adaptertest"
	"github.com/gatehouse/gatehouse/adapters/discord/discordtest"
	"github.com/gatehouse/gatehouse/adapters/slackchat/slacktest"
	"github.com/gatehouse/gatehouse/adapters/telegram/telegramtest"
	"github.com/gatehouse/gatehouse/gateway/chat"
	"github.com/gatehouse/gatehouse/internal/testing/smtptest"
)

// lookalike is one address of issue #26 that looks like sara@example.com
// and is not: what the card must show, and where the mail must go.
type lookalike struct {
	ask, to string
	// shown are lines the card carries (the To line, the warning line).
	shown []string
	// sent is the envelope recipient; the card shows it too.
	sent string
}

var lookalikes = []lookalike{
	{
		ask: "lookalike one", to: "s\u0430ra@example.com",
		shown: []string{
			"To: s\u0430ra@example.com",
			`⚠ Not plain ASCII: s` + "\u0430" + `ra@example.com: local part "s` + "\u0430" + `ra" has U+0430 (CYRILLIC SMALL LETTER A), mixed scripts (Latin, Cyrillic)`,
		},
		sent: "s\u0430ra@example.com",
	},
	{
		ask: "lookalike two", to: "sara@ex\u0430mple.com",
		shown: []string{
			"To: sara@ex\u0430mple.com",
			`⚠ Not plain ASCII: sara@ex` + "\u0430" + `mple.com is sent as sara@xn--exmple-4nf.com: domain label "ex` + "\u0430" + `mple" has U+0430 (CYRILLIC SMALL LETTER A), mixed scripts (Latin, Cyrillic)`,
		},
		sent: "sara@xn--exmple-4nf.com",
	},
	{
		ask: "lookalike three", to: "sara@example.com\u3002evil.test",
		shown: []string{
			"To: sara@example.com.evil.test",
			"⚠ Rewritten: written sara@example.com\u3002evil.test, with U+3002 (IDEOGRAPHIC FULL STOP); a mail server reads it as sara@example.com.evil.test, and that is where it is sent",
		},
		sent: "sara@example.com.evil.test",
	},
}

// discordEscape is a backslash before a Markdown character, as the
// Discord adapter writes it.
var discordEscape = regexp.MustCompile(`\\([^\p{L}\p{N}\s])`)

// Issue #26: an address that looks like sara@example.com and is not, on
// every chat platform through the real binary: the card shows the address
// as a mail server reads it with the warning line, in the platform's
// escaping, and once approved the SMTP server receives the mail addressed
// to exactly the address the card said it is sent to.
func TestLookalikeAddressesAreFlaggedOnEveryPlatformAndSentAsShown(t *testing.T) {
	tg := telegramtest.NewTelegram(t, telegramtest.TelegramOptions{})
	dc := discordtest.NewDiscord(t)
	sl := slacktest.NewSlack(t)
	smtp := smtptest.Start(t)

	// After a tool result the script answers with the step after the call;
	// the memory pass ("Person:") lands on a "Sent." as well.
	steps := []map[string]any{
		{"match": "Person:", "text": `{"facts":[]}`},
		{"text": "Sent."},
	}
	for _, l := range lookalikes {
		steps = append(steps,
			map[string]any{"match": l.ask, "toolCalls": []map[string]any{{"name": "email_send", "arguments": map[string]string{"to": l.to, "subject": "Report", "body": "Hi Sara."}}}},
			map[string]any{"text": "Sent."})
	}
	steps = append(steps, map[string]any{"match": "*", "text": "Noted."})
	raw, _ := json.Marshal(steps)
	script := filepath.Join(t.TempDir(), "script.json")
	if err := os.WriteFile(script, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	p := start(t, "GATEHOUSE_MODEL=scripted:demo", "GATEHOUSE_SCRIPT_FILE="+script,
		"GATEHOUSE_SMTP_URL="+smtp.URL(), "GATEHOUSE_EMAIL_FROM=agent@example.com",
		"TELEGRAM_BOT_TOKEN="+tg.Token, "TELEGRAM_API_URL="+tg.URL, "TELEGRAM_ALLOWED_USERS="+tg.UserID("alice"),
		"DISCORD_BOT_TOKEN="+dc.Token(), "DISCORD_API_URL="+dc.URL(), "DISCORD_ALLOWED_USERS="+dc.UserID("alice"),
		"SLACK_BOT_TOKEN="+sl.BotToken, "SLACK_APP_TOKEN="+sl.AppToken, "SLACK_API_URL="+sl.URL, "SLACK_ALLOWED_USERS="+sl.UserID("alice"))

	for _, c := range []struct {
		platform string
		fake     adaptertest.Fake
		// shown is what a person reads of a card: the text after the
		// platform's markup, each platform's escapes undone.
		shown func(card adaptertest.Message) string
	}{
		{"telegram", tg, func(m adaptertest.Message) string { return m.Text }},
		{"discord", dc, func(m adaptertest.Message) string { return discordEscape.ReplaceAllString(m.Text, "$1") }},
		{"slack", sl, func(m adaptertest.Message) string {
			for _, post := range sl.Posts("room") {
				if post.TS == m.ID {
					return html.UnescapeString(strings.Join(post.Sections, ""))
				}
			}
			return ""
		}},
	} {
		seen := map[string]bool{}
		answered := 0
		for _, l := range lookalikes {
			before := len(smtp.Mails())
			c.fake.Say("room", "alice", "Please email the report to Sara, "+l.ask+".", false)
			var card adaptertest.Message
			var approve string
			waitUntil(t, c.platform+": the card of "+l.to, func() bool {
				for _, m := range c.fake.Messages("room") {
					for _, b := range m.Buttons {
						if _, choice, ok := chat.ParseButtonData(b); ok && choice == chat.ChoiceApprove && !seen[m.ID] {
							card, approve = m, b
							return true
						}
					}
				}
				return false
			})
			seen[card.ID] = true
			text := c.shown(card)
			t.Logf("%s card:\n%s", c.platform, text)
			for _, want := range append(slices.Clone(l.shown), l.sent) {
				if !strings.Contains(text, want) {
					t.Fatalf("%s: the card of %q lacks %q:\n%s", c.platform, l.to, want, text)
				}
			}
			if len(smtp.Mails()) != before {
				t.Fatalf("%s: a mail before any approval", c.platform)
			}
			if _, err := c.fake.Press("room", card.ID, approve, "alice"); err != nil {
				t.Fatalf("%s: approve: %v", c.platform, err)
			}
			select {
			case m := <-smtp.Arrived:
				if !slices.Equal(m.To, []string{l.sent}) {
					t.Fatalf("%s: the mail went to %q; the card said %q", c.platform, m.To, l.sent)
				}
			case <-time.After(time.Minute):
				t.Fatalf("%s: no mail after approving the card of %q", c.platform, l.to)
			}
			// The turn's answer before the next ask: the script answers
			// a tool result with the step after the last one it chose,
			// whatever session chose it, so two turns in flight at once
			// would take each other's steps.
			answered++
			waitUntil(t, c.platform+": the answer after the mail to "+l.sent, func() bool {
				return count(fakeTexts(c.fake, "room"), "Sent.") >= answered
			})
		}
	}
	for name, f := range map[string]adaptertest.Fake{"telegram": tg, "discord": dc, "slack": sl} {
		if errs := f.Errors(); len(errs) > 0 {
			t.Fatalf("%s refused requests: %v", name, errs)
		}
	}
	if n := len(smtp.Mails()); n != 3*len(lookalikes) {
		t.Fatalf("%d mails, want one per card", n)
	}
	p.stopWith(t, syscall.SIGTERM)
}
