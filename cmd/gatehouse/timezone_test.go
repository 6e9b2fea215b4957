package main

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/adapters/telegram/telegramtest"
	"github.com/gatehouse/gatehouse/models/modeltest"
)

// Two people in one Telegram group, through the real binary: each sets
// their own zone with /tz (a name that is no zone is refused with why),
// and each one's turn is dated in their own zone in the model request's
// system prompt, not in GATEHOUSE_TIMEZONE's. Kiritimati (UTC+14) and
// Pago Pago (UTC-11) are 25 hours apart, so their calendar dates differ
// whatever the clock says.
func TestTelegramEachPersonsTurnIsDatedInTheirZone(t *testing.T) {
	tg := telegramtest.NewTelegram(t, telegramtest.TelegramOptions{})
	model := modeltest.NewOpenAI(t, "test-key")
	model.SetDefault(modeltest.Reply{Text: "Noted."})
	envs := append([]string{"GATEHOUSE_MODEL=openai:test-model", "OPENAI_API_KEY=test-key", "OPENAI_BASE_URL=" + model.BaseURL(),
		"GATEHOUSE_TIMEZONE=Europe/Berlin"}, groupEnvs(tg, "alice", "bob")...)
	p := start(t, envs...)

	answered := func(what, want string) {
		t.Helper()
		waitUntil(t, what, func() bool { return count(chatTexts(tg, "group-team"), want) == 1 })
	}
	tg.SayCommand("group-team", "bob", "/tz ../etc/localtime")
	answered("bob's refused /tz", "is not a time zone")
	tg.SayCommand("group-team", "alice", "/tz Pacific/Kiritimati")
	answered("alice's /tz", "now Pacific/Kiritimati")
	tg.SayCommand("group-team", "bob", "/tz Pacific/Pago_Pago")
	answered("bob's /tz", "now Pacific/Pago_Pago")
	tg.SayCommand("group-team", "bob", "/tz")
	answered("bob's /tz shown", "Your time zone is Pacific/Pago_Pago")
	if n := len(model.Requests()); n != 0 {
		t.Fatalf("/tz reached the model: %d requests", n)
	}

	// dated checks the system prompt of model request i: the date, at
	// the time the request arrived (or a minute before, should midnight
	// fall in between), and the name of zone.
	dated := func(i int, zone string) string {
		t.Helper()
		r := model.Requests()[i]
		prompt := r.JSON()["messages"].([]any)[0].(map[string]any)["content"].(string)
		loc, err := time.LoadLocation(zone)
		if err != nil {
			t.Fatal(err)
		}
		for _, at := range []time.Time{r.Time, r.Time.Add(-time.Minute)} {
			if day := at.In(loc).Format("Monday, 2 January 2006"); strings.Contains(prompt, "Today is "+day+";") && strings.Contains(prompt, "("+zone+")") {
				return day
			}
		}
		t.Fatalf("request %d's system prompt is not dated in %s: %q", i+1, zone, prompt)
		return ""
	}
	tg.Say("group-team", "alice", "What is today's date?", false)
	waitUntil(t, "alice's answer", func() bool { return count(chatTexts(tg, "group-team"), "Noted.") == 1 })
	tg.Say("group-team", "bob", "And for me?", false)
	waitUntil(t, "bob's answer", func() bool { return count(chatTexts(tg, "group-team"), "Noted.") == 2 })
	if n := len(model.Requests()); n != 2 {
		t.Fatalf("%d model requests, want one per message", n)
	}
	if a, b := dated(0, "Pacific/Kiritimati"), dated(1, "Pacific/Pago_Pago"); a == b {
		t.Fatalf("both turns dated %s", a)
	}
	p.stopWith(t, syscall.SIGTERM)
}
