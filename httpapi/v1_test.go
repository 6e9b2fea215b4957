package httpapi_test

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/httpapi"
	"github.com/gatehouse/gatehouse/kernel"
)

func TestInputCommits(t *testing.T) {
	run(t, httpapi.Config{}, func(t *testing.T, e *env) {
		got := e.input("s1", map[string]any{"text": "hello", "selection": "openai:gpt", "attachments": []gh.Attachment{{Name: "a.txt", Text: "x"}}})
		if got.Seq != 1 || got.RunID == 0 || got.Duplicate {
			t.Fatalf("input = %+v, want seq 1, a run, not a duplicate", got)
		}
		web := e.input("s1", map[string]any{"text": "from the page"}, "X-Gatehouse-Source", "web")
		if web.Seq != 2 {
			t.Fatalf("second input seq %d, want 2", web.Seq)
		}
		evs := e.events("s1", "").Events
		if len(evs) != 2 {
			t.Fatalf("%d events, want 2", len(evs))
		}
		m := userMessage(t, evs[0])
		if m.Text != "hello" || m.Delivery != gh.DeliveryQueue || m.RequestedDelivery != "" || m.Source != "api" ||
			m.Selection != "openai:gpt" || len(m.Attachments) != 1 || m.Attachments[0].Name != "a.txt" {
			t.Fatalf("committed %+v", m)
		}
		if m := userMessage(t, evs[1]); m.Source != "web" {
			t.Fatalf("source %q, want web", m.Source)
		}
		run, ok, err := e.k.LatestRun(context.Background(), "s1")
		if err != nil || !ok || run.ID != got.RunID || run.State != gh.RunQueued {
			t.Fatalf("latest run %+v %v %v, want queued run %d", run, ok, err, got.RunID)
		}
	})
}

func TestInputRequestIDIsIdempotent(t *testing.T) {
	run(t, httpapi.Config{}, func(t *testing.T, e *env) {
		body := map[string]any{"text": "pay the invoice", "requestId": "r-1"}
		first := e.input("s1", body)
		again := e.input("s1", body)
		if again.Seq != first.Seq || !again.Duplicate || first.Duplicate {
			t.Fatalf("first %+v, repeat %+v: want the same seq, the repeat a duplicate", first, again)
		}
		if evs := e.events("s1", "").Events; len(evs) != 1 {
			t.Fatalf("%d events after a repeat, want 1", len(evs))
		}
		r := e.do("POST", "/v1/sessions/s1/input", map[string]any{"text": "pay another", "requestId": "r-1"})
		r.expect(t, http.StatusConflict, gh.CodeIdempotencyConflict)
		if evs := e.events("s1", "").Events; len(evs) != 1 {
			t.Fatalf("%d events after a conflict, want 1", len(evs))
		}
		// The same requestId in another session is another request.
		if other := e.input("s2", body); other.Duplicate || other.Seq != 1 {
			t.Fatalf("other session: %+v", other)
		}
	})
}

func TestInputRejects(t *testing.T) {
	run(t, httpapi.Config{MaxBodyBytes: 1024}, func(t *testing.T, e *env) {
		cases := []struct {
			name, body string
			status     int
			code       gh.Code
			mention    string
		}{
			{"malformed", `{"text": "hi"`, 400, gh.CodeInvalid, "malformed"},
			{"not json", `hello`, 400, gh.CodeInvalid, "malformed"},
			{"empty body", ``, 400, gh.CodeInvalid, "empty"},
			{"array", `["hi"]`, 400, gh.CodeInvalid, "object"},
			{"two objects", `{"text":"a"} {"text":"b"}`, 400, gh.CodeInvalid, "one JSON object"},
			{"unknown field", `{"text": "hi", "colour": "red"}`, 400, gh.CodeInvalid, `"colour"`},
			{"wrong type", `{"text": 5}`, 400, gh.CodeInvalid, `"text"`},
			{"empty text", `{"text": ""}`, 400, gh.CodeInvalid, "text"},
			{"blank text", `{"text": " \n\t "}`, 400, gh.CodeInvalid, "text"},
			{"long requestId", `{"text": "hi", "requestId": "` + strings.Repeat("r", 201) + `"}`, 400, gh.CodeInvalid, "requestId"},
			{"bad delivery", `{"text": "hi", "delivery": "now"}`, 400, gh.CodeInvalid, "delivery"},
			{"too large", `{"text": "` + strings.Repeat("a", 2000) + `"}`, 413, gh.CodePayloadTooLarge, "1024"},
		}
		for _, c := range cases {
			r := e.do("POST", "/v1/sessions/s1/input", c.body).expect(t, c.status, c.code)
			if msg := r.message(t); !strings.Contains(msg, c.mention) {
				t.Errorf("%s: message %q does not mention %q", c.name, msg, c.mention)
			}
		}
		// Nothing was committed, and no session was created.
		e.do("GET", "/v1/sessions/s1", nil).expect(t, http.StatusNotFound, gh.CodeUnknownSession)
		// A bad session id is refused by the kernel's rule.
		e.do("POST", "/v1/sessions/"+strings.Repeat("x", 300)+"/input", `{"text":"hi"}`).expect(t, http.StatusBadRequest, gh.CodeInvalid)
	})
}

func TestAuth(t *testing.T) {
	const token = "s3cret-token"
	run(t, httpapi.Config{APIToken: token}, func(t *testing.T, e *env) {
		e.token = ""
		body := map[string]any{"text": "hi"}
		r := e.do("POST", "/v1/sessions/s1/input", body).expect(t, http.StatusUnauthorized, gh.CodeUnauthorized)
		if r.header.Get("WWW-Authenticate") == "" {
			t.Error("401 without WWW-Authenticate")
		}
		e.do("POST", "/v1/sessions/s1/input", body, "Authorization", "Bearer wrong").expect(t, http.StatusUnauthorized, gh.CodeUnauthorized)
		e.do("POST", "/v1/sessions/s1/input", body, "Authorization", "Bearer "+token+"x").expect(t, http.StatusUnauthorized, gh.CodeUnauthorized)
		e.do("POST", "/v1/sessions/s1/input", body, "Authorization", "Basic "+token).expect(t, http.StatusUnauthorized, gh.CodeUnauthorized)
		e.do("GET", "/v1/sessions/s1/events?access_token=wrong", nil).expect(t, http.StatusUnauthorized, gh.CodeUnauthorized)
		e.do("GET", "/v1/sessions", nil).expect(t, http.StatusUnauthorized, gh.CodeUnauthorized)
		// Nothing got through.
		if _, err := e.k.Session(context.Background(), "s1"); !gh.IsCode(err, gh.CodeUnknownSession) {
			t.Fatalf("session after refused requests: %v", err)
		}

		e.do("POST", "/v1/sessions/s1/input", body, "Authorization", "Bearer "+token).expect(t, http.StatusAccepted, "")
		e.do("POST", "/v1/sessions/s1/input", body, "Authorization", "bearer "+token).expect(t, http.StatusAccepted, "")
		var evs eventsReply
		e.do("GET", "/v1/sessions/s1/events", nil, "Authorization", "Bearer "+token).expect(t, http.StatusOK, "").decode(t, &evs)
		if len(evs.Events) != 2 {
			t.Fatalf("%d events, want 2", len(evs.Events))
		}
		// The query token is for EventSource only: anywhere but the stream,
		// even the right token there is refused, with a message saying
		// where the token goes, and nothing is committed.
		for _, rq := range []struct{ method, path string }{
			{"GET", "/v1/sessions/s1/events?access_token=" + token},
			{"GET", "/v1/sessions?access_token=" + token},
			{"POST", "/v1/sessions/s1/input?access_token=" + token},
			{"POST", "/v1/sessions?access_token=" + token},
		} {
			r := e.do(rq.method, rq.path, body).expect(t, http.StatusUnauthorized, gh.CodeUnauthorized)
			if msg := r.message(t); !strings.Contains(msg, "Authorization") || !strings.Contains(msg, "stream") {
				t.Errorf("%s %s: message %q does not say to use the header", rq.method, rq.path, msg)
			}
		}
		e.do("GET", "/v1/sessions/s1/events", nil, "Authorization", "Bearer "+token).expect(t, http.StatusOK, "").decode(t, &evs)
		if len(evs.Events) != 2 {
			t.Fatalf("%d events after refused query tokens, want 2", len(evs.Events))
		}
		// Probes stay open.
		e.do("GET", "/healthz", nil).expect(t, http.StatusOK, "")
	})
}

func TestSessions(t *testing.T) {
	run(t, httpapi.Config{}, func(t *testing.T, e *env) {
		var created struct {
			Session gh.Session `json:"session"`
		}
		e.do("POST", "/v1/sessions", map[string]any{"id": "alpha", "title": "First"}).expect(t, http.StatusCreated, "").decode(t, &created)
		if created.Session.ID != "alpha" || created.Session.Title != "First" || created.Session.Tenant != gh.DefaultTenant {
			t.Fatalf("created %+v", created.Session)
		}
		e.do("POST", "/v1/sessions", map[string]any{"id": "alpha", "title": "Other"}).expect(t, http.StatusOK, "").decode(t, &created)
		if created.Session.Title != "First" {
			t.Fatalf("existing session's title changed to %q", created.Session.Title)
		}
		e.do("POST", "/v1/sessions", nil).expect(t, http.StatusCreated, "").decode(t, &created)
		if !regexp.MustCompile(`^[A-Za-z0-9_-]{16,}$`).MatchString(created.Session.ID) {
			t.Fatalf("generated id %q is not URL-safe", created.Session.ID)
		}
		generated := created.Session.ID
		e.do("POST", "/v1/sessions", `{"name": "x"}`).expect(t, http.StatusBadRequest, gh.CodeInvalid)
		e.do("POST", "/v1/sessions", `{"id": "has space"}`).expect(t, http.StatusBadRequest, gh.CodeInvalid)

		// Input to alpha makes it the most recently active.
		e.input("alpha", map[string]any{"text": "hi"})
		var list struct {
			Sessions []gh.Session `json:"sessions"`
		}
		e.do("GET", "/v1/sessions", nil).expect(t, http.StatusOK, "").decode(t, &list)
		if len(list.Sessions) != 2 || list.Sessions[0].ID != "alpha" || list.Sessions[1].ID != generated {
			t.Fatalf("list %+v, want alpha then %s", list.Sessions, generated)
		}
		e.do("GET", "/v1/sessions?limit=1", nil).expect(t, http.StatusOK, "").decode(t, &list)
		if len(list.Sessions) != 1 {
			t.Fatalf("limit 1 gave %d sessions", len(list.Sessions))
		}
		e.do("GET", "/v1/sessions?limit=0", nil).expect(t, http.StatusBadRequest, gh.CodeInvalid)
		e.do("GET", "/v1/sessions?limit=x", nil).expect(t, http.StatusBadRequest, gh.CodeInvalid)

		var got struct {
			Session gh.Session `json:"session"`
			Run     *gh.Run    `json:"run"`
		}
		e.do("GET", "/v1/sessions/"+generated, nil).expect(t, http.StatusOK, "").decode(t, &got)
		if got.Session.ID != generated || got.Run != nil {
			t.Fatalf("get %+v, want no run", got)
		}
		e.do("GET", "/v1/sessions/alpha", nil).expect(t, http.StatusOK, "").decode(t, &got)
		if got.Run == nil || got.Run.State != gh.RunQueued || got.Session.LastSeq != 1 {
			t.Fatalf("get alpha %+v, run %+v", got.Session, got.Run)
		}
		e.do("GET", "/v1/sessions/nope", nil).expect(t, http.StatusNotFound, gh.CodeUnknownSession)
	})
}

func TestTenantIsolation(t *testing.T) {
	run(t, httpapi.Config{Tenant: "acme"}, func(t *testing.T, e *env) {
		// A session of another tenant does not exist for this server.
		commit(t, e.k, "theirs", "private")
		e.do("GET", "/v1/sessions/theirs", nil).expect(t, http.StatusNotFound, gh.CodeUnknownSession)
		e.do("GET", "/v1/sessions/theirs/events", nil).expect(t, http.StatusNotFound, gh.CodeUnknownSession)
		e.do("POST", "/v1/sessions/theirs/input", map[string]any{"text": "x"}).expect(t, http.StatusNotFound, gh.CodeUnknownSession)
		e.do("POST", "/v1/sessions/theirs/cancel", nil).expect(t, http.StatusNotFound, gh.CodeUnknownSession)
		e.input("mine", map[string]any{"text": "hi"})
		var list struct {
			Sessions []gh.Session `json:"sessions"`
		}
		e.do("GET", "/v1/sessions", nil).expect(t, http.StatusOK, "").decode(t, &list)
		if len(list.Sessions) != 1 || list.Sessions[0].ID != "mine" || list.Sessions[0].Tenant != "acme" {
			t.Fatalf("list %+v", list.Sessions)
		}
	})
}

func TestEvents(t *testing.T) {
	run(t, httpapi.Config{}, func(t *testing.T, e *env) {
		e.do("GET", "/v1/sessions/nope/events", nil).expect(t, http.StatusNotFound, gh.CodeUnknownSession)
		for i := range 5 {
			e.input("s1", map[string]any{"text": "m" + itoa(int64(i+1))})
		}
		var seqs []int64
		after := int64(0)
		for {
			page := e.events("s1", "?after="+itoa(after)+"&limit=2")
			if page.LastSeq != 5 {
				t.Fatalf("lastSeq %d, want 5", page.LastSeq)
			}
			if len(page.Events) == 0 {
				break
			}
			if len(page.Events) > 2 {
				t.Fatalf("page of %d events with limit 2", len(page.Events))
			}
			for _, ev := range page.Events {
				seqs = append(seqs, ev.Seq)
				if ev.SessionID != "s1" || userMessage(t, ev).Text != "m"+itoa(ev.Seq) {
					t.Fatalf("event %+v", ev)
				}
			}
			after = page.Events[len(page.Events)-1].Seq
		}
		if want := []int64{1, 2, 3, 4, 5}; !equal(seqs, want) {
			t.Fatalf("paged seqs %v, want %v", seqs, want)
		}
		if evs := e.events("s1", "?after=3").Events; len(evs) != 2 || evs[0].Seq != 4 {
			t.Fatalf("after 3: %+v", evs)
		}
		for _, q := range []string{"?after=-1", "?after=x", "?limit=0", "?limit=1001", "?limit=two"} {
			e.do("GET", "/v1/sessions/s1/events"+q, nil).expect(t, http.StatusBadRequest, gh.CodeInvalid)
		}
	})
}

func equal(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestGuide(t *testing.T) {
	run(t, httpapi.Config{}, func(t *testing.T, e *env) {
		ctx := context.Background()
		// No run at all: the guide waits as a queued input, and says so.
		guide := map[string]any{"text": "also check the spam folder", "delivery": "guide", "requestId": "g1"}
		first := e.input("s1", guide)
		m := userMessage(t, e.events("s1", "").Events[0])
		if m.Delivery != gh.DeliveryQueue || m.RequestedDelivery != gh.DeliveryGuide {
			t.Fatalf("guide without a running run committed as %q (requested %q), want queue (requested guide)", m.Delivery, m.RequestedDelivery)
		}
		// A queued run is not running either.
		e.input("s1", map[string]any{"text": "second", "delivery": "guide"})
		if m := userMessage(t, e.events("s1", "?after=1").Events[0]); m.Delivery != gh.DeliveryQueue || m.RequestedDelivery != gh.DeliveryGuide {
			t.Fatalf("guide with a queued run committed as %+v", m)
		}

		// A running run: the guide joins it.
		lease, ok, err := e.k.Claim(ctx, "worker-1")
		if err != nil || !ok {
			t.Fatalf("claim: %v %v", ok, err)
		}
		got := e.input("s1", map[string]any{"text": "third", "delivery": "guide"})
		// After the claim's run.started (seq 3).
		if m := userMessage(t, e.events("s1", "?after=3").Events[0]); m.Delivery != gh.DeliveryGuide || m.RequestedDelivery != "" {
			t.Fatalf("guide with a running run committed as %+v", m)
		}
		if got.Seq != 4 {
			t.Fatalf("seq %d", got.Seq)
		}
		// A retry of the first guide, now that a run is running, is still
		// the same request.
		again := e.input("s1", guide)
		if again.Seq != first.Seq || !again.Duplicate {
			t.Fatalf("retried guide %+v, want duplicate of seq %d", again, first.Seq)
		}
		// And a retry of a guide that joined, once the run ended.
		joined := map[string]any{"text": "fourth", "delivery": "guide", "requestId": "g4"}
		g4 := e.input("s1", joined)
		if _, err := e.k.Finish(ctx, lease, kernel.Settle{Outcome: gh.OutcomeDone}); err != nil {
			t.Fatal(err)
		}
		if again := e.input("s1", joined); again.Seq != g4.Seq || !again.Duplicate {
			t.Fatalf("retried joined guide %+v, want duplicate of seq %d", again, g4.Seq)
		}
		// But a changed body is still a conflict.
		joined["text"] = "fifth"
		e.do("POST", "/v1/sessions/s1/input", joined).expect(t, http.StatusConflict, gh.CodeIdempotencyConflict)
	})
}

func TestCancel(t *testing.T) {
	run(t, httpapi.Config{}, func(t *testing.T, e *env) {
		e.do("POST", "/v1/sessions/nope/cancel", nil).expect(t, http.StatusNotFound, gh.CodeUnknownSession)
		in := e.input("s1", map[string]any{"text": "hi"})
		var out struct {
			Run gh.Run `json:"run"`
		}
		e.do("POST", "/v1/sessions/s1/cancel", map[string]any{"reason": "changed my mind"}).expect(t, http.StatusOK, "").decode(t, &out)
		if out.Run.ID != in.RunID || out.Run.State != gh.RunCancelled || out.Run.Reason != "changed my mind" {
			t.Fatalf("cancel answered %+v", out.Run)
		}
		stored, err := e.k.Run(context.Background(), in.RunID)
		if err != nil || stored.State != gh.RunCancelled {
			t.Fatalf("stored run %+v %v", stored, err)
		}
		e.do("POST", "/v1/sessions/s1/cancel", nil).expect(t, http.StatusConflict, gh.CodeConflict)
		e.do("POST", "/v1/sessions/s1/cancel", `{"why": 1}`).expect(t, http.StatusBadRequest, gh.CodeInvalid)

		// A running run is flagged; its worker settles it.
		e.input("s1", map[string]any{"text": "again"})
		if _, ok, err := e.k.Claim(context.Background(), "worker-1"); err != nil || !ok {
			t.Fatalf("claim: %v %v", ok, err)
		}
		e.do("POST", "/v1/sessions/s1/cancel", nil).expect(t, http.StatusOK, "").decode(t, &out)
		if out.Run.State != gh.RunRunning || !out.Run.CancelRequested {
			t.Fatalf("cancel of a running run answered %+v", out.Run)
		}
	})
}

func TestRoutes(t *testing.T) {
	web := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte("web:" + r.URL.Path))
	})
	run(t, httpapi.Config{Web: web}, func(t *testing.T, e *env) {
		r := e.do("DELETE", "/v1/sessions/s1", nil).expect(t, http.StatusMethodNotAllowed, gh.CodeInvalid)
		if r.header.Get("Allow") != "GET, HEAD" {
			t.Errorf("Allow %q", r.header.Get("Allow"))
		}
		e.do("PUT", "/v1/sessions", nil).expect(t, http.StatusMethodNotAllowed, gh.CodeInvalid)
		e.do("GET", "/v1/sessions/s1/input", nil).expect(t, http.StatusMethodNotAllowed, gh.CodeInvalid)
		e.do("GET", "/v1/nothing", nil).expect(t, http.StatusNotFound, gh.CodeNotFound)
		e.do("GET", "/elsewhere", nil).expect(t, http.StatusNotFound, gh.CodeNotFound)
		if r := e.do("GET", "/", nil).expect(t, http.StatusOK, ""); string(r.body) != "web:/" {
			t.Errorf("GET / = %q", r.body)
		}
		if r := e.do("GET", "/assets/app.js", nil).expect(t, http.StatusOK, ""); string(r.body) != "web:/assets/app.js" {
			t.Errorf("GET /assets/app.js = %q", r.body)
		}
	})
}

func TestInfoSaysHowToConfigureAModel(t *testing.T) {
	run(t, httpapi.Config{ModelHint: "set GATEHOUSE_MODEL"}, func(t *testing.T, e *env) {
		var info struct {
			Model           string `json:"model"`
			ModelConfigured bool   `json:"modelConfigured"`
			Hint            string `json:"hint"`
		}
		e.do("GET", "/v1/info", nil).expect(t, 200, "").decode(t, &info)
		if info.ModelConfigured || info.Hint != "set GATEHOUSE_MODEL" {
			t.Fatalf("info without a model: %+v", info)
		}
	})
	run(t, httpapi.Config{Model: "openai:gpt-4.1-mini", ModelHint: "x"}, func(t *testing.T, e *env) {
		var info map[string]any
		e.do("GET", "/v1/info", nil).expect(t, 200, "").decode(t, &info)
		if info["modelConfigured"] != true || info["model"] != "openai:gpt-4.1-mini" || info["hint"] != nil {
			t.Fatalf("info with a model: %+v", info)
		}
	})
}

// The login link trades the token for a session cookie, and a write
// carried by that cookie must come from this origin: a page elsewhere
// cannot drive the API through the user's browser. Nothing refused is
// committed.
func TestLoginCookieAndOrigin(t *testing.T) {
	run(t, httpapi.Config{}, func(t *testing.T, e *env) {
		token := e.token
		e.token = ""
		noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		res, err := noFollow.Get(e.ts.URL + "/login?token=" + token + "&next=/admin")
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/admin" || len(res.Cookies()) != 1 {
			t.Fatalf("login: %d %q %v", res.StatusCode, res.Header.Get("Location"), res.Cookies())
		}
		c := res.Cookies()[0]
		if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/" || strings.Contains(c.Value, token) {
			t.Fatalf("session cookie %+v", c)
		}
		for _, next := range []string{"//evil.example/", "https://evil.example/", "/\\evil.example"} {
			res, err := noFollow.Get(e.ts.URL + "/login?token=" + token + "&next=" + next)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.Header.Get("Location") != "/" {
				t.Errorf("next=%s redirected to %q, want /", next, res.Header.Get("Location"))
			}
		}
		if res, err := noFollow.Get(e.ts.URL + "/login?token=wrong"); err != nil || res.StatusCode != 401 || len(res.Cookies()) != 0 {
			t.Fatalf("login with a wrong token: %v %v", res, err)
		}
		cookie := c.Name + "=" + c.Value
		body := map[string]string{"text": "hi"}
		e.do("POST", "/v1/sessions/s1/input", body, "Cookie", cookie, "Origin", "https://evil.example").expect(t, 401, gh.CodeUnauthorized)
		e.do("POST", "/v1/sessions/s1/input", body, "Cookie", cookie, "Sec-Fetch-Site", "cross-site").expect(t, 401, gh.CodeUnauthorized)
		e.do("POST", "/v1/sessions/s1/input", body, "Cookie", c.Name+"=forged").expect(t, 401, gh.CodeUnauthorized)
		e.do("GET", "/v1/sessions/s1", nil, "Cookie", cookie).expect(t, 404, gh.CodeUnknownSession) // the refused inputs created nothing
		e.do("POST", "/v1/sessions/s1/input", body, "Cookie", cookie, "Origin", e.ts.URL, "Sec-Fetch-Site", "same-origin").expect(t, 202, "")
		e.do("GET", "/v1/sessions", nil, "Cookie", cookie).expect(t, 200, "")
		// A wrong bearer token is wrong even with a good cookie.
		e.do("GET", "/v1/sessions", nil, "Cookie", cookie, "Authorization", "Bearer nope").expect(t, 401, gh.CodeUnauthorized)
	})
}

func TestUsage(t *testing.T) {
	run(t, httpapi.Config{}, func(t *testing.T, e *env) {
		e.k.RecordCall(context.Background(), gh.LedgerRow{SessionID: "s1", UserKey: "local", Provider: "openai", Model: "m", CostUSD: 0.25, InputTokens: 7})
		var out struct {
			Usage []gh.UsageRow `json:"usage"`
		}
		e.do("GET", "/v1/usage?by=model", nil).expect(t, 200, "").decode(t, &out)
		if len(out.Usage) != 1 || out.Usage[0].Key != "openai:m" || out.Usage[0].CostUSD != 0.25 || out.Usage[0].InputTokens != 7 {
			t.Fatalf("usage %+v", out.Usage)
		}
		e.do("GET", "/v1/usage?by=planet", nil).expect(t, 400, gh.CodeInvalid)
		e.do("GET", "/v1/usage?since=yesterday", nil).expect(t, 400, gh.CodeInvalid)
	})
}
