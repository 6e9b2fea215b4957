package gateway_test

import (
	"strings"
	"testing"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/adapters/telegram/telegramtest"
	"github.com/gatehouse/gatehouse/gateway/chat"
	"github.com/gatehouse/gatehouse/gateway/people"
	"github.com/gatehouse/gatehouse/internal/testing/stacktest"
)

// /tz at the gateway: shown, set for the sender alone (not the chat, not
// another member), a name that is no zone (or a path) refused with why
// and the zone kept, a redelivery answered once, a stranger refused,
// "default" clearing it; each in the receive log.
func TestTimeZoneCommand(t *testing.T) {
	e, fake := telegramEnv(t, telegramtest.TelegramOptions{}, stacktest.EnvOptions{Allowed: []string{"alice", "bob"}})
	n := 0
	tz := func(user, args string) (chat.CommandReply, gh.Inbound) {
		t.Helper()
		n++
		in := gh.Inbound{Platform: gh.PlatformTelegram, UpdateID: "tz" + string(rune('a'+n)), ChatID: fake.ChatID("team"), ChatType: gh.ChatGroup,
			UserID: e.Fake.UserID(user), UserName: user, MessageID: "9", Text: args}
		reply, err := e.Gateway.Command(e.Ctx, chat.CommandTimeZone, in)
		if err != nil {
			t.Fatalf("/tz %s by %s: %v", args, user, err)
		}
		return reply, in
	}
	zoneOf := func(user string) (string, bool) {
		z, ok, err := e.Store.GetPersonZone(e.Ctx, people.UserKey(gh.PlatformTelegram, e.Fake.UserID(user)))
		if err != nil {
			t.Fatal(err)
		}
		return z.Zone, ok
	}

	if r, _ := tz("alice", ""); r.Refused || !strings.Contains(r.Text, "no time zone of your own") || !strings.Contains(r.Text, "the gateway's") {
		t.Fatalf("/tz before any was set: %+v", r)
	}
	r, in := tz("alice", "Europe/Berlin")
	if r.Refused || !strings.Contains(r.Text, "now Europe/Berlin") {
		t.Fatalf("/tz Europe/Berlin: %+v", r)
	}
	if z, ok := zoneOf("alice"); !ok || z != "Europe/Berlin" {
		t.Fatalf("alice's zone after /tz Europe/Berlin: %q %v", z, ok)
	}
	if row := e.Receive(in.UpdateID); row.Reason != chat.ReasonCommand || !strings.Contains(row.Detail, "set Europe/Berlin") {
		t.Fatalf("/tz in the receive log: %+v", row)
	}
	if again, err := e.Gateway.Command(e.Ctx, chat.CommandTimeZone, in); err != nil || !again.Duplicate {
		t.Fatalf("a redelivered /tz must not be answered twice: %+v %v", again, err)
	}
	if r, _ := tz("alice", ""); !strings.Contains(r.Text, "Your time zone is Europe/Berlin") || !strings.Contains(r.Text, "set by alice (telegram)") {
		t.Fatalf("/tz once set: %+v", r)
	}
	// bob, in the same chat, has none of his own.
	if _, ok := zoneOf("bob"); ok {
		t.Fatal("alice's /tz set bob's zone")
	}
	if r, _ := tz("bob", ""); !strings.Contains(r.Text, "no time zone of your own") {
		t.Fatalf("bob's /tz: %+v", r)
	}

	// Names that are no zone: refused, answered (so the person sees why),
	// and the zone kept.
	for _, bad := range []string{"Mars/Olympus_Mons", "../etc/passwd", "/usr/share/zoneinfo/UTC", "Local", "+02:00", "Europe/Berlin; rm -rf"} {
		r, in := tz("alice", bad)
		if r.Refused || r.Duplicate || !strings.Contains(r.Text, "not a time zone") || !strings.Contains(r.Text, "unchanged") {
			t.Fatalf("/tz %s: %+v", bad, r)
		}
		if row := e.Receive(in.UpdateID); !strings.Contains(row.Detail, "refused") {
			t.Fatalf("/tz %s in the receive log: %+v", bad, row)
		}
		if z, _ := zoneOf("alice"); z != "Europe/Berlin" {
			t.Fatalf("/tz %s changed the zone to %q", bad, z)
		}
	}
	// The wrong case is taken in the right one; Discord's option form too.
	if r, _ := tz("bob", "america/new_york"); !strings.Contains(r.Text, "now America/New_York") {
		t.Fatalf("/tz america/new_york: %+v", r)
	}
	if r, _ := tz("bob", "zone:Asia/Tokyo"); !strings.Contains(r.Text, "now Asia/Tokyo") {
		t.Fatalf("/tz zone:Asia/Tokyo: %+v", r)
	}
	if z, _ := zoneOf("bob"); z != "Asia/Tokyo" {
		t.Fatalf("bob's zone: %q", z)
	}

	// A stranger sets nothing.
	stranger := gh.Inbound{Platform: gh.PlatformTelegram, UpdateID: "tz-stranger", ChatID: fake.ChatID("team"), ChatType: gh.ChatGroup,
		UserID: "424242", UserName: "mallory", Text: "Europe/Paris"}
	if r, err := e.Gateway.Command(e.Ctx, chat.CommandTimeZone, stranger); err != nil || !r.Refused {
		t.Fatalf("a stranger's /tz: %+v %v", r, err)
	}
	if _, ok, _ := e.Store.GetPersonZone(e.Ctx, people.UserKey(gh.PlatformTelegram, "424242")); ok {
		t.Fatal("a stranger's /tz set a zone")
	}

	// "default" goes back to the gateway's.
	if r, _ := tz("alice", "default"); !strings.Contains(r.Text, "the gateway's time zone") {
		t.Fatalf("/tz default: %+v", r)
	}
	if _, ok := zoneOf("alice"); ok {
		t.Fatal("/tz default kept the zone")
	}
	if r, _ := tz("alice", ""); !strings.Contains(r.Text, "no time zone of your own") {
		t.Fatalf("/tz after default: %+v", r)
	}
	in.UpdateID = "tz-unknown"
	if unknown, err := e.Gateway.Command(e.Ctx, "frobnicate", in); err != nil || !strings.Contains(unknown.Text, "/tz") {
		t.Fatalf("the unknown command's answer must name /tz: %+v %v", unknown, err)
	}
}
