package knowledge_test

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

	"github.com/jackc/pgx/v5"

	"github.com/gatehouse/gatehouse/internal/testenv"
	"github.com/gatehouse/gatehouse/knowledge"
	"github.com/gatehouse/gatehouse/store"
	"github.com/gatehouse/gatehouse/store/postgres"
	"github.com/gatehouse/gatehouse/store/sqlite"
)

const (
	benchPassages   = 100_000
	benchPerDoc     = 50
	benchParaWords  = 45
	benchCollection = knowledge.Shared
)

// BenchmarkRecall measures, on each store, (1) indexing: documents of 50
// passages added through Library.Add (extraction, splitting, terms, the
// store's index and counts, one transaction per document), in passages/s,
// against bare inserts of the same passage rows into a table with only a
// primary key, one transaction per document, on the same connections;
// and (2) lexical recall over the 100,000 passages: the p99 of
// Library.Recall against the p99 of one indexed row read of the same store
// (GetKnowledgeDocument by name), phases run lookup, recall, recall,
// lookup so drift of the machine weighs on both alike. Run with a fixed
// count, e.g. -benchtime=2000x.
func BenchmarkRecall(b *testing.B) { eachBenchStore(b, benchRecall) }

// BenchmarkIndex measures indexing alone, as BenchmarkRecall does, over
// 200 documents (10,000 passages): quicker to iterate on.
func BenchmarkIndex(b *testing.B) {
	eachBenchStore(b, func(b *testing.B, st store.Store, bare func(context.Context, int64, []bareRow) error) {
		lib, err := knowledge.New(st, knowledge.Config{Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			b.Fatal(err)
		}
		docs, paragraphs, _ := benchCorpus(rand.New(rand.NewPCG(1, 2)), 200)
		indexTook, bareTook := benchIndex(b, lib, bare, docs, paragraphs)
		b.ReportMetric(float64(len(paragraphs))/indexTook.Seconds(), "indexed-passages/s")
		b.ReportMetric(float64(len(paragraphs))/bareTook.Seconds(), "bare-passages/s")
		b.ReportMetric(bareTook.Seconds()/indexTook.Seconds(), "index/bare")
	})
}

// eachBenchStore runs fn on a fresh SQLite store and a fresh Postgres
// schema, each with a bare passage table and the bare insert of one
// document's rows into it.
func eachBenchStore(b *testing.B, fn func(*testing.B, store.Store, func(context.Context, int64, []bareRow) error)) {
	b.Run("sqlite", func(b *testing.B) {
		st, err := sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(b.TempDir(), "bench.db")})
		if err != nil {
			b.Fatal(err)
		}
		defer st.Close()
		db := st.WriteDB()
		if _, err := db.Exec(`CREATE TABLE bench_bare (id INTEGER PRIMARY KEY, document_id INTEGER NOT NULL, collection TEXT NOT NULL,
			ord INTEGER NOT NULL, heading TEXT NOT NULL, text TEXT NOT NULL, start_offset INTEGER NOT NULL, end_offset INTEGER NOT NULL, length INTEGER NOT NULL)`); err != nil {
			b.Fatal(err)
		}
		fn(b, st, func(ctx context.Context, doc int64, rows []bareRow) error {
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				return err
			}
			defer tx.Rollback()
			stmt, err := tx.PrepareContext(ctx, `INSERT INTO bench_bare (document_id, collection, ord, heading, text, start_offset, end_offset, length)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?)`)
			if err != nil {
				return err
			}
			for _, r := range rows {
				if _, err := stmt.ExecContext(ctx, doc, benchCollection, r.ord, r.heading, r.text, r.start, r.end, r.length); err != nil {
					return err
				}
			}
			return tx.Commit()
		})
	})
	b.Run("postgres", func(b *testing.B) {
		url := testenv.PostgresURL(b)
		st, err := postgres.Open(context.Background(), postgres.Config{URL: url, Channel: "wake_" + testenv.SchemaOf(url)})
		if err != nil {
			b.Fatal(err)
		}
		defer st.Close()
		pool := st.Pool()
		if _, err := pool.Exec(context.Background(), `CREATE TABLE bench_bare (id BIGSERIAL PRIMARY KEY, document_id BIGINT NOT NULL,
			collection TEXT NOT NULL, ord INTEGER NOT NULL, heading TEXT[] NOT NULL, text TEXT NOT NULL, start_offset INTEGER NOT NULL,
			end_offset INTEGER NOT NULL, length INTEGER NOT NULL)`); err != nil {
			b.Fatal(err)
		}
		fn(b, st, func(ctx context.Context, doc int64, rows []bareRow) error {
			var batch pgx.Batch
			batch.Queue(`BEGIN`)
			for _, r := range rows {
				batch.Queue(`INSERT INTO bench_bare (document_id, collection, ord, heading, text, start_offset, end_offset, length)
					VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, doc, benchCollection, r.ord, []string{r.heading}, r.text, r.start, r.end, r.length)
			}
			batch.Queue(`COMMIT`)
			return pool.SendBatch(ctx, &batch).Close()
		})
	})
}

type bareRow struct {
	ord, start, end, length int
	heading, text           string
}

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

// benchCorpus makes nDocs Markdown documents of benchPerDoc passages: a
// heading per passage, each passage one paragraph of Zipf-distributed
// made-up words that fits a passage whole. It returns them with their
// paragraphs, and a phrase maker over the same vocabulary.
func benchCorpus(r *rand.Rand, nDocs int) (docs, paragraphs []string, phrase func(int) string) {
	vocab := benchWords(r, 30000)
	zipf := rand.NewZipf(r, 1.05, 10, uint64(len(vocab)-1))
	phrase = func(n int) string {
		ws := make([]string, n)
		for i := range ws {
			ws[i] = vocab[zipf.Uint64()]
		}
		return strings.Join(ws, " ")
	}
	docs = make([]string, nDocs)
	for i := range docs {
		var sb strings.Builder
		fmt.Fprintf(&sb, "# Document %d\n\n", i)
		for j := range benchPerDoc {
			p := phrase(benchParaWords)
			paragraphs = append(paragraphs, p)
			fmt.Fprintf(&sb, "## Part %d\n\n%s.\n\n", j, p)
		}
		docs[i] = sb.String()
	}
	return docs, paragraphs, phrase
}

// benchIndex adds docs through lib, one Library.Add (one transaction)
// each, then inserts the same passage rows bare, one transaction per
// document, and returns both durations.
func benchIndex(b *testing.B, lib *knowledge.Library, bare func(context.Context, int64, []bareRow) error, docs, paragraphs []string) (indexTook, bareTook time.Duration) {
	ctx := context.Background()
	start := time.Now()
	var stored int
	for i, d := range docs {
		doc, _, err := lib.Add(ctx, knowledge.AddRequest{Collection: benchCollection, Name: fmt.Sprintf("doc-%05d.md", i), Data: []byte(d)})
		if err != nil {
			b.Fatalf("add %d: %v", i, err)
		}
		stored += doc.Passages
	}
	indexTook = time.Since(start)
	if stored != len(paragraphs) {
		b.Fatalf("%d passages stored, want %d", stored, len(paragraphs))
	}
	start = time.Now()
	for i := range docs {
		rows := make([]bareRow, benchPerDoc)
		for j := range rows {
			text := paragraphs[i*benchPerDoc+j] + "."
			rows[j] = bareRow{ord: j, start: j * 400, end: j*400 + len(text), length: benchParaWords, heading: fmt.Sprintf("Part %d", j), text: text}
		}
		if err := bare(ctx, int64(i+1), rows); err != nil {
			b.Fatalf("bare insert %d: %v", i, err)
		}
	}
	bareTook = time.Since(start)
	b.Logf("indexed %d passages in %v; bare inserts of the same rows took %v", stored, indexTook.Round(time.Millisecond), bareTook.Round(time.Millisecond))
	return indexTook, bareTook
}

func benchRecall(b *testing.B, st store.Store, bare func(context.Context, int64, []bareRow) error) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(1, 2))
	lib, err := knowledge.New(st, knowledge.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	docs, paragraphs, phrase := benchCorpus(r, benchPassages/benchPerDoc)
	indexTook, bareTook := benchIndex(b, lib, bare, docs, paragraphs)
	if pg, ok := st.(*postgres.Store); ok {
		if _, err := pg.Pool().Exec(ctx, `VACUUM ANALYZE knowledge_passages, knowledge_documents, knowledge_terms`); err != nil {
			b.Fatal(err)
		}
	}
	// Questions: half ask about a stored passage around three of its
	// words, half are vocabulary words at random.
	questions := make([]string, 500)
	for i := range questions {
		if i%2 == 0 {
			ws := strings.Fields(paragraphs[r.IntN(len(paragraphs))])
			questions[i] = fmt.Sprintf("what do the documents say about %s, %s and %s?", ws[r.IntN(len(ws))], ws[r.IntN(len(ws))], ws[r.IntN(len(ws))])
		} else {
			questions[i] = "tell me about " + phrase(3+r.IntN(4))
		}
	}
	b.Run("passages=100000", func(b *testing.B) {
		n := max(b.N/2, 50)
		var found int
		lookup := func(i int) error {
			_, ok, err := lib.Document(ctx, benchCollection, fmt.Sprintf("doc-%05d.md", (i*7919)%len(docs)))
			if err == nil && !ok {
				err = fmt.Errorf("document %d not found", i)
			}
			return err
		}
		recall := func(i int) error {
			f, err := lib.Recall(ctx, knowledge.Query{Text: questions[i%len(questions)], Scope: knowledge.Scope{SessionID: "bench", UserKey: "web:bench"}})
			found += len(f.Passages)
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
		rp, lp := quantile(recallLat, 99), quantile(lookupLat, 99)
		b.ReportMetric(float64(rp)/float64(lp), "p99-ratio")
		b.ReportMetric(float64(rp.Microseconds()), "recall-p99-µs")
		b.ReportMetric(float64(quantile(recallLat, 50).Microseconds()), "recall-p50-µs")
		b.ReportMetric(float64(lp.Microseconds()), "lookup-p99-µs")
		b.ReportMetric(float64(found)/float64(len(recallLat)), "recalled/op")
		b.ReportMetric(float64(benchPassages)/indexTook.Seconds(), "indexed-passages/s")
		b.ReportMetric(float64(benchPassages)/bareTook.Seconds(), "bare-passages/s")
		b.ReportMetric(bareTook.Seconds()/indexTook.Seconds(), "index/bare")
	})
}

func quantile(d []time.Duration, q int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*q/100)]
}
