package web_test

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/adapters/telegram/telegramtest"
	"github.com/gatehouse/gatehouse/gateway/chat"
	"github.com/gatehouse/gatehouse/gateway/people"
	"github.com/gatehouse/gatehouse/internal/testing/stacktest"
	"github.com/gatehouse/gatehouse/store"
)

// The admin page's People: the pending pairing codes with who asked and
// when, Approve on a row or by a typed code, the people let in with
// Revoke.
func TestBrowserAdminPeople(t *testing.T) {
	s, url := startStack(t, telegramtest.TelegramFactory, stacktest.EnvOptions{Pairing: true, Allowed: []string{}, NoStart: true, NoWorkers: true})
	ctx0 := context.Background()
	codeRE := regexp.MustCompile(`\b[A-HJKMNP-Z2-9]{8}\b`)
	codes := map[string]string{}
	for i, user := range []string{"5005", "6006"} {
		r, err := s.Gateway.Receive(ctx0, gh.Inbound{Platform: gh.PlatformTelegram, UpdateID: "4" + user, ChatID: user, ChatType: gh.ChatDM,
			UserID: user, UserName: []string{"ana", "ben"}[i], Text: "hello bot, I am " + user})
		if err != nil || r.Reason != chat.ReasonPairing {
			t.Fatalf("%s: %+v %v", user, r, err)
		}
		row, _, _ := s.Store.ReceiveByUpdate(ctx0, gh.PlatformTelegram, "4"+user)
		codes[user] = codeRE.FindString(row.Detail)
	}
	admin := people.NewAdmin(s.Store, nil)
	if _, _, err := admin.Allow(ctx0, gh.PlatformTelegram, "7007", "api"); err != nil {
		t.Fatal(err)
	}
	rows := func(table string) string {
		return `Array.from(document.querySelectorAll('[data-testid="` + table + `-row"]')).map(r => r.textContent)`
	}
	bctx := browser(t)
	click := func(what, table, text, button string) {
		t.Helper()
		ok, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`(() => {
			const row = Array.from(document.querySelectorAll('[data-testid="`+table+`-row"]')).find(r => r.textContent.includes("`+text+`"));
			const b = row && row.querySelector('[data-testid="`+button+`"]');
			if (b) b.click();
			return !!b;
		})()`))
		if err != nil || !ok {
			t.Fatalf("%s: %v %v", what, ok, err)
		}
	}
	do(t, bctx, "open the admin page", chromedp.Navigate(url+"/admin"))
	until(t, bctx, "both pending codes with who asked", rows("pending-codes")+`.filter(r => (r.includes("`+codes["5005"]+`") && r.includes("ana") && r.includes("hello bot, I am 5005")) || (r.includes("`+codes["6006"]+`") && r.includes("[6006]"))).length === 2`)
	until(t, bctx, "the person let in directly", rows("people")+`.some(r => r.includes("[7007]") && r.includes("let in directly"))`)
	until(t, bctx, "the code in the receive log", `Array.from(document.querySelectorAll('[data-testid="receive-row"]')).some(r => r.textContent.includes("pairing") && r.textContent.includes("`+codes["5005"]+`"))`)
	screenshot(t, bctx, "admin-people.png")

	click("approve ana's code on its row", "pending-codes", codes["5005"], "people-approve")
	until(t, bctx, "ana let in", rows("people")+`.some(r => r.includes("[5005]") && r.includes("`+codes["5005"]+`") && r.includes("admin (web)"))`)
	until(t, bctx, "ana's code no longer pending", `!`+rows("pending-codes")+`.some(r => r.includes("`+codes["5005"]+`"))`)

	// A code typed wrong says why; typed right (any case), it lets ben in.
	do(t, bctx, "type a wrong code", chromedp.SendKeys(css(`[data-testid="pair-code"]`), "QQQQ2222"), chromedp.Click(css(`[data-testid="pair-approve"]`)))
	until(t, bctx, "the refusal shown", `document.getElementById("status").textContent.includes("no pairing code")`)
	if _, err := chromedp.Run(bctx, chromedp.Evaluate[string](`document.querySelector('[data-testid="pair-code"]').value = ""`)); err != nil {
		t.Fatalf("clear the field: %v", err)
	}
	do(t, bctx, "type ben's code", chromedp.SendKeys(css(`[data-testid="pair-code"]`), strings.ToLower(codes["6006"])), chromedp.Click(css(`[data-testid="pair-approve"]`)))
	until(t, bctx, "ben let in", rows("people")+`.some(r => r.includes("[6006]"))`)
	until(t, bctx, "nothing pending", rows("pending-codes")+`.every(r => r.includes("nothing here"))`)

	click("revoke ana", "people", "[5005]", "people-revoke")
	until(t, bctx, "ana gone from the list", `!`+rows("people")+`.some(r => r.includes("[5005]"))`)
	if _, ok, _ := s.Store.GetPerson(ctx0, gh.PlatformTelegram, "5005"); ok {
		t.Fatal("revoked on the page, yet ana is in")
	}
	for _, u := range []string{"6006", "7007"} {
		if _, ok, _ := s.Store.GetPerson(ctx0, gh.PlatformTelegram, u); !ok {
			t.Fatalf("%s should be in", u)
		}
	}
	// Ana's next message is a stranger's again; ben's is handed on.
	for user, want := range map[string]string{"5005": chat.ReasonPairing, "6006": ""} {
		r, err := s.Gateway.Receive(ctx0, gh.Inbound{Platform: gh.PlatformTelegram, UpdateID: "5" + user, ChatID: user, ChatType: gh.ChatDM,
			UserID: user, Text: "me again"})
		if err != nil || r.Reason != want {
			t.Fatalf("%s after the page: %+v %v", user, r, err)
		}
	}
	if rows, _ := s.Store.ListReceive(ctx0, store.ReceiveFilter{Outcome: chat.ReceiveHandedOn, Limit: 10}); len(rows) != 1 {
		t.Fatalf("handed on: %+v", rows)
	}
}

// The admin page's time zones under People: the zone a person set with
// /tz in the chat, with who set it; Change fills the form and Set zone
// stores the new one (in its right case) for the next turn; a name that is
// no zone is refused with why and the zone kept; Clear brings back the
// gateway's.
func TestBrowserAdminTimeZones(t *testing.T) {
	s, url := startStack(t, telegramtest.TelegramFactory, stacktest.EnvOptions{Allowed: []string{"alice"}, NoWorkers: true})
	ctx0 := context.Background()
	alice := s.Fake.UserID("alice")
	key := people.UserKey(gh.PlatformTelegram, alice)
	reply, err := s.Gateway.Command(ctx0, chat.CommandTimeZone, gh.Inbound{Platform: gh.PlatformTelegram, UpdateID: "tz1", ChatID: alice,
		ChatType: gh.ChatDM, UserID: alice, UserName: "alice", Text: "Pacific/Kiritimati"})
	if err != nil || !strings.Contains(reply.Text, "now Pacific/Kiritimati") {
		t.Fatalf("alice's /tz: %+v %v", reply, err)
	}
	zone := func() string {
		z, _, err := s.Store.GetPersonZone(ctx0, key)
		if err != nil {
			t.Fatal(err)
		}
		return z.Zone
	}
	rows := `Array.from(document.querySelectorAll('[data-testid="zones-row"]')).map(r => r.textContent)`
	bctx := browser(t)
	do(t, bctx, "open the admin page", chromedp.Navigate(url+"/admin"))
	until(t, bctx, "alice's zone, set by her", rows+`.some(r => r.includes("[`+alice+`]") && r.includes("Pacific/Kiritimati") && r.includes("alice (telegram)"))`)
	screenshot(t, bctx, "admin-zones.png")

	ok, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`(() => {
		const row = Array.from(document.querySelectorAll('[data-testid="zones-row"]')).find(r => r.textContent.includes("[`+alice+`]"));
		const b = row && row.querySelector('[data-testid="zone-change"]');
		if (b) b.click();
		return !!b;
	})()`))
	if err != nil || !ok {
		t.Fatalf("press Change: %v %v", ok, err)
	}
	until(t, bctx, "the form filled with alice", `document.querySelector('[data-testid="zone-user"]').value === "`+alice+`" && document.querySelector('[data-testid="zone-platform"]').value === "telegram"`)
	setName := func(name string) {
		t.Helper()
		if _, err := chromedp.Run(bctx, chromedp.Evaluate[string](`document.querySelector('[data-testid="zone-name"]').value = ""`)); err != nil {
			t.Fatal(err)
		}
		do(t, bctx, "type "+name, chromedp.SendKeys(css(`[data-testid="zone-name"]`), name), chromedp.Click(css(`[data-testid="zone-set"]`)))
	}
	setName("Mars/Olympus_Mons")
	until(t, bctx, "the refusal shown", `document.getElementById("status").textContent.includes("not a time zone")`)
	if z := zone(); z != "Pacific/Kiritimati" {
		t.Fatalf("a refused name changed the zone to %q", z)
	}
	setName("pacific/pago_pago")
	until(t, bctx, "the new zone, set by the admin", rows+`.some(r => r.includes("[`+alice+`]") && r.includes("Pacific/Pago_Pago") && r.includes("admin (web)"))`)
	if z := zone(); z != "Pacific/Pago_Pago" {
		t.Fatalf("after Set zone the store holds %q", z)
	}

	ok, err = chromedp.Run(bctx, chromedp.Evaluate[bool](`(() => {
		const row = Array.from(document.querySelectorAll('[data-testid="zones-row"]')).find(r => r.textContent.includes("[`+alice+`]"));
		const b = row && row.querySelector('[data-testid="zone-clear"]');
		if (b) b.click();
		return !!b;
	})()`))
	if err != nil || !ok {
		t.Fatalf("press Clear: %v %v", ok, err)
	}
	until(t, bctx, "alice's zone gone", `!`+rows+`.some(r => r.includes("[`+alice+`]"))`)
	if z := zone(); z != "" {
		t.Fatalf("cleared on the page, yet the store holds %q", z)
	}
}
