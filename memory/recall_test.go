package memory_test

import (
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/memory"
)

// background notes a user might have accumulated: the other facts a
// relevant one must stand out from.
var backgroundNotes = []string{
	"The gym opens at six on weekdays",
	"Project Falcon ships in March",
	"The office wifi is called Hangar",
	"Mum's birthday is on the 4th of June",
	"The landlord wants the rent by the first of the month",
	"My passport expires next year",
	"The dog gets fed twice a day",
	"Quarterly report goes to the board in April",
	"The plumber comes on Tuesday morning",
	"Flight to Berlin leaves from terminal 2",
	"The team offsite is in Porto this autumn",
	"Locker code at the pool is 4412",
}

func seed(t *testing.T, e *env, m *memory.Memory, user string) {
	t.Helper()
	at := e.clock.Now().Add(-24 * time.Hour)
	remember(t, m, user, memory.Turn{SessionID: "s1", Seq: 1, At: at,
		UserText: "My name is Ana. Sara's email is sara@example.com. I like jazz. Remember that my car is a blue Golf. Always answer in Spanish."})
	for i, n := range backgroundNotes {
		if _, _, err := m.Add(t.Context(), user, memory.Fact{Kind: memory.KindNote, Text: n, ObservedAt: at.Add(time.Duration(i) * time.Minute)}); err != nil {
			t.Fatal(err)
		}
	}
}

func recall(t *testing.T, m *memory.Memory, user, q string) []memory.Scored {
	t.Helper()
	got, err := m.Recall(t.Context(), user, q, 0)
	if err != nil {
		t.Fatalf("recall %q: %v", q, err)
	}
	return got
}

func subjects(ss []memory.Scored) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s.Fact.Subject)
	}
	return out
}

func TestRecallLexical(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		m := newMemory(e, memory.Config{NoModelPass: true})
		seed(t, e, m, "web:ana")

		got := recall(t, m, "web:ana", "What is Sara's email?")
		if len(got) == 0 || got[0].Fact.Subject != "contact:sara" {
			t.Fatalf("Sara's email: %v", subjects(got))
		}
		s := got[0]
		if s.Method != memory.MethodLexical || s.Coverage != 1 || s.Closeness <= 0.5 || s.Evidence != s.Closeness+s.Coverage ||
			s.Fact.Value != "sara@example.com" || s.Fact.UserKey != "web:ana" {
			t.Fatalf("score parts %+v", s)
		}
		for _, s := range got {
			if s.Fact.Subject == "pref:jazz" || s.Evidence < m.Config().Floor {
				t.Fatalf("recalled below the floor or irrelevant: %+v", s)
			}
		}

		// The flagship: a request naming Sara finds who she is.
		if got := recall(t, m, "web:ana", "Email Sara that the report is ready"); len(got) == 0 || got[0].Fact.Subject != "contact:sara" {
			t.Fatalf("email Sara: %v", subjects(got))
		}
		if got := recall(t, m, "web:ana", "What car do I drive?"); len(got) == 0 || got[0].Fact.Subject != "note:blue car golf" {
			t.Fatalf("car: %v", subjects(got))
		}
		if got := recall(t, m, "web:ana", "what's my name"); len(got) != 1 || got[0].Fact.Subject != "name" {
			t.Fatalf("name: %v", subjects(got))
		}

		// Nothing bears on these: nothing is recalled.
		for _, q := range []string{"What's the weather like in Paris?", "Write a haiku about autumn leaves", "hello!", ""} {
			if got := recall(t, m, "web:ana", q); len(got) != 0 {
				t.Fatalf("%q recalled %+v", q, got)
			}
		}
		// Another user's facts are not recalled.
		if got := recall(t, m, "web:bob", "What is Sara's email?"); len(got) != 0 {
			t.Fatalf("bob recalled %+v", got)
		}
	})
}

func TestRecallFloor(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		m := newMemory(e, memory.Config{NoModelPass: true})
		seed(t, e, m, "web:ana")
		all := newMemory(e, memory.Config{Floor: -1, NoModelPass: true})
		// A question sharing one common-ish word with a fact that does not
		// answer it: scored, but below the floor.
		const q = "When does Project Falcon ship to the board?"
		scored := recall(t, all, "web:ana", q)
		kept := recall(t, m, "web:ana", q)
		floor := m.Config().Floor
		var below int
		for _, s := range scored {
			if s.Evidence < floor {
				below++
			}
		}
		if below == 0 || len(kept) != len(scored)-below {
			t.Fatalf("floor %.2f: scored %v, kept %v", floor, describe(scored), describe(kept))
		}
		for _, s := range kept {
			if s.Evidence < floor {
				t.Fatalf("kept below the floor: %+v", s)
			}
		}
		if len(kept) == 0 || kept[0].Fact.Text != "Project Falcon ships in March" {
			t.Fatalf("kept %v of %v", describe(kept), describe(scored))
		}
	})
}

func describe(ss []memory.Scored) string {
	var out string
	for _, s := range ss {
		out += fmt.Sprintf("\n  %-40q closeness %.2f coverage %.2f evidence %.2f", s.Fact.Text, s.Closeness, s.Coverage, s.Evidence)
	}
	return out
}

func TestRecallEmbeddings(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		fake := newFakeEmbeddings(t)
		lex := newMemory(e, memory.Config{NoModelPass: true})
		m := newMemory(e, memory.Config{NoModelPass: true, EmbeddingsURL: fake.srv.URL + "/v1", EmbeddingsModel: "fake-embed", EmbeddingsAPIKey: "sk-test"})
		seed(t, e, lex, "web:ana")
		facts := len(list(t, m, "web:ana"))

		// Same meaning, no shared word: found by embeddings, not lexically.
		const q = "Which music do I enjoy?"
		got := recall(t, m, "web:ana", q)
		if len(got) != 1 || got[0].Fact.Subject != "pref:jazz" || got[0].Method != memory.MethodEmbeddings || got[0].Coverage != 0 || got[0].Closeness < 0.6 {
			t.Fatalf("embeddings recalled %v %+v", describe(got), got)
		}
		if got := recall(t, lex, "web:ana", q); len(got) != 0 {
			t.Fatalf("lexical recalled %v", describe(got))
		}
		// One request for the question and every fact, one for the
		// background sentences; later recalls embed the question only.
		if r, in := fake.requests.Load(), fake.inputs.Load(); r != 2 || in != int64(1+facts+8) {
			t.Fatalf("first recall: %d requests, %d inputs", r, in)
		}
		got = recall(t, m, "web:ana", "What is Sara's email?")
		if len(got) == 0 || got[0].Fact.Subject != "contact:sara" || got[0].Method != memory.MethodEmbeddings {
			t.Fatalf("Sara: %v", describe(got))
		}
		for _, s := range got {
			if s.Fact.Subject == "pref:jazz" {
				t.Fatalf("irrelevant fact recalled: %v", describe(got))
			}
		}
		if r, in := fake.requests.Load(), fake.inputs.Load(); r != 3 || in != int64(1+facts+8+1) {
			t.Fatalf("second recall: %d requests, %d inputs", r, in)
		}
		// A superseded fact is embedded again.
		remember(t, m, "web:ana", memory.Turn{At: e.clock.Now(), UserText: "I don't like jazz"})
		recall(t, m, "web:ana", "Which music do I enjoy?")
		if in := fake.inputs.Load(); in != int64(1+facts+8+1+2) {
			t.Fatalf("after supersession: %d inputs", in)
		}

		// The endpoint fails: recall falls back to lexical scoring.
		fake.fail.Store(true)
		got = recall(t, m, "web:ana", "What is Sara's email?")
		if len(got) == 0 || got[0].Fact.Subject != "contact:sara" || got[0].Method != memory.MethodLexical {
			t.Fatalf("fallback: %v", describe(got))
		}
	})
}

func TestEmbeddingsURLForms(t *testing.T) {
	fake := newFakeEmbeddings(t)
	for _, u := range []string{fake.srv.URL + "/v1", fake.srv.URL + "/v1/", fake.srv.URL + "/v1/embeddings"} {
		t.Run(u, func(t *testing.T) {
			eachBackendSQLite(t, func(t *testing.T, e *env) {
				m := newMemory(e, memory.Config{NoModelPass: true, EmbeddingsURL: u, Logger: slog.New(slog.DiscardHandler)})
				remember(t, m, "web:ana", memory.Turn{At: e.clock.Now(), UserText: "I like jazz"})
				before := fake.requests.Load()
				if got := recall(t, m, "web:ana", "Which music do I enjoy?"); len(got) != 1 || got[0].Method != memory.MethodEmbeddings {
					t.Fatalf("recalled %v", describe(got))
				}
				if fake.requests.Load() == before {
					t.Fatal("no request reached the endpoint")
				}
			})
		})
	}
}
