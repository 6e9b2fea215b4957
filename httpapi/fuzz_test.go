package httpapi_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/gates"
	"github.com/gatehouse/gatehouse/gates/gatestest"
	"github.com/gatehouse/gatehouse/httpapi"
	"github.com/gatehouse/gatehouse/kernel"
	"github.com/gatehouse/gatehouse/store"
	"github.com/gatehouse/gatehouse/store/sqlite"
)

// The API's request bodies, fuzzed through the real handler over a real
// store: whatever the body, the answer is never a 5xx; a refusal is a
// typed JSON error (a known code, a message); and a refused body commits
// nothing.

// fuzzBodyLimit is small so that the fuzzer reaches the size limit too.
const fuzzBodyLimit = 4096

var knownCodes = map[gh.Code]bool{
	gh.CodeInvalid: true, gh.CodeUnknownSession: true, gh.CodeUnknownKind: true, gh.CodeInvalidPayload: true,
	gh.CodePayloadTooLarge: true, gh.CodeIdempotencyConflict: true, gh.CodeStaleEpoch: true, gh.CodeLeaseLost: true,
	gh.CodeNotFound: true, gh.CodeConflict: true, gh.CodeUnauthorized: true, gh.CodeUnavailable: true,
}

// bodySeeds are bodies every fuzzer starts from: malformed and hostile
// JSON of every shape.
var bodySeeds = []string{
	``, ` `, `null`, `true`, `0`, `"text"`, `[]`, `[{"text":"hi"}]`, `{`, `{"text":`, `{"text":"hi"`, `{"text":"hi"}}`,
	`{"text":"hi"} {}`, `{"text":"hi"} x`, `{"text":1}`, `{"text":null}`, `{"text":["a"]}`, `{"text":{"a":1}}`,
	`{"text":"hi","colour":"red"}`, `{"TEXT":"hi"}`, `{"text":"hi","text":"again"}`, `{"text":"\u0000"}`,
	`{"text":"\ud800"}`, "{\"text\":\"\xff\xfe\"}", `{"text":"hi","requestId":1}`, `{"text":"hi","requestId":"a\u0001b"}`,
	`{"text":"hi","requestId":"` + strings.Repeat("r", 201) + `"}`, `{"text":"hi","delivery":"now"}`,
	`{"text":"hi","delivery":"guide"}`, `{"text":"hi","selection":"nope"}`, `{"text":"hi","attachments":[{"name":1}]}`,
	`{"text":"hi","attachments":"x"}`, `{"text":"hi","attachments":[{"url":"javascript:alert(1)"}]}`,
	`{"text":"` + strings.Repeat("a", fuzzBodyLimit) + `"}`, strings.Repeat("[", 10000), strings.Repeat(`{"a":`, 5000),
	`{"id":"a b"}`, `{"id":"a/b"}`, `{"id":"a\u202eb"}`, `{"id":"\u0001"}`, `{"id":""}`, `{"id":"` + strings.Repeat("x", 201) + `"}`,
	`{"id":1}`, `{"title":"` + strings.Repeat("t", 501) + `"}`, `{"title":5}`,
	`{"decision":"approve"}`, `{"decision":"maybe","by":"ana"}`, `{"decision":"answer","by":"ana","answer":"x"}`,
	`{"decision":"approve","by":" "}`, `{"decision":"approve","by":"ana","reason":"\u0000"}`, `{"decision":1,"by":"ana"}`,
	`{"decision":"deny","by":"` + strings.Repeat("b", 3000) + `"}`, `{"decision":"approve","by":"a\u0000b"}`,
}

// fuzzSQLite opens a fresh SQLite store.
func fuzzSQLite(tb testing.TB) store.Store {
	tb.Helper()
	// NORMAL: these runs are about the API, not power-cut durability.
	st, err := sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(tb.TempDir(), "gatehouse.db"), Synchronous: "NORMAL"})
	if err != nil {
		tb.Fatalf("open sqlite: %v", err)
	}
	return st
}

// fuzzStore is a fresh SQLite store closed when the fuzz target ends.
func fuzzStore(tb testing.TB) store.Store {
	st := fuzzSQLite(tb)
	tb.Cleanup(func() { st.Close() })
	return st
}

// fuzzServer is a server over a fresh SQLite store, answering through its
// handler directly (no sockets: the fuzzer runs many requests).
func fuzzServer(k *kernel.Kernel, cfg httpapi.Config) http.Handler {
	cfg.Kernel, cfg.MaxBodyBytes, cfg.Logger = k, fuzzBodyLimit, slog.New(slog.DiscardHandler)
	if cfg.APIToken == "" {
		cfg.APIToken = testToken
	}
	return httpapi.New(cfg).Handler()
}

// send runs one request through h.
func send(h http.Handler, method, path, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Host = "127.0.0.1"
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+testToken)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// checkAnswer fails on a 5xx, and on an error answer that is not a typed
// JSON error. It returns the error code ("" for a success).
func checkAnswer(t *testing.T, body string, rec *httptest.ResponseRecorder) gh.Code {
	t.Helper()
	if rec.Code >= 500 {
		t.Fatalf("body %+q: status %d: %s", body, rec.Code, rec.Body)
	}
	if rec.Code < 300 {
		return ""
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Fatalf("body %+q: status %d with Content-Type %q", body, rec.Code, ct)
	}
	var e struct {
		Code    gh.Code `json:"code"`
		Message string  `json:"message"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || !knownCodes[e.Code] || strings.TrimSpace(e.Message) == "" {
		t.Fatalf("body %+q: status %d, not a typed error: %s", body, rec.Code, rec.Body)
	}
	return e.Code
}

func lastSeq(t *testing.T, k *kernel.Kernel, session string) int64 {
	t.Helper()
	s, err := k.Session(context.Background(), session)
	if gh.IsCode(err, gh.CodeUnknownSession) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return s.LastSeq
}

// FuzzInputBody: POST /v1/sessions/{id}/input. An accepted input commits
// exactly one event (none for a duplicate); a refused one commits none.
func FuzzInputBody(f *testing.F) {
	for _, s := range bodySeeds {
		f.Add(s)
	}
	f.Add(`{"text":"hello","requestId":"r1"}`)
	f.Add(`{"text":"hello","requestId":"r1"}`) // a duplicate
	f.Add(`{"text":"other","requestId":"r1"}`) // an idempotency conflict
	f.Add(`{"text":"hi","delivery":"queue","attachments":[{"name":"a.pdf","type":"application/pdf","url":"https://x/a.pdf"}]}`)
	st := fuzzStore(f)
	k := kernel.New(st, kernel.Config{})
	h := fuzzServer(k, httpapi.Config{Store: st})
	f.Fuzz(func(t *testing.T, body string) {
		before := lastSeq(t, k, "fz")
		rec := send(h, "POST", "/v1/sessions/fz/input", body)
		code := checkAnswer(t, body, rec)
		after := lastSeq(t, k, "fz")
		if code != "" {
			if after != before {
				t.Fatalf("refused body %+q (%s) moved the log from seq %d to %d", body, code, before, after)
			}
			return
		}
		var out struct {
			Seq       int64 `json:"seq"`
			Duplicate bool  `json:"duplicate"`
		}
		if rec.Code != http.StatusAccepted || json.Unmarshal(rec.Body.Bytes(), &out) != nil {
			t.Fatalf("body %+q: %d %s", body, rec.Code, rec.Body)
		}
		want := before + 1
		if out.Duplicate {
			want = before
		}
		if after != want || (!out.Duplicate && out.Seq != after) {
			t.Fatalf("body %+q: answered %+v; the log went from %d to %d", body, out, before, after)
		}
	})
}

// FuzzCreateSessionBody: POST /v1/sessions. A created session has the id
// asked for (or a generated one); a refused body creates none.
func FuzzCreateSessionBody(f *testing.F) {
	for _, s := range bodySeeds {
		f.Add(s)
	}
	f.Add(`{"id":"support-42","title":"Invoice question"}`)
	f.Add(`{"id":"support-42"}`)
	f.Add(`{"id":"日本語"}`)
	f.Add(`{}`)
	st := fuzzStore(f)
	k := kernel.New(st, kernel.Config{})
	h := fuzzServer(k, httpapi.Config{Store: st})
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, body string) {
		// The id the body names, if it names one.
		var asked struct {
			ID *string `json:"id"`
		}
		_ = json.Unmarshal([]byte(body), &asked)
		existed := false
		if asked.ID != nil {
			_, err := k.Session(ctx, *asked.ID)
			existed = err == nil
		}
		rec := send(h, "POST", "/v1/sessions", body)
		code := checkAnswer(t, body, rec)
		if code != "" {
			if asked.ID != nil && !existed {
				if _, err := k.Session(ctx, *asked.ID); err == nil {
					t.Fatalf("refused body %+q (%s) created session %+q", body, code, *asked.ID)
				}
			}
			return
		}
		var out struct{ Session gh.Session }
		if json.Unmarshal(rec.Body.Bytes(), &out) != nil || out.Session.ID == "" {
			t.Fatalf("body %+q: %d %s", body, rec.Code, rec.Body)
		}
		if asked.ID != nil && *asked.ID != "" && out.Session.ID != *asked.ID {
			t.Fatalf("body %+q: asked for %+q, got %+q", body, *asked.ID, out.Session.ID)
		}
		if (rec.Code == http.StatusCreated) == existed {
			t.Fatalf("body %+q: status %d, though the session existed=%v", body, rec.Code, existed)
		}
		if _, err := k.Session(ctx, out.Session.ID); err != nil {
			t.Fatalf("body %+q: answered session %+q is not stored: %v", body, out.Session.ID, err)
		}
	})
}

// FuzzDecisionBody: POST /v1/gates/{id}/decision on an approval gate, a
// clarifying question and a gate that does not exist. A refused decision
// leaves the gate and its session's log as they were; an accepted one is
// the gate's state in SQL, with at most one gate.decided.
func FuzzDecisionBody(f *testing.F) {
	for _, s := range bodySeeds {
		f.Add(s, uint8(0))
		f.Add(s, uint8(1))
	}
	f.Add(`{"decision":"answer","by":"ana","answer":"Sara Lind"}`, uint8(1))
	f.Add(`{"decision":"approve","by":"ana","reason":"fine"}`, uint8(0))
	f.Add(`{"decision":"deny","by":"bob"}`, uint8(0))
	f.Add(`{"decision":"approve","by":"ana"}`, uint8(2))
	fx := gatestest.NewFixture(f, gatestest.Harness{
		NewStore: fuzzSQLite, // the fixture closes it
		NewRegistry: func(_ testing.TB, st store.Store, now func() time.Time) gates.Registry {
			return gates.NewSQL(st, now)
		},
	})
	approval := fx.OpenGate("g-approve", gatestest.GateSpec{})
	clarify := fx.OpenGate("g-clarify", gatestest.GateSpec{Kind: gh.GateKindClarify, Options: []string{"Sara Lind", "Sara Berg"}})
	h := fuzzServer(fx.Kernel, httpapi.Config{Store: fx.Store, Gates: fx.Service})
	ids := []string{approval.ID, clarify.ID, "g-missing"}
	f.Fuzz(func(t *testing.T, body string, which uint8) {
		id := ids[int(which)%len(ids)]
		type state struct {
			gate gh.Gate
			seqs [2]int64
		}
		snap := func() state {
			var s state
			if id != "g-missing" {
				g, err := fx.Store.GetGate(context.Background(), id)
				if err != nil {
					t.Fatal(err)
				}
				s.gate = g
			}
			s.seqs = [2]int64{lastSeq(t, fx.Kernel, approval.SessionID), lastSeq(t, fx.Kernel, clarify.SessionID)}
			return s
		}
		before := snap()
		rec := send(h, "POST", "/v1/gates/"+id+"/decision", body)
		code := checkAnswer(t, body, rec)
		after := snap()
		if code != "" {
			if after.seqs != before.seqs || after.gate.State != before.gate.State || after.gate.DecidedBy != before.gate.DecidedBy {
				t.Fatalf("refused decision %+q (%s) on %s changed it: %+v → %+v", body, code, id, before, after)
			}
			return
		}
		var out struct {
			Decision gh.GateState `json:"decision"`
			Won      bool         `json:"won"`
		}
		if json.Unmarshal(rec.Body.Bytes(), &out) != nil || out.Decision != after.gate.State || out.Decision == gh.GatePending {
			t.Fatalf("decision %+q on %s: answered %s, the gate is %s", body, id, rec.Body, after.gate.State)
		}
		if n := decidedEvents(t, fx.Kernel, after.gate); n != 1 {
			t.Fatalf("decision %+q on %s: %d gate.decided events", body, id, n)
		}
	})
}

func decidedEvents(t *testing.T, k *kernel.Kernel, g gh.Gate) int {
	t.Helper()
	evs, err := k.Events(context.Background(), g.SessionID, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range evs {
		if e.Kind == gh.KindGateDecided && e.Key == "gate:"+g.ID {
			n++
		}
	}
	return n
}
