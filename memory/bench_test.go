package memory_test

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/memory"
	"github.com/gatehouse/gatehouse/store"
	"github.com/gatehouse/gatehouse/store/postgres"
	"github.com/gatehouse/gatehouse/store/sqlite"
	"github.com/gatehouse/gatehouse/store/storetest"
)

const (
	benchFacts = 10_000
	benchUser  = "web:bench"
)

// BenchmarkRecall measures lexical Recall over 10,000 facts of one user
// against a plain indexed lookup of one fact row by id, in the same store
// and run. Phases run lookup, recall, recall, lookup so drift of the
// machine weighs on both alike. It reports p99-ratio (recall p99 / lookup
// p99) and bytes/fact (the memory tables and their indexes, divided by the
// facts). Run with a fixed count, e.g. -benchtime=2000x.
func BenchmarkRecall(b *testing.B) {
	b.Run("sqlite", func(b *testing.B) {
		st, err := sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(b.TempDir(), "bench.db")})
		if err != nil {
			b.Fatal(err)
		}
		defer st.Close()
		benchRecall(b, st, func(ctx context.Context) (int64, error) {
			// Every page of the memory tables and their indexes.
			var n int64
			err := st.WriteDB().QueryRowContext(ctx, `SELECT COALESCE(SUM(pgsize), 0) FROM dbstat
				WHERE name IN (SELECT name FROM sqlite_schema WHERE tbl_name LIKE 'memory\_%' ESCAPE '\' AND tbl_name <> 'memory_jobs')`).Scan(&n)
			return n, err
		})
	})
	b.Run("postgres", func(b *testing.B) {
		st := storetest.OpenPostgres(b, postgres.Config{})
		benchRecall(b, st, func(ctx context.Context) (int64, error) {
			if _, err := st.Pool().Exec(ctx, `VACUUM ANALYZE memory_facts, memory_terms, memory_users`); err != nil {
				return 0, err
			}
			var n int64
			err := st.Pool().QueryRow(ctx, `SELECT pg_total_relation_size('memory_facts') + pg_total_relation_size('memory_terms')
				+ pg_total_relation_size('memory_users')`).Scan(&n)
			return n, err
		})
	})
}

// benchWords is a vocabulary of made-up words; facts draw from it with a
// Zipf distribution (s=1.05, v=10 over 20,000 words), so a few words are
// common and most are rare, as in people's notes: the commonest is in about
// one fact in twelve.
func benchWords(r *rand.Rand, n int) []string {
	syl := []string{"ka", "lo", "mi", "ra", "ten", "vo", "su", "den", "pa", "ri", "no", "sel", "ba", "tu", "gan", "fe", "zo", "mar", "li", "qua"}
	seen := map[string]bool{}
	var out []string
	for len(out) < n {
		w := ""
		for range 2 + r.IntN(3) {
			w += syl[r.IntN(len(syl))]
		}
		if !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
}

func benchRecall(b *testing.B, st store.Store, size func(context.Context) (int64, error)) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(1, 2))
	vocab := benchWords(r, 20000)
	zipf := rand.NewZipf(r, 1.05, 10, uint64(len(vocab)-1))
	phrase := func(n int) string {
		ws := make([]string, n)
		for i := range ws {
			ws[i] = vocab[zipf.Uint64()]
		}
		return strings.Join(ws, " ")
	}
	m := memory.New(st, memory.Config{NoModelPass: true, Logger: slog.New(slog.DiscardHandler)})
	before, err := size(ctx)
	if err != nil {
		b.Fatalf("table size: %v", err)
	}
	at := time.Now().Add(-time.Hour)
	var ids []int64
	var texts []string
	start := time.Now()
	for i := range benchFacts {
		var f memory.Fact
		switch {
		case i%5 == 0:
			name := strings.ToUpper(vocab[i%len(vocab)][:1]) + vocab[i%len(vocab)][1:] + fmt.Sprint(i)
			f = memory.Fact{Kind: memory.KindContact, Subject: "contact:" + name, Value: strings.ToLower(name) + "@example.com",
				Text: fmt.Sprintf("%s's email is %s@example.com", name, strings.ToLower(name))}
		case i%5 == 1:
			f = memory.Fact{Kind: memory.KindPreference, Subject: fmt.Sprintf("pref:p%d", i), Text: "I prefer " + phrase(3)}
		default:
			f = memory.Fact{Kind: memory.KindNote, Subject: fmt.Sprintf("note:n%d", i), Text: phrase(6 + r.IntN(5))}
		}
		f.ObservedAt = at.Add(time.Duration(i) * time.Millisecond)
		got, ok, err := m.Add(ctx, benchUser, f)
		if err != nil || !ok {
			b.Fatalf("add %d: %v %v", i, ok, err)
		}
		ids, texts = append(ids, got.ID), append(texts, got.Text)
	}
	b.Logf("seeded %d facts in %v", benchFacts, time.Since(start).Round(time.Millisecond))
	after, err := size(ctx)
	if err != nil {
		b.Fatalf("table size: %v", err)
	}
	// Questions: half ask about a stored fact in other words around two of
	// its words, half are made of vocabulary words at random.
	questions := make([]string, 500)
	for i := range questions {
		if i%2 == 0 {
			ws := strings.Fields(texts[r.IntN(len(texts))])
			questions[i] = fmt.Sprintf("what did I say about %s and %s?", ws[r.IntN(len(ws))], ws[r.IntN(len(ws))])
		} else {
			questions[i] = "tell me about " + phrase(3+r.IntN(4))
		}
	}

	b.Run("facts=10000", func(b *testing.B) {
		n := max(b.N/2, 50)
		var found int
		lookup := func(i int) error {
			_, err := st.GetMemoryFact(ctx, ids[(i*7919)%len(ids)])
			return err
		}
		recall := func(i int) error {
			got, err := m.Recall(ctx, benchUser, questions[i%len(questions)], 5)
			found += len(got)
			return err
		}
		b.ResetTimer()
		var lookupLat, recallLat []time.Duration
		for _, phase := range []string{"lookup", "recall", "recall", "lookup"} {
			op := lookup
			if phase == "recall" {
				op = recall
			}
			for i := range n / 2 {
				t0 := time.Now()
				if err := op(i); err != nil {
					b.Fatal(err)
				}
				if phase == "recall" {
					recallLat = append(recallLat, time.Since(t0))
				} else {
					lookupLat = append(lookupLat, time.Since(t0))
				}
			}
		}
		b.StopTimer()
		rp, lp := p99(recallLat), p99(lookupLat)
		b.ReportMetric(float64(rp)/float64(lp), "p99-ratio")
		b.ReportMetric(float64(rp.Microseconds()), "recall-p99-µs")
		b.ReportMetric(float64(p50(recallLat).Microseconds()), "recall-p50-µs")
		b.ReportMetric(float64(lp.Microseconds()), "lookup-p99-µs")
		b.ReportMetric(float64(after-before)/benchFacts, "bytes/fact")
		b.ReportMetric(float64(found)/float64(len(recallLat)), "recalled/op")
	})
}

func p99(d []time.Duration) time.Duration { return quantile(d, 99) }
func p50(d []time.Duration) time.Duration { return quantile(d, 50) }

func quantile(d []time.Duration, q int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*q/100)]
}
