package memory_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/memory"
	"github.com/gatehouse/gatehouse/store"
)

// calls records the model pass's extract calls.
type calls struct {
	mu    sync.Mutex
	turns [][]memory.Turn
}

func (c *calls) record(turns []memory.Turn) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.turns = append(c.turns, append([]memory.Turn(nil), turns...))
}

func (c *calls) n() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.turns)
}

// notes is an extract that records its call and finds one note per turn,
// naming the turn's seq.
func (c *calls) notes(ctx context.Context, turns []memory.Turn) ([]memory.Found, error) {
	c.record(turns)
	var found []memory.Found
	for i, t := range turns {
		found = append(found, memory.Found{Turn: i, Fact: memory.Fact{Kind: memory.KindNote, Subject: fmt.Sprintf("said %d", t.Seq),
			Text: fmt.Sprintf("Said thing number %d", t.Seq)}})
	}
	return found, nil
}

// logRecords keeps what memory logs.
type logRecords struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (l *logRecords) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecords) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.recs = append(l.recs, r.Clone())
	return nil
}
func (l *logRecords) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logRecords) WithGroup(string) slog.Handler      { return l }

func (l *logRecords) warnings() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, r := range l.recs {
		if r.Level >= slog.LevelWarn {
			line := r.Message
			r.Attrs(func(a slog.Attr) bool { line += " " + a.String(); return true })
			out = append(out, line)
		}
	}
	return out
}

func turnSeqs(turns []memory.Turn) []int64 {
	var out []int64
	for _, t := range turns {
		out = append(out, t.Seq)
	}
	return out
}

// Five turns of one person are one model call over all five, and each
// fact found is observed at its own turn's time and sourced at its seq.
func TestModelPassBatchesFiveTurns(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		m := newMemory(e, memory.Config{})
		if m.Config().Batch != 5 {
			t.Fatalf("default batch %d", m.Config().Batch)
		}
		var c calls
		at := map[int64]time.Time{}
		for i := range 5 {
			seq := int64(2*i + 1)
			at[seq] = e.clock.Now().Add(time.Duration(i-10) * time.Minute)
			remember(t, m, "web:ana", memory.Turn{SessionID: "s1", Seq: seq, At: at[seq], UserText: fmt.Sprintf("turn %d", seq)})
			if i < 4 {
				if n, err := m.RunJobs(ctx, c.notes); err != nil || n != 0 {
					t.Fatalf("after %d turns: ran %d (%v), want none yet", i+1, n, err)
				}
			}
		}
		n, err := m.RunJobs(ctx, func(ctx context.Context, turns []memory.Turn) ([]memory.Found, error) {
			found, err := c.notes(ctx, turns)
			// A fact naming no turn of the batch is dropped.
			return append(found, memory.Found{Turn: 5, Fact: memory.Fact{Kind: memory.KindNote, Text: "From nowhere at all"}},
				memory.Found{Turn: -1, Fact: memory.Fact{Kind: memory.KindNote, Text: "From before anything"}}), err
		})
		if err != nil || n != 1 || c.n() != 1 {
			t.Fatalf("ran %d (%v), %d calls, want one", n, err, c.n())
		}
		if got := fmt.Sprint(turnSeqs(c.turns[0])); got != "[1 3 5 7 9]" {
			t.Fatalf("the call read turns %s", got)
		}
		for _, turn := range c.turns[0] {
			if turn.SessionID != "s1" || !turn.At.Equal(at[turn.Seq]) || turn.UserText != fmt.Sprintf("turn %d", turn.Seq) {
				t.Fatalf("turn %+v", turn)
			}
		}
		facts := list(t, m, "web:ana")
		if len(facts) != 5 {
			t.Fatalf("facts %+v", facts)
		}
		for _, f := range facts {
			if f.Text != fmt.Sprintf("Said thing number %d", f.SourceSeq) || !f.ObservedAt.Equal(at[f.SourceSeq]) || f.SourceSessionID != "s1" {
				t.Fatalf("fact not stamped with its own turn: %+v", f)
			}
		}
		for _, j := range jobs(t, e.st, "web:ana", "") {
			if j.State != store.MemoryJobDone || j.Attempts != 1 || j.UserText != "" || j.LastError != "" {
				t.Fatalf("job %+v", j)
			}
		}
		// Batch 1: a call per turn.
		m1 := newMemory(e, memory.Config{Batch: 1})
		remember(t, m1, "web:ana", memory.Turn{SessionID: "s1", Seq: 20, UserText: "one"})
		remember(t, m1, "web:ana", memory.Turn{SessionID: "s1", Seq: 21, UserText: "two"})
		if n, err := m1.RunJobs(ctx, c.notes); err != nil || n != 2 || len(c.turns[1]) != 1 || len(c.turns[2]) != 1 {
			t.Fatalf("batch 1: ran %d (%v), calls %+v", n, err, c.turns)
		}
		if b := newMemory(e, memory.Config{Batch: 500}).Config().Batch; b != memory.MaxBatch {
			t.Fatalf("batch 500 became %d", b)
		}
	})
}

// Fewer turns are read once the session has been quiet for BatchIdle
// since the newest of them.
func TestModelPassIdleBatch(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		m := newMemory(e, memory.Config{BatchIdle: time.Minute})
		var c calls
		for i := range 3 {
			remember(t, m, "web:ana", memory.Turn{SessionID: "s1", Seq: int64(i + 1), At: e.clock.Now(), UserText: fmt.Sprintf("turn %d", i+1)})
			e.clock.Advance(30 * time.Second)
		}
		// The newest was queued 30 s ago.
		if n, err := m.RunJobs(ctx, c.notes); err != nil || n != 0 {
			t.Fatalf("ran %d (%v) before the session was quiet", n, err)
		}
		e.clock.Advance(29 * time.Second)
		if n, _ := m.RunJobs(ctx, c.notes); n != 0 {
			t.Fatal("ran before BatchIdle passed")
		}
		e.clock.Advance(time.Second)
		if n, err := m.RunJobs(ctx, c.notes); err != nil || n != 1 || c.n() != 1 || fmt.Sprint(turnSeqs(c.turns[0])) != "[1 2 3]" {
			t.Fatalf("ran %d (%v), calls %+v", n, err, c.turns)
		}
		if f := list(t, m, "web:ana"); len(f) != 3 {
			t.Fatalf("facts %+v", f)
		}
		// Flush reads what waits without waiting.
		remember(t, m, "web:ana", memory.Turn{SessionID: "s1", Seq: 4, At: e.clock.Now(), UserText: "turn 4"})
		remember(t, m, "web:ana", memory.Turn{SessionID: "s2", Seq: 1, At: e.clock.Now(), UserText: "elsewhere"})
		if n, err := m.Flush(ctx, c.notes); err != nil || n != 2 || c.n() != 3 || len(c.turns[1]) != 1 || len(c.turns[2]) != 1 {
			t.Fatalf("flush ran %d (%v), calls %+v", n, err, c.turns)
		}
	})
}

// Two people in one session: a batch each, over their own words, and
// what each batch finds is kept with its person.
func TestModelPassBatchesPerPerson(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		m := newMemory(e, memory.Config{})
		var c calls
		for i := range 10 {
			user, name := "telegram:u_a", "ana"
			if i%2 == 1 {
				user, name = "telegram:u_b", "bob"
			}
			remember(t, m, user, memory.Turn{SessionID: "group", Seq: int64(i + 1), At: e.clock.Now().Add(time.Duration(i) * time.Second),
				UserText: fmt.Sprintf("%s says %d", name, i+1)})
		}
		n, err := m.RunJobs(ctx, c.notes)
		if err != nil || n != 2 || c.n() != 2 {
			t.Fatalf("ran %d (%v), %d calls, want two", n, err, c.n())
		}
		seqs := map[string]string{}
		for _, turns := range c.turns {
			name := strings.Fields(turns[0].UserText)[0]
			for _, turn := range turns {
				if !strings.HasPrefix(turn.UserText, name+" ") {
					t.Fatalf("a batch mixes people: %+v", turns)
				}
			}
			seqs[name] = fmt.Sprint(turnSeqs(turns))
		}
		if seqs["ana"] != "[1 3 5 7 9]" || seqs["bob"] != "[2 4 6 8 10]" {
			t.Fatalf("batches %v", seqs)
		}
		for user, parity := range map[string]int64{"telegram:u_a": 1, "telegram:u_b": 0} {
			facts := list(t, m, user)
			if len(facts) != 5 {
				t.Fatalf("%s: facts %+v", user, facts)
			}
			for _, f := range facts {
				if f.SourceSeq%2 != parity || f.UserKey != user {
					t.Fatalf("%s got a fact of the other person's turn: %+v", user, f)
				}
			}
		}
	})
}

// A name or an address must be in the words of the turn the model says
// it came from.
func TestModelPassStatedInItsOwnTurn(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		m := newMemory(e, memory.Config{Batch: 2})
		remember(t, m, "web:ana", memory.Turn{SessionID: "s1", Seq: 1, UserText: "Sara uses sara@example.com"})
		remember(t, m, "web:ana", memory.Turn{SessionID: "s1", Seq: 2, UserText: "and Tom is on my team"})
		n, err := m.RunJobs(ctx, func(ctx context.Context, turns []memory.Turn) ([]memory.Found, error) {
			return []memory.Found{
				{Turn: 0, Fact: memory.Fact{Kind: memory.KindContact, Subject: "sara", Text: "Sara's email is sara@example.com", Value: "sara@example.com"}},
				{Turn: 1, Fact: memory.Fact{Kind: memory.KindContact, Subject: "tom", Text: "Tom's email is sara@example.com", Value: "sara@example.com"}},
			}, nil
		})
		if err != nil || n != 1 {
			t.Fatalf("ran %d, %v", n, err)
		}
		facts := bySubject(list(t, m, "web:ana"))
		if f, ok := facts["contact:sara"]; !ok || f.SourceSeq != 1 {
			t.Fatalf("facts %+v", facts)
		}
		if f, ok := facts["contact:tom"]; ok {
			t.Fatalf("an address from another turn was kept: %+v", f)
		}
	})
}

// An answer that is not the expected JSON is not asked again: the batch
// is done, its error kept on its jobs and logged once.
func TestModelPassBadAnswerNotRetried(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		logs := &logRecords{}
		m := newMemory(e, memory.Config{Logger: slog.New(logs), JobBackoff: time.Minute})
		for i := range 5 {
			remember(t, m, "web:ana", memory.Turn{SessionID: "s1", Seq: int64(i + 1), UserText: fmt.Sprintf("I like tea %d", i)})
		}
		var c calls
		bad := func(ctx context.Context, turns []memory.Turn) ([]memory.Found, error) {
			c.record(turns)
			return nil, fmt.Errorf("%w: %q", memory.ErrBadAnswer, "Sure! Here are the facts:")
		}
		if n, err := m.RunJobs(ctx, bad); err != nil || n != 1 {
			t.Fatalf("ran %d, %v", n, err)
		}
		for range 3 {
			e.clock.Advance(time.Hour)
			if n, _ := m.RunJobs(ctx, bad); n != 0 {
				t.Fatal("a batch whose answer was not JSON ran again")
			}
		}
		if c.n() != 1 || len(c.turns[0]) != 5 {
			t.Fatalf("calls %+v", c.turns)
		}
		for _, j := range jobs(t, e.st, "web:ana", "") {
			if j.State != store.MemoryJobDone || j.Attempts != 1 || !strings.Contains(j.LastError, "not the expected JSON") || j.UserText != "" {
				t.Fatalf("job %+v", j)
			}
		}
		if w := logs.warnings(); len(w) != 1 || !strings.Contains(w[0], "not the expected JSON") || !strings.Contains(w[0], "turns=5") {
			t.Fatalf("warnings %q, want one", w)
		}
		// The rule pass's facts stand.
		if f := list(t, m, "web:ana"); len(f) == 0 {
			t.Fatal("the rule pass's facts went with the batch")
		}
	})
}

// A failed call (the model unreachable) is retried, the batch whole,
// after its backoff.
func TestModelPassTransportFailureRetried(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		logs := &logRecords{}
		m := newMemory(e, memory.Config{Logger: slog.New(logs), JobBackoff: time.Minute})
		for i := range 5 {
			remember(t, m, "web:ana", memory.Turn{SessionID: "s1", Seq: int64(i + 1), UserText: fmt.Sprintf("turn %d", i+1)})
		}
		var c calls
		down := true
		extract := func(ctx context.Context, turns []memory.Turn) ([]memory.Found, error) {
			if down {
				c.record(turns)
				return nil, errors.New("dial tcp 127.0.0.1:1: connection refused")
			}
			return c.notes(ctx, turns)
		}
		if n, err := m.RunJobs(ctx, extract); err != nil || n != 1 {
			t.Fatalf("ran %d, %v", n, err)
		}
		for _, j := range jobs(t, e.st, "web:ana", "") {
			if j.State != store.MemoryJobQueued || j.Attempts != 1 || !strings.Contains(j.LastError, "connection refused") || j.UserText == "" {
				t.Fatalf("job after a failed call %+v", j)
			}
		}
		if n, _ := m.RunJobs(ctx, extract); n != 0 {
			t.Fatal("retried before the backoff")
		}
		e.clock.Advance(time.Minute)
		down = false
		if n, err := m.RunJobs(ctx, extract); err != nil || n != 1 || c.n() != 2 || fmt.Sprint(turnSeqs(c.turns[1])) != "[1 2 3 4 5]" {
			t.Fatalf("retry ran %d (%v), calls %+v", n, err, c.turns)
		}
		for _, j := range jobs(t, e.st, "web:ana", "") {
			if j.State != store.MemoryJobDone || j.Attempts != 2 || j.LastError != "" {
				t.Fatalf("job after the retry %+v", j)
			}
		}
		if f := list(t, m, "web:ana"); len(f) != 5 {
			t.Fatalf("facts %+v", f)
		}
		if w := logs.warnings(); len(w) != 1 || !strings.Contains(w[0], "retried=5") {
			t.Fatalf("warnings %q", w)
		}
	})
}

// A batch gives the model a bounded amount of text: long turns wait for
// the next batch.
func TestModelPassBatchTextBound(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		m := newMemory(e, memory.Config{Batch: 3})
		long := strings.Repeat("word ", 8<<10) // 40 KiB
		for i := range 3 {
			remember(t, m, "web:ana", memory.Turn{SessionID: "s1", Seq: int64(i + 1), UserText: long})
		}
		var c calls
		if n, err := m.Flush(ctx, c.notes); err != nil || n != 3 {
			t.Fatalf("ran %d, %v", n, err)
		}
		for _, turns := range c.turns {
			if len(turns) != 1 {
				t.Fatalf("a batch of %d turns of 40 KiB", len(turns))
			}
		}
	})
}
