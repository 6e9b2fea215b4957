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

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/memory"
	"github.com/gatehouse/gatehouse/store"
)

var ctx = context.Background()

func newMemory(e *env, cfg memory.Config) *memory.Memory {
	cfg.Now = e.clock.Now
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return memory.New(e.st, cfg)
}

func remember(t *testing.T, m *memory.Memory, user string, turn memory.Turn) []memory.Fact {
	t.Helper()
	got, err := m.Remember(ctx, user, turn)
	if err != nil {
		t.Fatalf("remember %q: %v", turn.UserText, err)
	}
	return got
}

func list(t *testing.T, m *memory.Memory, user string) []memory.Fact {
	t.Helper()
	facts, err := m.List(ctx, user)
	if err != nil {
		t.Fatal(err)
	}
	return facts
}

func bySubject(facts []memory.Fact) map[string]memory.Fact {
	out := map[string]memory.Fact{}
	for _, f := range facts {
		out[f.Subject] = f
	}
	return out
}

func jobs(t *testing.T, st store.Store, user, state string) []store.MemoryJob {
	t.Helper()
	js, err := st.ListMemoryJobs(ctx, user, state, 0)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

func TestRememberRulePass(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		m := newMemory(e, memory.Config{})
		at := e.clock.Now().Add(-time.Minute)
		stored := remember(t, m, "web:ana", memory.Turn{SessionID: "s1", Seq: 3, At: at,
			UserText: "Hi, I'm Ana. Sara's email is sara@example.com. I prefer short answers. Remember that my car is a blue Golf."})
		if len(stored) != 4 {
			t.Fatalf("stored %d facts: %+v", len(stored), stored)
		}
		facts := bySubject(list(t, m, "web:ana"))
		want := map[string]string{"name": "Ana", "contact:sara": "sara@example.com", "pref:short": "short answers", "note:blue car golf": ""}
		if len(facts) != len(want) {
			t.Fatalf("listed %+v", facts)
		}
		for subject, value := range want {
			f, ok := facts[subject]
			if !ok || f.Value != value || f.UserKey != "web:ana" || f.SourceSessionID != "s1" || f.SourceSeq != 3 || !f.ObservedAt.Equal(at) || f.Deleted {
				t.Fatalf("fact %s: %+v", subject, f)
			}
		}
		if got := list(t, m, "web:bob"); len(got) != 0 {
			t.Fatalf("another user sees %+v", got)
		}
		// The model pass is queued with the turn, once per turn.
		remember(t, m, "web:ana", memory.Turn{SessionID: "s1", Seq: 3, At: at, UserText: "Hi, I'm Ana."})
		js := jobs(t, e.st, "web:ana", "")
		if len(js) != 1 || js[0].State != store.MemoryJobQueued || js[0].SessionID != "s1" || js[0].Seq != 3 || !js[0].At.Equal(at) ||
			!strings.HasPrefix(js[0].UserText, "Hi, I'm Ana. Sara's") || js[0].AnswerText != "" || js[0].MaxAttempts != 3 {
			t.Fatalf("jobs %+v", js)
		}
	})
}

func TestSupersedeByObservedAt(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		m := newMemory(e, memory.Config{NoModelPass: true})
		t1 := e.clock.Now().Add(-2 * time.Hour)
		t2 := t1.Add(time.Hour)
		older := memory.Turn{SessionID: "s1", Seq: 1, At: t1, UserText: "Sara is old@example.com. I like jazz. Always answer in French."}
		newer := memory.Turn{SessionID: "s1", Seq: 5, At: t2, UserText: "Sara is new@example.com. I don't like jazz. Always answer in Spanish."}
		check := func(t *testing.T, user string) {
			t.Helper()
			facts := bySubject(list(t, m, user))
			if len(facts) != 3 || facts["contact:sara"].Value != "new@example.com" || facts["pref:jazz"].Text != "I don't like jazz" ||
				facts["pref:language"].Value != "Spanish" {
				t.Fatalf("%s: %+v", user, facts)
			}
			for _, f := range facts {
				if !f.ObservedAt.Equal(t2) || f.SourceSeq != 5 {
					t.Fatalf("%s: %+v", user, f)
				}
			}
			if c := m.Contacts(ctx, user); len(c) != 1 || c["Sara"] != "new@example.com" {
				t.Fatalf("%s contacts %v", user, c)
			}
		}
		t.Run("InOrder", func(t *testing.T) {
			remember(t, m, "web:a", older)
			if got := remember(t, m, "web:a", newer); len(got) != 3 {
				t.Fatalf("newer wrote %+v", got)
			}
			check(t, "web:a")
		})
		t.Run("OutOfOrder", func(t *testing.T) {
			remember(t, m, "web:b", newer)
			if got := remember(t, m, "web:b", older); len(got) != 0 {
				t.Fatalf("an older turn overwrote %+v", got)
			}
			check(t, "web:b")
		})
	})
}

func TestModelPassJobSurvivesReopen(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		m := newMemory(e, memory.Config{})
		at := e.clock.Now().Add(-time.Minute)
		remember(t, m, "telegram:123", memory.Turn{SessionID: "s9", Seq: 4, At: at, UserText: "We're moving to Lisbon in May."})
		if js := jobs(t, e.st, "telegram:123", store.MemoryJobQueued); len(js) != 1 {
			t.Fatalf("jobs before restart %+v", js)
		}

		st := e.reopen(t) // a restart: nothing in memory survives but the store
		m = newMemory(e, memory.Config{})
		e.clock.Advance(m.Config().BatchIdle) // one turn: read once the session is quiet
		var seen []memory.Turn
		n, err := m.RunJobs(ctx, func(ctx context.Context, turns []memory.Turn) ([]memory.Found, error) {
			seen = append(seen, turns...)
			return []memory.Found{{Turn: 0, Fact: memory.Fact{Kind: "note", Subject: "move", Text: "Is moving to Lisbon in May"}}}, nil
		})
		if err != nil || n != 1 || len(seen) != 1 {
			t.Fatalf("ran %d jobs, err %v, seen %+v", n, err, seen)
		}
		if s := seen[0]; s.SessionID != "s9" || s.Seq != 4 || !s.At.Equal(at) || s.UserText != "We're moving to Lisbon in May." {
			t.Fatalf("extract saw %+v", s)
		}
		facts := list(t, m, "telegram:123")
		if len(facts) != 1 || facts[0].Subject != "note:move" || facts[0].Kind != memory.KindNote || !facts[0].ObservedAt.Equal(at) ||
			facts[0].SourceSessionID != "s9" || facts[0].SourceSeq != 4 {
			t.Fatalf("facts %+v", facts)
		}
		js := jobs(t, st, "telegram:123", "")
		if len(js) != 1 || js[0].State != store.MemoryJobDone || js[0].Attempts != 1 || js[0].UserText != "" {
			t.Fatalf("job after run %+v", js)
		}
		if n, err := m.RunJobs(ctx, nil); n != 0 || err != nil {
			t.Fatalf("second run: %d %v", n, err)
		}
	})
}

func TestLatePassCannotOverwriteNewer(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		m := newMemory(e, memory.Config{})
		t1 := e.clock.Now().Add(-time.Hour)
		t2 := t1.Add(10 * time.Minute)
		// Turn 1 says nothing the rule pass catches; its model pass will
		// find the old address. Turn 2 states the new one outright.
		remember(t, m, "web:ana", memory.Turn{SessionID: "s1", Seq: 1, At: t1, UserText: "Sara (she's on my team) uses old@example.com for work"})
		remember(t, m, "web:ana", memory.Turn{SessionID: "s1", Seq: 3, At: t2, UserText: "Sara's email is new@example.com"})
		remember(t, m, "web:ana", memory.Turn{SessionID: "s1", Seq: 5, At: t2.Add(time.Minute), UserText: "I love jazz"})
		// Forget the jazz fact; turn 2's model pass must not bring it back.
		if gone, err := m.ForgetMatching(ctx, "web:ana", "jazz"); err != nil || len(gone) != 1 {
			t.Fatalf("forget: %+v %v", gone, err)
		}
		// The three turns are one batch, read once the session is quiet.
		e.clock.Advance(m.Config().BatchIdle)
		n, err := m.RunJobs(ctx, func(ctx context.Context, turns []memory.Turn) ([]memory.Found, error) {
			var found []memory.Found
			for i, turn := range turns {
				found = append(found, memory.Found{Turn: i, Fact: memory.Fact{Kind: memory.KindNote, Text: fmt.Sprintf("Said something in turn %d", turn.Seq)}})
				switch turn.Seq {
				case 1: // observed before turn 3 stated the new address
					found = append(found, memory.Found{Turn: i, Fact: memory.Fact{Kind: memory.KindContact, Subject: "contact:sara", Value: "old@example.com", Text: "Sara's email is old@example.com"}})
				case 5: // observed before the user forgot it
					found = append(found, memory.Found{Turn: i, Fact: memory.Fact{Kind: memory.KindPreference, Subject: "pref:jazz", Value: "jazz", Text: "Loves jazz"}})
				}
			}
			return found, nil
		})
		if err != nil || n != 1 {
			t.Fatalf("ran %d, %v", n, err)
		}
		facts := bySubject(list(t, m, "web:ana"))
		if f := facts["contact:sara"]; f.Value != "new@example.com" || !f.ObservedAt.Equal(t2) {
			t.Fatalf("late pass overwrote the newer address: %+v", f)
		}
		if f, ok := facts["pref:jazz"]; ok {
			t.Fatalf("late pass brought back a forgotten fact: %+v", f)
		}
		if len(facts) != 4 { // contact, three notes (one per turn)
			t.Fatalf("facts %+v", facts)
		}
		if c := m.Contacts(ctx, "web:ana"); c["Sara"] != "new@example.com" {
			t.Fatalf("contacts %v", c)
		}
		// A turn after the forget may say it again.
		e.clock.Advance(time.Second)
		remember(t, m, "web:ana", memory.Turn{SessionID: "s1", Seq: 9, At: e.clock.Now(), UserText: "I love jazz"})
		if _, ok := bySubject(list(t, m, "web:ana"))["pref:jazz"]; !ok {
			t.Fatal("a newer turn could not remember a forgotten subject again")
		}
	})
}

func TestModelPassRetries(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		m := newMemory(e, memory.Config{JobBackoff: time.Minute, Batch: 1})
		remember(t, m, "web:ana", memory.Turn{SessionID: "s1", Seq: 1, At: e.clock.Now(), UserText: "first"})
		remember(t, m, "web:ana", memory.Turn{SessionID: "s2", Seq: 2, At: e.clock.Now(), UserText: "second"})
		calls := map[int64]int{}
		extract := func(ctx context.Context, turns []memory.Turn) ([]memory.Found, error) {
			if len(turns) != 1 {
				t.Errorf("batch of %d with Batch 1", len(turns))
			}
			turn := turns[0]
			calls[turn.Seq]++
			if turn.Seq == 1 {
				return nil, errors.New("model unavailable")
			}
			if calls[turn.Seq] < 3 {
				panic("model client bug")
			}
			return []memory.Found{{Fact: memory.Fact{Kind: memory.KindNote, Text: "Second try worked"}}}, nil
		}
		for attempt := 1; attempt <= 3; attempt++ {
			if n, err := m.RunJobs(ctx, extract); err != nil || n != 2 {
				t.Fatalf("attempt %d: ran %d, %v", attempt, n, err)
			}
			if n, _ := m.RunJobs(ctx, extract); n != 0 {
				t.Fatalf("attempt %d: a failed job was retried before its backoff", attempt)
			}
			e.clock.Advance(time.Duration(attempt) * time.Minute)
		}
		js := jobs(t, e.st, "web:ana", "")
		if js[0].State != store.MemoryJobFailed || js[0].Attempts != 3 || js[0].LastError != "model unavailable" || js[0].UserText != "first" {
			t.Fatalf("job 1 %+v", js[0])
		}
		if js[1].State != store.MemoryJobDone || js[1].Attempts != 3 {
			t.Fatalf("job 2 %+v", js[1])
		}
		if calls[1] != 3 || calls[2] != 3 {
			t.Fatalf("calls %v", calls)
		}
		if n, _ := m.RunJobs(ctx, extract); n != 0 {
			t.Fatal("a failed job ran again")
		}
		if f := list(t, m, "web:ana"); len(f) != 1 || f[0].SourceSeq != 2 || f[0].SourceSessionID != "s2" {
			t.Fatalf("facts %+v", f)
		}
	})
}

func TestModelPassLeaseLapse(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		m := newMemory(e, memory.Config{JobLease: time.Minute, JobAttempts: 2, Batch: 1})
		remember(t, m, "web:ana", memory.Turn{SessionID: "s1", Seq: 1, At: e.clock.Now(), UserText: "hello"})
		// A worker claims the job and hangs past its lease; another takes
		// over, and the first one's late result is dropped.
		release := make(chan struct{})
		claimed := make(chan struct{})
		done := make(chan error, 1)
		go func() {
			_, err := m.RunJobs(ctx, func(ctx context.Context, turns []memory.Turn) ([]memory.Found, error) {
				close(claimed)
				<-release
				return []memory.Found{{Fact: memory.Fact{Kind: memory.KindNote, Text: "from the stale worker"}}}, nil
			})
			done <- err
		}()
		<-claimed
		e.clock.Advance(2 * time.Minute)
		n, err := m.RunJobs(ctx, func(ctx context.Context, turns []memory.Turn) ([]memory.Found, error) {
			return []memory.Found{{Fact: memory.Fact{Kind: memory.KindNote, Text: "from the successor"}}}, nil
		})
		if err != nil || n != 1 {
			t.Fatalf("successor ran %d, %v", n, err)
		}
		close(release)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		facts := list(t, m, "web:ana")
		if len(facts) != 1 || facts[0].Text != "from the successor" {
			t.Fatalf("facts %+v", facts)
		}
		if js := jobs(t, e.st, "web:ana", ""); js[0].State != store.MemoryJobDone || js[0].Attempts != 2 {
			t.Fatalf("job %+v", js[0])
		}
	})
}

// Workers in parallel (goroutines, and on Postgres replicas) read every
// turn once, in batches of one person in one session.
func TestJobsClaimedOnce(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		m := newMemory(e, memory.Config{})
		const turns, groups = 40, 8
		for i := range turns {
			// Person u(i%4) in session s(i%8): eight groups of five.
			remember(t, m, fmt.Sprintf("web:u%d", i%4), memory.Turn{SessionID: fmt.Sprintf("s%d", i%groups), Seq: int64(i + 1), At: e.clock.Now(),
				UserText: fmt.Sprintf("turn %d", i)})
		}
		// Workers on this store and, on Postgres, on other replicas.
		workers := []*memory.Memory{m, m, m, m}
		if e.peer != nil {
			for range 4 {
				workers = append(workers, memory.New(e.peer(t), memory.Config{Now: e.clock.Now, Logger: slog.New(slog.DiscardHandler)}))
			}
		}
		var mu sync.Mutex
		seen := map[int64]int{}
		batches := 0
		var wg sync.WaitGroup
		start := make(chan struct{})
		for _, w := range workers {
			wg.Go(func() {
				<-start
				_, err := w.RunJobs(ctx, func(ctx context.Context, ts []memory.Turn) ([]memory.Found, error) {
					mu.Lock()
					batches++
					for _, turn := range ts {
						seen[turn.Seq]++
						if turn.SessionID != ts[0].SessionID {
							t.Errorf("a batch mixes sessions: %+v", ts)
						}
					}
					mu.Unlock()
					time.Sleep(time.Millisecond)
					var found []memory.Found
					for i, turn := range ts {
						found = append(found, memory.Found{Turn: i, Fact: memory.Fact{Kind: memory.KindNote, Text: "noted " + turn.UserText}})
					}
					return found, nil
				})
				if err != nil {
					t.Error(err)
				}
			})
		}
		close(start)
		wg.Wait()
		if len(seen) != turns || batches != groups {
			t.Fatalf("%d of %d turns read in %d model calls, want %d", len(seen), turns, batches, groups)
		}
		for seq, n := range seen {
			if n != 1 {
				t.Fatalf("turn %d read %d times", seq, n)
			}
		}
		if js := jobs(t, e.st, "", store.MemoryJobDone); len(js) != turns {
			t.Fatalf("%d jobs done", len(js))
		}
		for u := range 4 {
			if f := list(t, m, fmt.Sprintf("web:u%d", u)); len(f) != 10 {
				t.Fatalf("web:u%d has %d facts", u, len(f))
			}
		}
	})
}

func TestContacts(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		m := newMemory(e, memory.Config{NoModelPass: true})
		remember(t, m, "web:ana", memory.Turn{At: e.clock.Now().Add(-time.Hour),
			UserText: "Sara's email is sara@example.com. You can reach Tom Baker at tom@example.org. My email is ana@example.com"})
		if _, _, err := m.Add(ctx, "web:ana", memory.Fact{Kind: memory.KindContact, Subject: "Dr. Who", Value: "Who <doctor@tardis.example>", Text: "The Doctor's mail is doctor@tardis.example"}); err != nil {
			t.Fatal(err)
		}
		want := map[string]string{"Sara": "sara@example.com", "Tom Baker": "tom@example.org", "me": "ana@example.com", "Dr. Who": "doctor@tardis.example"}
		got := m.Contacts(ctx, "web:ana")
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("contacts %v, want %v", got, want)
		}
		if c := m.Contacts(ctx, "web:other"); len(c) != 0 {
			t.Fatalf("another user's contacts %v", c)
		}
		if _, err := m.ForgetMatching(ctx, "web:ana", "Tom's email"); err != nil {
			t.Fatal(err)
		}
		if _, ok := m.Contacts(ctx, "web:ana")["Tom Baker"]; ok {
			t.Fatal("a forgotten contact is still offered")
		}
	})
}

func TestListAndForget(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		m := newMemory(e, memory.Config{NoModelPass: true})
		remember(t, m, "web:ana", memory.Turn{At: e.clock.Now().Add(-time.Hour),
			UserText: "My name is Ana. Sara's email is sara@example.com. I like jazz. Remember that Sara likes tennis."})
		remember(t, m, "web:bob", memory.Turn{At: e.clock.Now().Add(-time.Hour), UserText: "I like jazz"})
		facts := list(t, m, "web:ana")
		if len(facts) != 4 {
			t.Fatalf("list %+v", facts)
		}
		name := bySubject(facts)["name"]
		bobJazz := list(t, m, "web:bob")[0]
		// Forget by id: only one's own, only once.
		if err := m.Forget(ctx, "web:ana", bobJazz.ID); !gh.IsCode(err, gh.CodeNotFound) {
			t.Fatalf("forgetting another user's fact: %v", err)
		}
		if err := m.Forget(ctx, "web:ana", name.ID); err != nil {
			t.Fatal(err)
		}
		if err := m.Forget(ctx, "web:ana", name.ID); !gh.IsCode(err, gh.CodeNotFound) {
			t.Fatalf("forgetting twice: %v", err)
		}
		kept, err := e.st.GetMemoryFact(ctx, name.ID)
		if err != nil || !kept.Deleted || !kept.DeletedAt.Equal(e.clock.Now()) {
			t.Fatalf("soft delete: %+v %v", kept, err)
		}
		// Forget matching: every fact holding all the words.
		gone, err := m.ForgetMatching(ctx, "web:ana", "that Sara")
		if err != nil || len(gone) != 2 {
			t.Fatalf("forget matching Sara: %+v %v", gone, err)
		}
		if _, err := m.ForgetMatching(ctx, "web:ana", "the"); !gh.IsCode(err, gh.CodeInvalid) {
			t.Fatalf("forget with no content words: %v", err)
		}
		facts = list(t, m, "web:ana")
		if len(facts) != 1 || facts[0].Subject != "pref:jazz" {
			t.Fatalf("left %+v", facts)
		}
		if len(list(t, m, "web:bob")) != 1 {
			t.Fatal("bob's fact was forgotten")
		}
		// Forgotten facts are not recalled.
		if got, err := m.Recall(ctx, "web:ana", "What is Sara's email?", 0); err != nil || len(got) != 0 {
			t.Fatalf("recalled forgotten %+v %v", got, err)
		}
	})
}

// The model pass reads the person's words only, and a name or an address
// it lists that the person did not write is not kept: it came from
// somewhere else (an answer, a page, the model's own guess).
func TestModelPassKeepsOnlyWhatThePersonWrote(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		m := newMemory(e, memory.Config{Batch: 1})
		at := e.clock.Now().Add(-time.Minute)
		remember(t, m, "telegram:u_a", memory.Turn{SessionID: "s1", Seq: 5, At: at, UserText: "Note that Sara uses sara@example.com now"})
		var seen []memory.Turn
		n, err := m.RunJobs(ctx, func(ctx context.Context, turns []memory.Turn) ([]memory.Found, error) {
			seen = append(seen, turns...)
			return []memory.Found{
				{Fact: memory.Fact{Kind: memory.KindContact, Subject: "contact:sara", Text: "Sara's email is sara@example.com", Value: "sara@example.com"}},
				{Fact: memory.Fact{Kind: memory.KindContact, Subject: "contact:mallory", Text: "Mallory's email is mallory@evil.example", Value: "mallory@evil.example"}},
				{Fact: memory.Fact{Kind: memory.KindName, Text: "My name is Eve", Value: "Eve"}},
			}, nil
		})
		if err != nil || n != 1 || len(seen) != 1 || seen[0].UserText != "Note that Sara uses sara@example.com now" {
			t.Fatalf("ran %d jobs, err %v, seen %+v", n, err, seen)
		}
		facts := bySubject(list(t, m, "telegram:u_a"))
		if f, ok := facts["contact:sara"]; !ok || f.Value != "sara@example.com" || f.SourceSeq != 5 {
			t.Fatalf("the stated contact was not kept: %+v", facts)
		}
		if _, ok := facts["contact:mallory"]; ok {
			t.Fatalf("an address the person never wrote was kept: %+v", facts)
		}
		if _, ok := facts[memory.SubjectName]; ok {
			t.Fatalf("a name the person never wrote was kept: %+v", facts)
		}
	})
}
