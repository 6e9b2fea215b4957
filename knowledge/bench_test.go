package knowledge_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gatehouse/gatehouse/internal/embeddings"
	"github.com/gatehouse/gatehouse/knowledge"
	"github.com/gatehouse/gatehouse/store"
	"github.com/gatehouse/gatehouse/store/postgres"
	"github.com/gatehouse/gatehouse/store/sqlite"
	"github.com/gatehouse/gatehouse/store/storetest"
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
// against two bare inserts of the same passage rows, one transaction per
// document, on the same connections: into a table with only a primary
// key ("bare"), and into one with the database's own lexical index of
// the text fed by plain INSERTs ("bare-indexed": an FTS5 table defined as
// the store's on SQLite, a tsvector column under GIN on Postgres);
// (2) lexical recall over the 100,000 passages: the p99 of Library.Recall
// against the p99 of one indexed row read of the same store
// (GetKnowledgeDocument by name), phases run lookup, recall, recall,
// lookup so drift of the machine weighs on both alike; and (3) recall
// with embeddings (a fake OpenAI-compatible server on loopback, every
// passage embedded before timing), its p99 against the p99 of the one
// request for the question's vector it must make. Run with a fixed
// count, e.g. -benchtime=2000x.
func BenchmarkRecall(b *testing.B) { eachBenchStore(b, benchRecall) }

// BenchmarkIndex measures indexing alone, as BenchmarkRecall does, over
// 200 documents (10,000 passages): quicker to iterate on.
func BenchmarkIndex(b *testing.B) {
	eachBenchStore(b, func(b *testing.B, st store.Store, bare benchBare) {
		lib, err := knowledge.New(st, knowledge.Config{Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			b.Fatal(err)
		}
		docs, paragraphs, _ := benchCorpus(rand.New(rand.NewPCG(1, 2)), 200)
		reportIndex(b, len(paragraphs), benchIndex(b, lib, bare, docs, paragraphs))
	})
}

// benchBare inserts one document's rows bare: plain into a table with
// only a primary key, indexed into one with the database's own lexical
// index of the text as well.
type benchBare struct {
	plain, indexed func(ctx context.Context, doc int64, rows []bareRow) error
}

// indexTimes are how long indexing and the bare inserts took.
type indexTimes struct{ index, bare, bareIndexed time.Duration }

func reportIndex(b *testing.B, passages int, t indexTimes) {
	b.ReportMetric(float64(passages)/t.index.Seconds(), "indexed-passages/s")
	b.ReportMetric(float64(passages)/t.bare.Seconds(), "bare-passages/s")
	b.ReportMetric(float64(passages)/t.bareIndexed.Seconds(), "bare-indexed-passages/s")
	b.ReportMetric(t.bare.Seconds()/t.index.Seconds(), "index/bare")
	b.ReportMetric(t.bareIndexed.Seconds()/t.index.Seconds(), "index/bare-indexed")
}

// eachBenchStore runs fn on a fresh SQLite store and a fresh Postgres
// schema, each with the bare passage tables and the bare inserts of one
// document's rows into them.
func eachBenchStore(b *testing.B, fn func(*testing.B, store.Store, benchBare)) {
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
		// The indexed bare table: the same rows, and an FTS5 index of
		// their text defined as the store's (migration 00016), fed the
		// heading and text by a plain INSERT each.
		if _, err := db.Exec(`CREATE TABLE bench_bare_ix (id INTEGER PRIMARY KEY, document_id INTEGER NOT NULL, collection TEXT NOT NULL,
			ord INTEGER NOT NULL, heading TEXT NOT NULL, text TEXT NOT NULL, start_offset INTEGER NOT NULL, end_offset INTEGER NOT NULL, length INTEGER NOT NULL);
			CREATE VIRTUAL TABLE bench_bare_fts USING fts5(terms, content='', contentless_delete=1, detail=none,
				tokenize='unicode61 remove_diacritics 0');
			INSERT INTO bench_bare_fts (bench_bare_fts, rank) VALUES ('automerge', 8)`); err != nil {
			b.Fatal(err)
		}
		insert := func(ctx context.Context, table string, doc int64, rows []bareRow, fts bool) error {
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				return err
			}
			defer tx.Rollback()
			stmt, err := tx.PrepareContext(ctx, `INSERT INTO `+table+` (document_id, collection, ord, heading, text, start_offset, end_offset, length)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?)`)
			if err != nil {
				return err
			}
			var ix *sql.Stmt
			if fts {
				if ix, err = tx.PrepareContext(ctx, `INSERT INTO bench_bare_fts (rowid, terms) VALUES (?, ?)`); err != nil {
					return err
				}
			}
			for _, r := range rows {
				res, err := stmt.ExecContext(ctx, doc, benchCollection, r.ord, r.heading, r.text, r.start, r.end, r.length)
				if err != nil {
					return err
				}
				if ix != nil {
					id, _ := res.LastInsertId()
					if _, err := ix.ExecContext(ctx, id, r.heading+"\n"+r.text); err != nil {
						return err
					}
				}
			}
			return tx.Commit()
		}
		fn(b, st, benchBare{
			plain: func(ctx context.Context, doc int64, rows []bareRow) error {
				return insert(ctx, "bench_bare", doc, rows, false)
			},
			indexed: func(ctx context.Context, doc int64, rows []bareRow) error {
				return insert(ctx, "bench_bare_ix", doc, rows, true)
			},
		})
	})
	b.Run("postgres", func(b *testing.B) {
		st := storetest.OpenPostgres(b, postgres.Config{})
		pool := st.Pool()
		if _, err := pool.Exec(context.Background(), `CREATE TABLE bench_bare (id BIGSERIAL PRIMARY KEY, document_id BIGINT NOT NULL,
			collection TEXT NOT NULL, ord INTEGER NOT NULL, heading TEXT[] NOT NULL, text TEXT NOT NULL, start_offset INTEGER NOT NULL,
			end_offset INTEGER NOT NULL, length INTEGER NOT NULL)`); err != nil {
			b.Fatal(err)
		}
		// The indexed bare table: the same rows with a tsvector of their
		// text under GIN, made by Postgres from a plain INSERT.
		if _, err := pool.Exec(context.Background(), `CREATE TABLE bench_bare_ix (id BIGSERIAL PRIMARY KEY, document_id BIGINT NOT NULL,
			collection TEXT NOT NULL, ord INTEGER NOT NULL, heading TEXT[] NOT NULL, text TEXT NOT NULL, start_offset INTEGER NOT NULL,
			end_offset INTEGER NOT NULL, length INTEGER NOT NULL, tsv TSVECTOR NOT NULL);
			CREATE INDEX bench_bare_ix_tsv ON bench_bare_ix USING GIN (tsv)`); err != nil {
			b.Fatal(err)
		}
		insert := func(ctx context.Context, doc int64, rows []bareRow, indexed bool) error {
			var batch pgx.Batch
			batch.Queue(`BEGIN`)
			for _, r := range rows {
				if indexed {
					batch.Queue(`INSERT INTO bench_bare_ix (document_id, collection, ord, heading, text, start_offset, end_offset, length, tsv)
						VALUES ($1, $2, $3, $4, $5, $6, $7, $8, to_tsvector('simple', array_to_string($4::text[], ' ') || ' ' || $5::text))`,
						doc, benchCollection, r.ord, []string{r.heading}, r.text, r.start, r.end, r.length)
				} else {
					batch.Queue(`INSERT INTO bench_bare (document_id, collection, ord, heading, text, start_offset, end_offset, length)
						VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, doc, benchCollection, r.ord, []string{r.heading}, r.text, r.start, r.end, r.length)
				}
			}
			batch.Queue(`COMMIT`)
			return pool.SendBatch(ctx, &batch).Close()
		}
		fn(b, st, benchBare{
			plain:   func(ctx context.Context, doc int64, rows []bareRow) error { return insert(ctx, doc, rows, false) },
			indexed: func(ctx context.Context, doc int64, rows []bareRow) error { return insert(ctx, doc, rows, true) },
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
// each, then inserts the same passage rows bare, plain and indexed, one
// transaction per document, and returns the three durations.
func benchIndex(b *testing.B, lib *knowledge.Library, bare benchBare, docs, paragraphs []string) indexTimes {
	ctx := context.Background()
	var t indexTimes
	start := time.Now()
	var stored int
	for i, d := range docs {
		doc, _, err := lib.Add(ctx, knowledge.AddRequest{Collection: benchCollection, Name: fmt.Sprintf("doc-%05d.md", i), Data: []byte(d)})
		if err != nil {
			b.Fatalf("add %d: %v", i, err)
		}
		stored += doc.Passages
	}
	t.index = time.Since(start)
	if stored != len(paragraphs) {
		b.Fatalf("%d passages stored, want %d", stored, len(paragraphs))
	}
	for _, kind := range []struct {
		insert func(context.Context, int64, []bareRow) error
		took   *time.Duration
	}{{bare.plain, &t.bare}, {bare.indexed, &t.bareIndexed}} {
		start = time.Now()
		for i := range docs {
			rows := make([]bareRow, benchPerDoc)
			for j := range rows {
				text := paragraphs[i*benchPerDoc+j] + "."
				rows[j] = bareRow{ord: j, start: j * 400, end: j*400 + len(text), length: benchParaWords, heading: fmt.Sprintf("Part %d", j), text: text}
			}
			if err := kind.insert(ctx, int64(i+1), rows); err != nil {
				b.Fatalf("bare insert %d: %v", i, err)
			}
		}
		*kind.took = time.Since(start)
	}
	b.Logf("indexed %d passages in %v; bare inserts of the same rows took %v, with the database's own lexical index %v", stored,
		t.index.Round(time.Millisecond), t.bare.Round(time.Millisecond), t.bareIndexed.Round(time.Millisecond))
	return t
}

func benchRecall(b *testing.B, st store.Store, bare benchBare) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(1, 2))
	lib, err := knowledge.New(st, knowledge.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	docs, paragraphs, phrase := benchCorpus(r, benchPassages/benchPerDoc)
	took := benchIndex(b, lib, bare, docs, paragraphs)
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
		reportIndex(b, benchPassages, took)
	})
	benchEmbeddingsRecall(b, st, questions)
}

func quantile(d []time.Duration, q int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*q/100)]
}

// benchEmbeddingsServer is an OpenAI-compatible /v1/embeddings server on
// loopback that embeds texts as fakeEmbeddings does.
func benchEmbeddingsServer(b *testing.B) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Input []string `json:"input"`
			Model string   `json:"model"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Input) == 0 {
			http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
			return
		}
		type item struct {
			Object    string    `json:"object"`
			Index     int       `json:"index"`
			Embedding []float64 `json:"embedding"`
		}
		resp := struct {
			Object string `json:"object"`
			Data   []item `json:"data"`
			Model  string `json:"model"`
		}{Object: "list", Model: req.Model}
		for i, in := range req.Input {
			resp.Data = append(resp.Data, item{Object: "embedding", Index: i, Embedding: fakeVector(in)})
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(resp)
	}))
	b.Cleanup(srv.Close)
	return srv
}

// benchEmbeddingsRecall times Recall with embeddings over the library's
// passages (all embedded by the fake server before timing, when the first
// recall finds them without vectors) against the request for the
// question's vector alone, through the same client to the same server.
func benchEmbeddingsRecall(b *testing.B, st store.Store, questions []string) {
	ctx := context.Background()
	srv := benchEmbeddingsServer(b)
	cfg := knowledge.Config{Logger: slog.New(slog.DiscardHandler), EmbeddingsURL: srv.URL + "/v1", EmbeddingsModel: "bench-fake"}
	lib, err := knowledge.New(st, cfg)
	if err != nil {
		b.Fatal(err)
	}
	scope := knowledge.Scope{SessionID: "bench", UserKey: "web:bench"}
	start := time.Now()
	if f, err := lib.Recall(ctx, knowledge.Query{Text: questions[0], Scope: scope}); err != nil || f.EmbeddingsError != "" {
		b.Fatalf("first recall with embeddings: %v %s", err, f.EmbeddingsError)
	}
	b.Logf("embedded every passage in %v", time.Since(start).Round(time.Millisecond))
	client := embeddings.New(embeddings.Config{URL: srv.URL + "/v1", Model: cfg.EmbeddingsModel, Timeout: time.Minute, HTTPClient: http.DefaultClient})
	b.Run(fmt.Sprintf("embeddings-passages=%d", benchPassages), func(b *testing.B) {
		n := max(b.N/2, 50)
		var found, semantic int
		call := func(i int) error {
			_, err := client.Embed(ctx, []string{questions[i%len(questions)]})
			return err
		}
		recall := func(i int) error {
			f, err := lib.Recall(ctx, knowledge.Query{Text: questions[i%len(questions)], Scope: scope})
			if err == nil && f.EmbeddingsError != "" {
				err = fmt.Errorf("embeddings failed: %s", f.EmbeddingsError)
			}
			found += len(f.Passages)
			for _, p := range f.Passages {
				if p.Evidence.Embeddings != nil && p.Evidence.Embeddings.Rank > 0 {
					semantic++
				}
			}
			return err
		}
		b.ResetTimer()
		var callLat, recallLat []time.Duration
		for _, phase := range []string{"call", "recall", "recall", "call"} {
			op, lat := call, &callLat
			if phase == "recall" {
				op, lat = recall, &recallLat
			}
			for i := range n / 2 {
				t0 := time.Now()
				if err := op(i); err != nil {
					b.Fatal(err)
				}
				*lat = append(*lat, time.Since(t0))
			}
		}
		b.StopTimer()
		rp, cp := quantile(recallLat, 99), quantile(callLat, 99)
		b.ReportMetric(float64(rp)/float64(cp), "p99-ratio")
		b.ReportMetric(float64(rp.Microseconds()), "recall-p99-µs")
		b.ReportMetric(float64(quantile(recallLat, 50).Microseconds()), "recall-p50-µs")
		b.ReportMetric(float64(cp.Microseconds()), "embed-call-p99-µs")
		b.ReportMetric(float64(found)/float64(len(recallLat)), "recalled/op")
		b.ReportMetric(float64(semantic)/float64(len(recallLat)), "by-embeddings/op")
	})
}
