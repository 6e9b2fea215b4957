package httpapi_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/gateway/people"
	"github.com/gatehouse/gatehouse/httpapi"
	"github.com/gatehouse/gatehouse/store"
	"github.com/gatehouse/gatehouse/store/storetest"
)

type personReply struct {
	Person  store.Person `json:"person"`
	Created bool         `json:"created"`
}

// /v1/people: list, approve a code, let in directly, revoke; each refusal
// with its code, behind the token.
func TestPeopleEndpoints(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			st, peer := b.open(t)
			clock := storetest.NewClock()
			e := newEnv(t, st, peer, httpapi.Config{APIToken: "tok", People: people.NewAdmin(st, clock.Now)})
			now := clock.Now()
			for _, c := range []store.PairingCode{
				{Code: "ABCD2345", Platform: "telegram", UserID: "111", UserName: "bob", Text: "hi", Created: now, ExpiresAt: now.Add(time.Hour)},
				{Code: "WXYZ6789", Platform: "telegram", UserID: "222", Created: now.Add(-2 * time.Hour), ExpiresAt: now.Add(-time.Hour)},
			} {
				if _, err := st.InsertPairingCode(ctx, c); err != nil {
					t.Fatal(err)
				}
			}
			e.do("GET", "/v1/people", nil, "Authorization", "Bearer wrong").expect(t, 401, gh.CodeUnauthorized)
			var list people.List
			e.do("GET", "/v1/people", nil).expect(t, 200, "").decode(t, &list)
			if len(list.Pending) != 1 || list.Pending[0].Code != "ABCD2345" || list.Pending[0].UserName != "bob" || list.People == nil || len(list.People) != 0 {
				t.Fatalf("list: %+v", list)
			}

			// Refusals, each with its code.
			e.do("POST", "/v1/people", `{"code": "ABCD2345"`).expect(t, 400, gh.CodeInvalid)
			e.do("POST", "/v1/people", `{"cod": "ABCD2345"}`).expect(t, 400, gh.CodeInvalid)
			e.do("POST", "/v1/people", `{}`).expect(t, 400, gh.CodeInvalid)
			e.do("POST", "/v1/people", map[string]string{"code": "ABCD2345", "platform": "telegram", "user": "9"}).expect(t, 400, gh.CodeInvalid)
			e.do("POST", "/v1/people", map[string]string{"code": "QQQQ2222"}).expect(t, 404, gh.CodeUnknownPairingCode)
			e.do("POST", "/v1/people", map[string]string{"code": "WXYZ6789"}).expect(t, 410, gh.CodePairingCodeExpired)
			e.do("POST", "/v1/people", map[string]string{"platform": "icq", "user": "9"}).expect(t, 400, gh.CodeInvalid)
			e.do("POST", "/v1/people", map[string]string{"platform": "telegram"}).expect(t, 400, gh.CodeInvalid)

			// Approve a code, as the admin page does.
			var r personReply
			e.do("POST", "/v1/people", map[string]string{"code": "abcd-2345", "by": "ana"}, "X-Gatehouse-Source", "web").expect(t, 200, "").decode(t, &r)
			if r.Person.Platform != "telegram" || r.Person.UserID != "111" || r.Person.Code != "ABCD2345" || r.Person.ApprovedBy != "ana (web)" {
				t.Fatalf("approved: %+v", r)
			}
			e.do("POST", "/v1/people", map[string]string{"code": "ABCD2345"}).expect(t, 409, gh.CodeConflict)
			// Let in directly: created, then in already.
			r = personReply{}
			e.do("POST", "/v1/people", map[string]string{"platform": "telegram", "user": "333"}).expect(t, 201, "").decode(t, &r)
			if !r.Created || r.Person.UserID != "333" || r.Person.ApprovedBy != "api" || r.Person.Code != "" {
				t.Fatalf("let in directly: %+v", r)
			}
			e.do("POST", "/v1/people", map[string]string{"platform": "telegram", "user": "333"}).expect(t, 200, "").decode(t, &r)
			if r.Created {
				t.Fatalf("let in twice: %+v", r)
			}
			e.do("GET", "/v1/people", nil).expect(t, 200, "").decode(t, &list)
			if len(list.Pending) != 0 || len(list.People) != 2 {
				t.Fatalf("list after: %+v", list)
			}

			// Revoke, on another replica's view too.
			e.do("DELETE", "/v1/people/telegram/111", nil, "Authorization", "").expect(t, 401, gh.CodeUnauthorized)
			e.do("DELETE", "/v1/people/telegram/111", nil).expect(t, 200, "")
			e.do("DELETE", "/v1/people/telegram/111", nil).expect(t, 404, gh.CodeNotFound)
			e.do("PUT", "/v1/people", nil).expect(t, 405, gh.CodeInvalid)
			if _, ok, _ := peer().GetPerson(ctx, "telegram", "111"); ok {
				t.Fatal("revoked, yet in on another replica")
			}
			if _, ok, _ := peer().GetPerson(ctx, "telegram", "333"); !ok {
				t.Fatal("the other person went too")
			}
		})
	}
}

func TestPeopleWithoutAKeeper(t *testing.T) {
	st := openSQLite(t)
	e := newEnv(t, st, nil, httpapi.Config{})
	e.do("GET", "/v1/people", nil).expect(t, http.StatusServiceUnavailable, gh.CodeUnavailable)
	e.do("POST", "/v1/people", map[string]string{"code": "ABCD2345"}).expect(t, http.StatusServiceUnavailable, gh.CodeUnavailable)
}

// PUT and DELETE /v1/people/{platform}/{user}/zone, as the admin page
// edits a zone under People: set (in its right case) for anyone, let in
// or not, listed with who set it, read on another replica, refused with
// why for a name that is no zone, cleared once; a person let in keeps
// their zone apart from being let in.
func TestPeopleZoneEndpoints(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			st, peer := b.open(t)
			clock := storetest.NewClock()
			e := newEnv(t, st, peer, httpapi.Config{APIToken: "tok", People: people.NewAdmin(st, clock.Now)})
			if _, _, err := people.NewAdmin(st, clock.Now).Allow(ctx, "telegram", "111", "api"); err != nil {
				t.Fatal(err)
			}
			e.do("PUT", "/v1/people/telegram/111/zone", map[string]string{"timeZone": "Europe/Berlin"}, "Authorization", "").expect(t, 401, gh.CodeUnauthorized)
			var set struct {
				Zone store.PersonZone `json:"zone"`
			}
			e.do("PUT", "/v1/people/telegram/111/zone", map[string]string{"timeZone": "pacific/pago_pago", "by": "ana"}, "X-Gatehouse-Source", "web").
				expect(t, 200, "").decode(t, &set)
			if set.Zone.Zone != "Pacific/Pago_Pago" || set.Zone.SetBy != "ana (web)" || set.Zone.UserKey != people.UserKey("telegram", "111") {
				t.Fatalf("set: %+v", set)
			}
			// Someone on an allow-list has no row among the people let in:
			// their zone is set all the same.
			e.do("PUT", "/v1/people/slack/U2/zone", map[string]string{"timeZone": "Pacific/Kiritimati"}).expect(t, 200, "")
			for _, bad := range []string{"Mars/Base", "../../etc/passwd", "Local", ""} {
				e.do("PUT", "/v1/people/telegram/111/zone", map[string]string{"timeZone": bad}).expect(t, 400, gh.CodeInvalid)
			}
			e.do("PUT", "/v1/people/icq/111/zone", map[string]string{"timeZone": "UTC"}).expect(t, 400, gh.CodeInvalid)
			if z, ok, _ := peer().GetPersonZone(ctx, people.UserKey("telegram", "111")); !ok || z.Zone != "Pacific/Pago_Pago" {
				t.Fatalf("on another replica, after the refusals: %+v %v", z, ok)
			}
			var list people.List
			e.do("GET", "/v1/people", nil).expect(t, 200, "").decode(t, &list)
			if len(list.Zones) != 2 || len(list.People) != 1 {
				t.Fatalf("list: %+v", list)
			}
			e.do("DELETE", "/v1/people/telegram/111/zone", nil).expect(t, 200, "")
			e.do("DELETE", "/v1/people/telegram/111/zone", nil).expect(t, 404, gh.CodeNotFound)
			if _, ok, _ := peer().GetPersonZone(ctx, people.UserKey("telegram", "111")); ok {
				t.Fatal("cleared, yet set on another replica")
			}
			if _, ok, _ := st.GetPerson(ctx, "telegram", "111"); !ok {
				t.Fatal("clearing the zone let the person out")
			}
		})
	}
}
