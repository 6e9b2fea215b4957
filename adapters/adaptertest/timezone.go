package adaptertest

import (
	"strings"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/gateway/chat"
	"github.com/gatehouse/gatehouse/gateway/people"
	"github.com/gatehouse/gatehouse/models/modeltest"
	"github.com/gatehouse/gatehouse/store"
)

// /tz as people on the platform meet it: the command the platform offers
// (Telegram's bot command, Discord's and Slack's slash command) shows the
// sender's own zone, or that they have none; once one is set for them, a
// turn answering them is dated in it, and another member's turn is not.
func testTimeZoneInTheChat(t *testing.T, mk func(StackOptions) *env) {
	e := mk(StackOptions{Allowed: []string{"alice", "bob"}})
	// Discord registers its commands in the background after READY; a
	// client offers one only then.
	var shown Message
	var err error
	e.Eventually("/tz offered and answered", func() bool {
		shown, err = e.Fake.Command("room", "alice", chat.CommandTimeZone)
		return err == nil
	})
	if !strings.Contains(shown.Text, "no time zone of your own") {
		t.Fatalf("/tz before any was set: %+v %v", shown, err)
	}
	platform := e.Adapter.Platform()
	alice := e.Fake.UserID("alice")
	if err := e.Store.PutPersonZone(e.Ctx, store.PersonZone{UserKey: people.UserKey(platform, alice), Platform: platform, UserID: alice,
		UserName: "alice", Zone: "Pacific/Kiritimati", SetBy: "admin (web)", Set: time.Now()}); err != nil {
		t.Fatal(err)
	}
	shown, err = e.Fake.Command("room", "alice", chat.CommandTimeZone)
	if err != nil || !strings.Contains(shown.Text, "Your time zone is Pacific/Kiritimati") {
		t.Fatalf("/tz once set: %+v %v", shown, err)
	}
	if shown, err := e.Fake.Command("room", "bob", chat.CommandTimeZone); err != nil || !strings.Contains(shown.Text, "no time zone of your own") {
		t.Fatalf("bob's /tz: %+v %v", shown, err)
	}

	e.Model.SetDefault(modeltest.Reply{Text: "Dated."})
	for _, who := range []string{"alice", "bob"} {
		e.Fake.Say("room", who, "what day is it for "+who+"?", false)
		e.Eventually(who+"'s answer", func() bool { return e.countIn("room", "Dated.") == map[string]int{"alice": 1, "bob": 2}[who] })
	}
	// Each request is known by the message it answers, its last one.
	dated := map[string]bool{}
	for _, r := range e.Model.Requests() {
		msgs, _ := r.JSON()["messages"].([]any)
		if len(msgs) == 0 {
			continue
		}
		last, _ := msgs[len(msgs)-1].(map[string]any)["content"].(string)
		dated[last] = strings.Contains(string(r.Body), "(Pacific/Kiritimati)")
	}
	if k, ok := dated["what day is it for alice?"]; !ok || !k {
		t.Errorf("alice's turn is not dated in her zone (%v): %v", ok, e.Model.Requests())
	}
	if k, ok := dated["what day is it for bob?"]; !ok || k {
		t.Errorf("bob's turn is dated in alice's zone (%v)", ok)
	}
	e.noFakeErrors()
}
