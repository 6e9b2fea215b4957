package supervisor_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/kernel"
	"github.com/gatehouse/gatehouse/models/modeltest"
	"github.com/gatehouse/gatehouse/store"
	"github.com/gatehouse/gatehouse/supervisor"
	"github.com/gatehouse/gatehouse/tools"
)

// The base prompt's date and time are in the zone of the person the turn
// answers (the first of several), read from the store at the turn (a zone
// changed meanwhile holds for the next turn), and in the gateway's for a
// person with none. At 10:30 UTC on 30 November 2026 it is Sunday 29th in
// Pago Pago, Monday 30th in Berlin (the gateway's) and Tuesday 1st in
// Kiritimati.
func TestPromptDateFollowsThePersonsZone(t *testing.T) {
	berlin, _ := time.LoadLocation("Europe/Berlin")
	page := outsideTool{text: "the page", started: make(chan struct{}, 1), release: make(chan struct{})}
	e := setup(t, opts{zones: true, tools: []tools.Tool{page},
		sup: supervisor.Config{Location: berlin, Now: func() time.Time { return time.Date(2026, 11, 30, 10, 30, 0, 0, time.UTC) }}})
	setZone := func(user, zone string) {
		t.Helper()
		if err := e.st.PutPersonZone(e.ctx, store.PersonZone{UserKey: "telegram:" + user, Platform: "telegram", UserID: user, Zone: zone, Set: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	setZone("u_pago", "Pacific/Pago_Pago")
	setZone("u_kiri", "Pacific/Kiritimati")
	if _, _, err := e.k.CreateSession(e.ctx, gh.Session{ID: "g1"}); err != nil {
		t.Fatal(err)
	}
	say := func(user, text string) {
		t.Helper()
		p, _ := json.Marshal(gh.UserMessage{Text: text, Delivery: gh.DeliveryQueue, Source: "telegram", User: user})
		if _, err := e.k.EdgeCommit(e.ctx, kernel.EdgeInput{SessionID: "g1", Event: gh.NewEvent{Kind: gh.KindUserMessage, Payload: p}}); err != nil {
			t.Fatal(err)
		}
	}
	prompt := func(i int) string {
		t.Helper()
		reqs := e.fake.Requests()
		if len(reqs) <= i {
			t.Fatalf("%d model requests, want request %d", len(reqs), i+1)
		}
		return reqs[i].JSON()["messages"].([]any)[0].(map[string]any)["content"].(string)
	}
	dated := func(i int, day, zone string) {
		t.Helper()
		if p := prompt(i); !strings.Contains(p, "Today is "+day+";") || !strings.Contains(p, "("+zone+")") {
			t.Fatalf("request %d's base prompt must date it %s in %s: %q", i+1, day, zone, p)
		}
	}

	// Pago's turn reads a page; Kiri and someone with no zone write
	// meanwhile, and the next turn answers them both.
	e.fake.Push(toolReply("fetch_page", `{}`), modeltest.Reply{Text: "Read."}, modeltest.Reply{Text: "Both answered."})
	say("u_pago", "Read the page.")
	<-page.started
	say("u_kiri", "Good morning.")
	say("u_none", "And to me.")
	close(page.release)
	e.waitFor("both turns", func() bool { return len(assistants(t, e.events("g1"))) == 3 })
	if as := assistants(t, e.events("g1")); len(as[2].InputSeqs) != 2 {
		t.Fatalf("the second turn should answer both messages: %+v", as[2])
	}
	dated(0, "Sunday, 29 November 2026", "Pacific/Pago_Pago")
	dated(1, "Sunday, 29 November 2026", "Pacific/Pago_Pago")
	dated(2, "Tuesday, 1 December 2026", "Pacific/Kiritimati")

	// Kiri moves: the next turn reads the new zone.
	setZone("u_kiri", "Pacific/Pago_Pago")
	e.fake.Push(modeltest.Reply{Text: "Moved."}, modeltest.Reply{Text: "Yours."})
	say("u_kiri", "I moved.")
	e.waitFor("the third turn", func() bool { return len(assistants(t, e.events("g1"))) == 4 })
	dated(3, "Sunday, 29 November 2026", "Pacific/Pago_Pago")
	// Someone with no zone of their own: the gateway's.
	say("u_none", "What day is it?")
	e.waitFor("the fourth turn", func() bool { return len(assistants(t, e.events("g1"))) == 5 })
	dated(4, "Monday, 30 November 2026", "Europe/Berlin")
}
