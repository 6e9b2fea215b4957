package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	gh "github.com/gatehouse/gatehouse"
	// The binary registers every platform by importing its adapter; so
	// does this test, so the prefixes refused are the real table's.
	_ "github.com/gatehouse/gatehouse/adapters/discord"
	_ "github.com/gatehouse/gatehouse/adapters/slackchat"
	_ "github.com/gatehouse/gatehouse/adapters/telegram"
	"github.com/gatehouse/gatehouse/gateway/chat"
	"github.com/gatehouse/gatehouse/httpapi"
	"github.com/gatehouse/gatehouse/kernel"
	"github.com/gatehouse/gatehouse/store"
)

// platformCommit commits text to session the way the gateway does for its
// chat: the session and the input in the caller's transaction
// (EdgeCommitTx, the platform path).
func platformCommit(t *testing.T, k *kernel.Kernel, session, text string) {
	t.Helper()
	ctx := context.Background()
	payload, _ := json.Marshal(gh.UserMessage{Text: text, Delivery: gh.DeliveryQueue, Source: "telegram"})
	err := k.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
		if _, _, err := tx.CreateSession(ctx, gh.Session{ID: session, Tenant: gh.DefaultTenant, Created: time.Now()}); err != nil {
			return err
		}
		_, err := k.EdgeCommitTx(ctx, tx, kernel.EdgeInput{SessionID: session, Event: gh.NewEvent{Kind: gh.KindUserMessage, Payload: payload}})
		return err
	})
	if err != nil {
		t.Fatalf("platform commit to %s: %v", session, err)
	}
}

// A chat platform's session (every prefix of the platform table, and the
// fallback px_) is written by its chat only: input, retry and creating it
// through /v1 are 403 external-session and commit nothing — no event, no
// session, no run — even when its last turn failed and a retry would
// otherwise run. Reading it (the session, its events, its stream) still
// works.
func TestPlatformSessionRefusedOnAPI(t *testing.T) {
	run(t, httpapi.Config{}, func(t *testing.T, e *env) {
		ctx := context.Background()
		for _, platform := range []string{gh.PlatformTelegram, gh.PlatformDiscord, gh.PlatformSlack, "elsewhere"} {
			id := chat.SessionFor(platform, "42", "")
			if _, ok := gh.PlatformSession(id); !ok {
				t.Fatalf("%s: %s is not a platform session", platform, id)
			}
			platformCommit(t, e.k, id, "hello from the chat")
			l, ok, err := e.k.Claim(ctx, "w1")
			if err != nil || !ok || l.SessionID != id {
				t.Fatalf("%s: claim %+v %v %v", platform, l, ok, err)
			}
			if _, err := e.k.Finish(ctx, l, kernel.Settle{Outcome: gh.OutcomeFailed, Reason: "the model failed", NoRetry: true}); err != nil {
				t.Fatal(err)
			}
			before, err := e.k.Events(ctx, id, 0, 100)
			if err != nil {
				t.Fatal(err)
			}

			for _, r := range []reply{
				e.do("POST", "/v1/sessions/"+id+"/input", map[string]string{"text": "from the API", "requestId": "q1"}),
				e.do("POST", "/v1/sessions/"+id+"/input", map[string]string{"text": "guide it", "delivery": "guide"}),
				e.do("POST", "/v1/sessions/"+id+"/retry", map[string]string{"requestId": "r1"}),
				e.do("POST", "/v1/sessions/"+id+"/retry", nil),
				e.do("POST", "/v1/sessions", map[string]string{"id": id, "title": "mine now"}),
			} {
				r.expect(t, http.StatusForbidden, gh.CodeExternalSession)
				if r.message(t) == "" {
					t.Errorf("%s: external-session without a message", platform)
				}
			}

			after, err := e.k.Events(ctx, id, 0, 100)
			if err != nil {
				t.Fatal(err)
			}
			if len(after) != len(before) {
				t.Fatalf("%s: %d events after the refusals, want %d: %+v", platform, len(after), len(before), after[len(before):])
			}
			run, ok, err := e.k.LatestRun(ctx, id)
			if err != nil || !ok || run.ID != l.RunID || run.State != gh.RunFailed {
				t.Fatalf("%s: latest run %+v %v %v, want run %d still failed (none queued)", platform, run, ok, err, l.RunID)
			}
			if l, ok, err := e.k.Claim(ctx, "w2"); err != nil || ok {
				t.Fatalf("%s: a run was queued: %+v %v", platform, l, err)
			}

			// Reads stay allowed.
			var got sessionRunReply
			e.do("GET", "/v1/sessions/"+id, nil).expect(t, http.StatusOK, "").decode(t, &got)
			if got.Session.ID != id || got.Session.Title != "" {
				t.Fatalf("%s: session %+v", platform, got.Session)
			}
			if evs := e.events(id, "").Events; len(evs) != len(before) || userMessage(t, evs[0]).Text != "hello from the chat" {
				t.Fatalf("%s: events %+v", platform, evs)
			}
			s := openStream(t, e.ts.Client(), e.streamURL(id, ""))
			if ev := s.committed(); ev.Seq != 1 || ev.SessionID != id {
				t.Fatalf("%s: streamed %+v", platform, ev)
			}
			s.close()

			// A platform session nobody has spoken in yet is not made.
			fresh := chat.SessionFor(platform, "43", "")
			e.do("POST", "/v1/sessions/"+fresh+"/input", map[string]string{"text": "first!"}).expect(t, http.StatusForbidden, gh.CodeExternalSession)
			e.do("POST", "/v1/sessions", map[string]string{"id": fresh}).expect(t, http.StatusForbidden, gh.CodeExternalSession)
			if _, err := e.k.Session(ctx, fresh); !gh.IsCode(err, gh.CodeUnknownSession) {
				t.Fatalf("%s: refused, yet session %s exists: %v", platform, fresh, err)
			}
		}
	})
}

type sessionRunReply struct {
	Session gh.Session `json:"session"`
	Run     *gh.Run    `json:"run"`
}

// Sessions the API and the web chat make, and ordinary client ids, are
// no platform's: input and retry work there as before.
func TestNonPlatformSessionsStillWritable(t *testing.T) {
	run(t, httpapi.Config{}, func(t *testing.T, e *env) {
		ctx := context.Background()
		// The web chat creates its sessions with an empty body.
		var made sessionRunReply
		e.do("POST", "/v1/sessions", `{}`).expect(t, http.StatusCreated, "").decode(t, &made)
		for _, id := range []string{made.Session.ID, "support-42", "oai_6f0c08d0b2e7796f21946f0c08d0b2e7", "TG_upper", "xtg_inside"} {
			if p, ok := gh.PlatformSession(id); ok {
				t.Fatalf("%s taken for a session of %q", id, p)
			}
			in := e.input(id, map[string]string{"text": "hi", "requestId": "q-" + id})
			if in.Seq == 0 || in.RunID == 0 || in.Duplicate {
				t.Fatalf("%s: input %+v", id, in)
			}
			l, ok, err := e.k.Claim(ctx, "w1")
			if err != nil || !ok || l.SessionID != id {
				t.Fatalf("%s: claim %+v %v %v", id, l, ok, err)
			}
			if _, err := e.k.Finish(ctx, l, kernel.Settle{Outcome: gh.OutcomeFailed, Reason: "the model failed", NoRetry: true}); err != nil {
				t.Fatal(err)
			}
			var retried inputReply
			e.do("POST", "/v1/sessions/"+id+"/retry", map[string]string{"requestId": "r1"}).expect(t, http.StatusAccepted, "").decode(t, &retried)
			if retried.RunID == 0 || retried.RunID == in.RunID {
				t.Fatalf("%s: retry %+v", id, retried)
			}
			l, ok, err = e.k.Claim(ctx, "w1")
			if err != nil || !ok || l.RunID != retried.RunID {
				t.Fatalf("%s: claim of the retry %+v %v %v", id, l, ok, err)
			}
			if _, err := e.k.Finish(ctx, l, kernel.Settle{Outcome: gh.OutcomeFailed, Reason: "again", NoRetry: true}); err != nil {
				t.Fatal(err)
			}
		}
	})
}
