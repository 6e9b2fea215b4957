package openaiapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	gh "github.com/gatehouse/gatehouse"
	// Every platform registered, as in the binary, so the prefixes
	// refused are the real table's.
	_ "github.com/gatehouse/gatehouse/adapters/discord"
	_ "github.com/gatehouse/gatehouse/adapters/slackchat"
	_ "github.com/gatehouse/gatehouse/adapters/telegram"
	"github.com/gatehouse/gatehouse/gateway/chat"
	"github.com/gatehouse/gatehouse/httpapi/openaiapi"
	"github.com/gatehouse/gatehouse/kernel"
	"github.com/gatehouse/gatehouse/store"
)

// X-Gatehouse-Session naming a chat platform's session (tg_, dc_, sl_,
// px_) is 403 external-session, whether the session exists (its chat
// spoke, and its turn was answered) or not: nothing is committed, no run
// is queued, and no session is made. An ordinary session still works.
func TestPlatformSessionRefusedOnOpenAI(t *testing.T) {
	s := newStack(t, `[{"match": "hello", "text": "Hello there, human."}]`, openaiapi.Config{})
	ctx := context.Background()
	k := s.e.Kernel
	for _, platform := range []string{gh.PlatformTelegram, gh.PlatformDiscord, gh.PlatformSlack, "elsewhere"} {
		id := chat.SessionFor(platform, "42", "")
		// The chat speaks, as the gateway commits it, and is answered.
		payload, _ := json.Marshal(gh.UserMessage{Text: "hello", Delivery: gh.DeliveryQueue, Source: platform})
		if err := k.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
			if _, _, err := tx.CreateSession(ctx, gh.Session{ID: id, Tenant: gh.DefaultTenant, Created: time.Now()}); err != nil {
				return err
			}
			_, err := k.EdgeCommitTx(ctx, tx, kernel.EdgeInput{SessionID: id, Event: gh.NewEvent{Kind: gh.KindUserMessage, Payload: payload}})
			return err
		}); err != nil {
			t.Fatal(err)
		}
		k.Notify(id)
		var settled gh.Run
		s.e.Eventually(platform+"'s turn to settle", func() bool {
			r, ok, err := k.LatestRun(ctx, id)
			settled = r
			return err == nil && ok && !r.State.Active()
		})
		before := s.kinds(id)

		// The history that matches the log (its answer is there), a new
		// message after it, and a first message.
		s.refused(id, http.StatusForbidden, string(gh.CodeExternalSession), "hello")
		s.refused(id, http.StatusForbidden, string(gh.CodeExternalSession), "hello", "Hello there, human.", "and now?")
		fresh := chat.SessionFor(platform, "43", "")
		s.refused(fresh, http.StatusForbidden, string(gh.CodeExternalSession), "hello")

		if after := s.kinds(id); len(after) != len(before) || after[gh.KindUserMessage] != before[gh.KindUserMessage] ||
			after[gh.KindTurnRetry] != 0 {
			t.Fatalf("%s: log %v after the refusals, was %v", platform, after, before)
		}
		if r, ok, err := k.LatestRun(ctx, id); err != nil || !ok || r.ID != settled.ID || r.State != settled.State {
			t.Fatalf("%s: latest run %+v %v, want %+v (none queued)", platform, r, err, settled)
		}
		if _, err := k.Session(ctx, fresh); !gh.IsCode(err, gh.CodeUnknownSession) {
			t.Fatalf("%s: refused, yet session %s exists: %v", platform, fresh, err)
		}
	}
	if got := s.ask("conv-1", "hello"); got != "Hello there, human." {
		t.Fatalf("an ordinary session's answer %q", got)
	}
}
