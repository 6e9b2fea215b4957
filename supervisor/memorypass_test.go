package supervisor_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/memory"
	"github.com/gatehouse/gatehouse/models/modeltest"
	"github.com/gatehouse/gatehouse/store"
	"github.com/gatehouse/gatehouse/store/sqlite"
	"github.com/gatehouse/gatehouse/supervisor"
)

// passClock is a settable clock for memory's batching.
type passClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *passClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *passClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func passMemory(t *testing.T, cfg memory.Config) (*memory.Memory, store.Store, *passClock) {
	t.Helper()
	st, err := sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(t.TempDir(), "m.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	clock := &passClock{now: time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)}
	cfg.Now = clock.Now
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return memory.New(st, cfg), st, clock
}

// Five turns of a person are one model request that lists them numbered
// (their words only), and each fact the model names a turn for is kept
// at that turn's time and seq.
func TestModelPassReadsABatchInOneCall(t *testing.T) {
	ctx := context.Background()
	m, st, clock := passMemory(t, memory.Config{})
	t0 := clock.Now()
	said := []string{
		"Hi there",
		"My colleague Sara, reachable at sara@example.com",
		"Honestly, tea over coffee any day.",
		"What's the weather?",
		"Remember that my car is a blue Golf",
	}
	for i, text := range said {
		if _, err := m.Remember(ctx, "telegram:u_1", memory.Turn{SessionID: "s1", Seq: int64(10 + i), At: t0.Add(time.Duration(i) * time.Minute), UserText: text}); err != nil {
			t.Fatal(err)
		}
	}
	clock.Advance(time.Second)
	fake := modeltest.NewOpenAI(t, "test-key")
	fake.Push(modeltest.Reply{Text: `Here you go: {"facts":[
		{"turn":2,"kind":"contact","text":"Sara's email is sara@example.com","subject":"Sara","value":"sara@example.com"},
		{"turn":"3","kind":"preference","text":"Prefers tea to coffee"},
		{"turn":5,"kind":"note","text":"Drives a blue Golf","subject":"car"},
		{"turn":9,"kind":"note","text":"Said in no turn there was"},
		{"kind":"note","text":"Said in no turn named"}]}`})
	if n, err := m.RunJobs(ctx, supervisor.ModelExtractor(mustModels(t, fake))); err != nil || n != 1 {
		t.Fatalf("jobs run %d: %v", n, err)
	}
	reqs := fake.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d model requests for five turns", len(reqs))
	}
	var body struct {
		Messages []struct{ Role, Content string }
	}
	if err := json.Unmarshal(reqs[0].Body, &body); err != nil || len(body.Messages) != 2 {
		t.Fatalf("request %s: %v", reqs[0].Body, err)
	}
	want := ""
	for i, text := range said {
		if i > 0 {
			want += "\n\n"
		}
		want += fmt.Sprintf("Turn %d: %s", i+1, text)
	}
	if body.Messages[1].Role != "user" || body.Messages[1].Content != want {
		t.Fatalf("the model was shown %q, want %q", body.Messages[1].Content, want)
	}
	if !strings.Contains(body.Messages[0].Content, `"turn":1`) {
		t.Fatalf("the prompt does not ask for the turn: %s", body.Messages[0].Content)
	}
	facts, _ := m.List(ctx, "telegram:u_1")
	got := map[string]int64{}
	for _, f := range facts {
		if !f.ObservedAt.Equal(t0.Add(time.Duration(f.SourceSeq-10) * time.Minute)) {
			t.Fatalf("fact not observed at its turn's time: %+v", f)
		}
		got[f.Text] = f.SourceSeq
	}
	// The model's facts are sourced at the turns it named, and the two
	// naming no turn of the batch are gone.
	if got["Sara's email is sara@example.com"] != 11 || got["Prefers tea to coffee"] != 12 || got["Drives a blue Golf"] != 14 {
		t.Fatalf("facts %+v", facts)
	}
	for _, f := range facts {
		if strings.Contains(f.Text, "no turn") {
			t.Fatalf("a fact naming no turn of the batch was kept: %+v", f)
		}
	}
	js, _ := st.ListMemoryJobs(ctx, "telegram:u_1", "", 0)
	for _, j := range js {
		if j.State != store.MemoryJobDone || j.Attempts != 1 {
			t.Fatalf("job %+v", j)
		}
	}
}

// An answer that is not the fact list is not asked again; a failed call
// is.
func TestModelPassBadAnswerAndFailedCall(t *testing.T) {
	ctx := context.Background()
	m, st, clock := passMemory(t, memory.Config{Batch: 2, JobBackoff: time.Minute})
	for i, session := range []string{"s1", "s1", "s2", "s2"} {
		if _, err := m.Remember(ctx, "web:ana", memory.Turn{SessionID: session, Seq: int64(i + 1), UserText: fmt.Sprintf("turn %d", i+1)}); err != nil {
			t.Fatal(err)
		}
	}
	fake := modeltest.NewOpenAI(t, "test-key")
	fake.Push(modeltest.Reply{Text: "I'm sorry, I can't list facts."}, modeltest.Reply{Status: 503})
	extract := supervisor.ModelExtractor(mustModels(t, fake))
	if n, err := m.RunJobs(ctx, extract); err != nil || n != 2 {
		t.Fatalf("ran %d: %v", n, err)
	}
	js, _ := st.ListMemoryJobs(ctx, "web:ana", "", 0)
	for _, j := range js[:2] {
		if j.State != store.MemoryJobDone || !strings.Contains(j.LastError, "not the expected JSON") {
			t.Fatalf("s1 job after a non-JSON answer %+v", j)
		}
	}
	for _, j := range js[2:] {
		if j.State != store.MemoryJobQueued || j.Attempts != 1 || j.LastError == "" {
			t.Fatalf("s2 job after a failed call %+v", j)
		}
	}
	clock.Advance(time.Minute)
	fake.Push(modeltest.Reply{Text: `{"facts":[]}`})
	if n, err := m.RunJobs(ctx, extract); err != nil || n != 1 || len(fake.Requests()) != 3 {
		t.Fatalf("after the backoff: ran %d (%v), %d requests", n, err, len(fake.Requests()))
	}
	if js, _ := st.ListMemoryJobs(ctx, "web:ana", store.MemoryJobDone, 0); len(js) != 4 {
		t.Fatalf("done %+v", js)
	}
}
