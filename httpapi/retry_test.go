package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/httpapi"
	"github.com/gatehouse/gatehouse/kernel"
)

// A failed turn runs again on POST /retry: committed as an input, so it
// queues a run that reads the failed turn's input; idempotent by request
// id; refused while there is nothing to retry.
func TestRetryRerunsTheFailedTurn(t *testing.T) {
	run(t, httpapi.Config{}, func(t *testing.T, e *env) {
		ctx := context.Background()
		e.do("POST", "/v1/sessions/nope/retry", nil).expect(t, http.StatusNotFound, gh.CodeUnknownSession)
		in := e.input("s1", map[string]any{"text": "summarise the report"})
		e.do("POST", "/v1/sessions/s1/retry", map[string]any{"requestId": "x"}).expect(t, http.StatusConflict, gh.CodeConflict)
		l, ok, err := e.k.Claim(ctx, "w1")
		if err != nil || !ok {
			t.Fatalf("claim: %v %v", ok, err)
		}
		if _, err := e.k.Finish(ctx, l, kernel.Settle{Outcome: gh.OutcomeFailed, Reason: "the model failed", NoRetry: true}); err != nil {
			t.Fatal(err)
		}
		e.do("POST", "/v1/sessions/s1/retry", map[string]any{"requestId": "bad\x01id"}).expect(t, http.StatusBadRequest, gh.CodeInvalid)
		e.do("POST", "/v1/sessions/s1/retry", "{").expect(t, http.StatusBadRequest, "")

		var first, again struct {
			Seq       int64 `json:"seq"`
			RunID     int64 `json:"runId"`
			Duplicate bool  `json:"duplicate"`
		}
		e.do("POST", "/v1/sessions/s1/retry", map[string]any{"requestId": "r1"}).expect(t, http.StatusAccepted, "").decode(t, &first)
		if first.RunID == 0 || first.RunID == in.RunID || first.Duplicate {
			t.Fatalf("retry %+v: want a new run", first)
		}
		e.do("POST", "/v1/sessions/s1/retry", map[string]any{"requestId": "r1"}).expect(t, http.StatusAccepted, "").decode(t, &again)
		if again.Seq != first.Seq || !again.Duplicate {
			t.Fatalf("repeated retry %+v, want the duplicate of %+v", again, first)
		}
		evs := e.events("s1", "").Events
		var retries []gh.TurnRetry
		for _, ev := range evs {
			if ev.Kind == gh.KindTurnRetry {
				var tr gh.TurnRetry
				json.Unmarshal(ev.Payload, &tr)
				retries = append(retries, tr)
			}
		}
		if len(retries) != 1 || retries[0].RunID != l.RunID || retries[0].By != gh.LocalUser || retries[0].RequestID != "r1" {
			t.Fatalf("turn.retry events %+v, want one for run %d", retries, l.RunID)
		}
		// The new run reads the failed turn's input as unread work.
		b, ok, err := e.k.Claim(ctx, "w2")
		if err != nil || !ok || b.RunID != first.RunID || !b.PendingInput || b.PrevReadWatermark >= first.Seq {
			t.Fatalf("the retried run's lease %+v %v %v", b, ok, err)
		}
		// Running again: a second retry has nothing to retry.
		e.do("POST", "/v1/sessions/s1/retry", map[string]any{"requestId": "r2"}).expect(t, http.StatusConflict, gh.CodeConflict)
		if _, err := e.k.Finish(ctx, b, kernel.Settle{Outcome: gh.OutcomeDone}); err != nil {
			t.Fatal(err)
		}
		// Done: still nothing to retry, but the first request still answers as it did.
		e.do("POST", "/v1/sessions/s1/retry", map[string]any{"requestId": "r3"}).expect(t, http.StatusConflict, gh.CodeConflict)
		e.do("POST", "/v1/sessions/s1/retry", map[string]any{"requestId": "r1"}).expect(t, http.StatusAccepted, "").decode(t, &again)
		if again.Seq != first.Seq || !again.Duplicate {
			t.Fatalf("repeat after the run settled %+v", again)
		}
	})
}
