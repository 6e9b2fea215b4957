package main

import (
	"encoding/json"
	"strings"
	"syscall"
	"testing"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/adapters/adaptertest"
	"github.com/gatehouse/gatehouse/adapters/discord/discordtest"
	"github.com/gatehouse/gatehouse/adapters/slackchat/slacktest"
	"github.com/gatehouse/gatehouse/adapters/telegram/telegramtest"
	"github.com/gatehouse/gatehouse/gateway/chat"
	"github.com/gatehouse/gatehouse/models/modeltest"
)

// A message typed while a card waits, with the real binary on each of the
// three platforms (#30): told at once which card waits (once, however
// often the platform delivers it), answered at once in a turn of its own
// while the card still waits — the model told of the card, the waiting
// run never claimed for it — and the decision then resumes the paused
// turn once, which goes on with its own work and does not answer the
// message again.
func TestMessageUnderACardIsAnsweredAtOnceOnEveryPlatform(t *testing.T) {
	tg := telegramtest.NewTelegram(t, telegramtest.TelegramOptions{})
	dc := discordtest.NewDiscord(t)
	sl := slacktest.NewSlack(t)
	s := newEmailStack(t, append(telegramEnvs(tg),
		"DISCORD_BOT_TOKEN="+dc.Token(), "DISCORD_API_URL="+dc.URL(), "DISCORD_ALLOWED_USERS="+dc.UserID("alice"),
		"SLACK_BOT_TOKEN="+sl.BotToken, "SLACK_APP_TOKEN="+sl.AppToken, "SLACK_API_URL="+sl.URL, "SLACK_ALLOWED_USERS="+sl.UserID("alice"))...)
	p := start(t, s.envs...)
	for round, c := range []struct {
		platform string
		fake     adaptertest.Fake
		chat     string
	}{{"telegram", tg, "alice"}, {"discord", dc, "room"}, {"slack", sl, "room"}} {
		if round > 0 {
			s.fake.Push(modeltest.Reply{ToolCalls: []modeltest.ToolCall{{ID: "call_email", Name: "email_send",
				Arguments: `{"to":"Sara","subject":"Report","body":"The report is ready."}`}}})
		}
		before := len(turnRequests(s.fake))
		first := c.fake.Say(c.chat, "alice", "Email Sara that the report is ready.", false)
		card := waitFakeCard(t, c.platform, c.fake, c.chat)
		pending := pendingGates(t, p.addr)
		if len(pending) != 1 {
			t.Fatalf("%s: %d pending cards, want 1", c.platform, len(pending))
		}
		g := pending[0]
		say := func(text string) string { return c.fake.Say(c.chat, "alice", text, false) }
		if c.platform == "slack" {
			// A thread is the conversation: the reply goes in it.
			thread := threadOf(t, p.addr, first)
			say = func(text string) string { return sl.SayInThread(c.chat, thread, "alice", text, false) }
		}
		upd := say("And what is the weather tomorrow?")
		texts := func() []string { return fakeTexts(c.fake, c.chat) }
		waitUntil(t, c.platform+": the notice and the message's own answer", func() bool {
			return count(texts(), "A card is waiting for a decision") == 1 && count(texts(), "Done.") == 1
		})
		notice := texts()[index(texts(), "A card is waiting for a decision")]
		for _, want := range []string{"email_send", "sara@example.com", "above in this chat", "is answered now, in a turn of its own"} {
			if !strings.Contains(notice, want) {
				t.Fatalf("%s: the notice %q does not say %q", c.platform, notice, want)
			}
		}
		if got := pendingGates(t, p.addr); len(got) != 1 || got[0].ID != g.ID {
			t.Fatalf("%s: the card was decided by the aside: %+v", c.platform, got)
		}
		reqs := turnRequests(s.fake)[before:]
		if len(reqs) != 2 || !strings.Contains(reqs[1], "weather") || !strings.Contains(reqs[1], "Waiting for a person's decision") ||
			!strings.Contains(reqs[1], "Not run yet") {
			t.Fatalf("%s: %d turn requests before the decision; the second must be the aside, told of the card:\n%s", c.platform, len(reqs), strings.Join(reqs, "\n"))
		}
		c.fake.Redeliver(upd)
		waitUntil(t, c.platform+": the redelivery logged as a duplicate", func() bool {
			return len(receiveRows(t, p.addr, "reason="+chat.ReasonDuplicate)) == round+1
		})
		time.Sleep(500 * time.Millisecond) // room for a second notice or answer, if one were coming
		if n, m := count(texts(), "A card is waiting for a decision"), count(texts(), "Done."); n != 1 || m != 1 {
			t.Fatalf("%s: %d notices and %d answers after a redelivery, want 1 each", c.platform, n, m)
		}
		// No empty run events: the waiting run started once.
		if n := runStarts(t, p.addr, g.SessionID, g.RunID); n != 1 {
			t.Fatalf("%s: the waiting run started %d times before its decision", c.platform, n)
		}

		if reply, err := c.fake.Press(c.chat, card.ID, button(t, card, chat.ChoiceApprove), "alice"); err != nil || !strings.Contains(reply, "Approved") {
			t.Fatalf("%s: approve: %q %v", c.platform, reply, err)
		}
		waitUntil(t, c.platform+": the paused turn's answer", func() bool { return count(texts(), "Done.") == 2 })
		reqs = turnRequests(s.fake)[before:]
		var cont struct {
			Messages []struct {
				Role string `json:"role"`
			} `json:"messages"`
		}
		if len(reqs) != 3 || json.Unmarshal([]byte(reqs[2]), &cont) != nil || len(cont.Messages) == 0 || cont.Messages[len(cont.Messages)-1].Role != "tool" {
			t.Fatalf("%s: %d turn requests; the third must go on from the tool result:\n%s", c.platform, len(reqs), strings.Join(reqs, "\n"))
		}
		if n := runStarts(t, p.addr, g.SessionID, g.RunID); n != 2 {
			t.Fatalf("%s: the waiting run started %d times, want 2 (its turn, its resume)", c.platform, n)
		}
		// Each input answered once: the message by the aside alone.
		var answers []gh.AssistantMessage
		for _, e := range sessionEvents(t, p.addr, g.SessionID) {
			var a gh.AssistantMessage
			if e.Kind == gh.KindAssistantMessage && json.Unmarshal(e.Payload, &a) == nil && a.StopReason == gh.StopEndTurn {
				answers = append(answers, a)
			}
		}
		if len(answers) != 2 || len(answers[0].InputSeqs) != 1 || answers[1].RunID != g.RunID || containsSeq(answers[1].InputSeqs, answers[0].InputSeqs[0]) {
			t.Fatalf("%s: answers %+v", c.platform, answers)
		}
		if n := len(s.smtp.Mails()); n != round+1 {
			t.Fatalf("%s: %d mails, want %d", c.platform, n, round+1)
		}
	}
	for name, f := range map[string]adaptertest.Fake{"telegram": tg, "discord": dc, "slack": sl} {
		if errs := f.Errors(); len(errs) > 0 {
			t.Fatalf("%s refused requests: %v", name, errs)
		}
	}
	p.stopWith(t, syscall.SIGTERM)
}

// waitFakeCard waits for an approval card in chat on any platform's fake.
func waitFakeCard(t *testing.T, platform string, fake adaptertest.Fake, chatName string) adaptertest.Message {
	t.Helper()
	var card adaptertest.Message
	waitUntil(t, "an approval card on "+platform, func() bool {
		for _, m := range fake.Messages(chatName) {
			for _, b := range m.Buttons {
				if _, choice, ok := chat.ParseButtonData(b); ok && choice == chat.ChoiceApprove {
					card = m
					return true
				}
			}
		}
		return false
	})
	return card
}

// fakeTexts are the bot's messages in chat, as they read now.
func fakeTexts(fake adaptertest.Fake, chatName string) []string {
	var out []string
	for _, m := range fake.Messages(chatName) {
		out = append(out, m.Text)
	}
	return out
}

// pendingGates are the pending cards of every session.
func pendingGates(t *testing.T, addr string) []gh.Gate {
	t.Helper()
	return gatesOf(t, addr, "", gh.GatePending)
}

// threadOf is the thread the update started, from the receive log.
func threadOf(t *testing.T, addr, update string) string {
	t.Helper()
	var thread string
	waitUntil(t, "the receive-log row of "+update, func() bool {
		for _, r := range receiveRows(t, addr, "platform=slack") {
			if r.UpdateID == update {
				thread = r.ThreadID
				return true
			}
		}
		return false
	})
	return thread
}

// runStarts counts the run.started of run in the session's log.
func runStarts(t *testing.T, addr, session string, run int64) int {
	n := 0
	for _, e := range sessionEvents(t, addr, session) {
		var r gh.RunStarted
		if e.Kind == gh.KindRunStarted && json.Unmarshal(e.Payload, &r) == nil && r.RunID == run {
			n++
		}
	}
	return n
}

func containsSeq(seqs []int64, v int64) bool {
	for _, s := range seqs {
		if s == v {
			return true
		}
	}
	return false
}
