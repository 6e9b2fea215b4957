package httpapi_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/httpapi"
	"github.com/gatehouse/gatehouse/kernel"
	"github.com/gatehouse/gatehouse/store"
	"github.com/gatehouse/gatehouse/store/sqlite"
)

// eventReads counts the store's event reads.
type eventReads struct {
	store.Store
	n atomic.Int64
}

func (r *eventReads) Events(ctx context.Context, session string, after int64, limit int) ([]gh.Event, error) {
	r.n.Add(1)
	return r.Store.Events(ctx, session, after, limit)
}

// A turn committed in this process reaches the stream without a read:
// the kernel hands the committed events to its subscribers. A commit that
// only signals (no events in hand) is read from the store, so nothing is
// missed.
func TestStreamSendsThisProcessCommitsWithoutReading(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(t.TempDir(), "g.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	reads := &eventReads{Store: st}
	k := kernel.New(reads, kernel.Config{})
	srv := httpapi.New(httpapi.Config{Kernel: k, Store: reads, APIToken: testToken, Logger: slog.New(slog.DiscardHandler), Poll: time.Hour})
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	if _, _, err := k.CreateSession(ctx, gh.Session{ID: "s1"}); err != nil {
		t.Fatal(err)
	}
	first := commitTo(t, k, "s1", "hello")
	s := openStream(t, ts.Client(), ts.URL+"/v1/sessions/s1/stream")
	if ev := s.committed(); ev.Seq != first {
		t.Fatalf("first frame %+v", ev)
	}
	before := reads.n.Load()

	// A whole turn: the input, the claim's run.started, the answer, the settle.
	second := commitTo(t, k, "s1", "and then?")
	l, ok, err := k.Claim(ctx, "w1")
	if err != nil || !ok {
		t.Fatalf("claim %v %v", ok, err)
	}
	a, _ := json.Marshal(gh.AssistantMessage{GenerationID: "u1-a1", Text: "answer", InputSeqs: []int64{first, second}, StopReason: gh.StopEndTurn})
	if _, err := k.Commit(ctx, l, gh.NewEvent{Kind: gh.KindAssistantMessage, Payload: a, Key: "u1-a1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := k.Finish(ctx, l, kernel.Settle{Outcome: gh.OutcomeDone, Events: []gh.NewEvent{{Kind: gh.KindRunFinished, Payload: json.RawMessage(`{"status":"done"}`)}}}); err != nil {
		t.Fatal(err)
	}
	for i, want := range []gh.Kind{gh.KindUserMessage, gh.KindRunStarted, gh.KindAssistantMessage, gh.KindRunFinished} {
		ev := s.committed()
		if ev.Kind != want || ev.Seq != second+int64(i) || len(ev.Payload) == 0 {
			t.Fatalf("frame %d: %+v, want %s at seq %d", i, ev, want, second+int64(i))
		}
	}
	if n := reads.n.Load() - before; n != 0 {
		t.Fatalf("the stream read the store %d times for commits made in this process", n)
	}

	// A commit that only signals is read.
	p, _ := json.Marshal(gh.Notice{Code: "test", Text: "written outside the kernel's commits"})
	if err := st.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
		_, err := tx.Append(ctx, store.AppendParams{SessionID: "s1", Kind: gh.KindNotice, Payload: p, Now: time.Now()})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	k.Notify("s1")
	if ev := s.committed(); ev.Kind != gh.KindNotice || ev.Seq != second+4 {
		t.Fatalf("a signalled commit: %+v", ev)
	}
	if reads.n.Load() == before {
		t.Fatal("a commit that only signalled was not read from the store")
	}
}
