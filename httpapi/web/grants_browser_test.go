package web_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/internal/testing/stacktest"
	"github.com/gatehouse/gatehouse/store"
)

// The admin page's Grants: the active approvals for a chat, with who
// granted, the tool, what they cover, the session and until when, and
// Revoke, which ends the grant in the store.
func TestBrowserAdminGrants(t *testing.T) {
	s, url := startStack(t, nil, stacktest.EnvOptions{NoWorkers: true})
	ctx0 := context.Background()
	for _, id := range []string{"grant-chat-a", "grant-chat-b"} {
		if _, _, err := s.Kernel.CreateSession(ctx0, gh.Session{ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now()
	for _, g := range []store.Grant{
		{ID: "gr_sara", SessionID: "grant-chat-a", GateID: "g_sara", Tool: "email_send", Bound: "sara@example.com",
			Label: "the same recipients: <b>sara@example.com</b>", GrantedBy: "alice", Surface: "telegram", Created: now, ExpiresAt: now.Add(time.Hour)},
		{ID: "gr_tom", SessionID: "grant-chat-b", GateID: "g_tom", Tool: "email_send", Bound: "tom@example.com",
			Label: "the same recipients: tom@example.com", GrantedBy: gh.LocalUser, Surface: "web", Created: now, ExpiresAt: now.Add(time.Hour)},
	} {
		if _, created, err := s.Store.InsertGrant(ctx0, g); err != nil || !created {
			t.Fatalf("insert %s: %v %v", g.ID, created, err)
		}
	}
	active := func() map[string]bool {
		t.Helper()
		req, _ := http.NewRequest("GET", url+"/v1/grants?active=true", nil)
		res, err := http.DefaultClient.Do(s.Authorize(req))
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var body struct {
			Grants []struct {
				ID     string `json:"id"`
				Active bool   `json:"active"`
			} `json:"grants"`
		}
		if res.StatusCode != http.StatusOK {
			t.Fatalf("GET /v1/grants: %s", res.Status)
		}
		if err := json.NewDecoder(res.Body).Decode(&body); err != nil {
			t.Fatal(err)
		}
		out := map[string]bool{}
		for _, g := range body.Grants {
			out[g.ID] = g.Active
		}
		return out
	}
	if got := active(); !got["gr_sara"] || !got["gr_tom"] {
		t.Fatalf("before: %v", got)
	}

	rows := `Array.from(document.querySelectorAll('[data-testid="grants-row"]')).map(r => r.textContent)`
	bctx := browser(t)
	do(t, bctx, "open the admin page", chromedp.Navigate(url+"/admin"))
	until(t, bctx, "sara's grant with who, what and where", rows+`.some(r => r.includes("alice via telegram") && r.includes("email_send") &&
		r.includes("the same recipients: <b>sara@example.com</b>") && r.includes("grant-chat-a"))`)
	until(t, bctx, "tom's grant by the operator", rows+`.some(r => r.includes("the operator via web") && r.includes("grant-chat-b"))`)
	// The label is text, never markup.
	until(t, bctx, "no markup from the label", `document.querySelector('#grants b') === null`)
	screenshot(t, bctx, "admin-grants.png")

	ok, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`(() => {
		const row = Array.from(document.querySelectorAll('[data-testid="grants-row"]')).find(r => r.textContent.includes("grant-chat-a"));
		const b = row && row.querySelector('[data-testid="grants-revoke"]');
		if (b) b.click();
		return !!b;
	})()`))
	if err != nil || !ok {
		t.Fatalf("revoke sara's grant: %v %v", ok, err)
	}
	until(t, bctx, "sara's grant gone from the list", `!`+rows+`.some(r => r.includes("grant-chat-a"))`)
	until(t, bctx, "tom's grant still listed", rows+`.some(r => r.includes("grant-chat-b"))`)

	if got := active(); got["gr_sara"] || !got["gr_tom"] {
		t.Fatalf("after revoking on the page, active grants: %v", got)
	}
	g, err := s.Store.GetGrant(ctx0, "gr_sara")
	if err != nil || g.RevokedAt.IsZero() || g.RevokedBy != gh.LocalUser {
		t.Fatalf("sara's grant in the store: %+v %v", g, err)
	}
	events, err := s.Store.Events(ctx0, "grant-chat-a", 0, 100)
	revoked := false
	for _, e := range events {
		revoked = revoked || e.Kind == gh.KindGrantRevoked
	}
	if err != nil || !revoked {
		t.Fatalf("no grant.revoked in the session's log: %+v %v", events, err)
	}
}
