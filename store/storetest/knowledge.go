package storetest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/store"
)

// Conformance of the knowledge rows: documents keyed by (collection,
// name) with a hash that makes a re-add a no-op, passages replaced whole,
// the lexical index and the library's counts, scoping by collection, and
// vectors.

func testKnowledge(t *testing.T, h Harness) {
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, k store.Knowledge)
	}{
		{"PutReplaceDelete", testKnowledgePut},
		{"MatchByCollection", testKnowledgeMatch},
		{"ReplaceIsAtomic", testKnowledgeAtomic},
		{"Vectors", testKnowledgeVectors},
		{"CountsOfManyDocuments", testKnowledgeCounts},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := h.New(t)
			t.Cleanup(func() { st.Close() })
			k, err := store.KnowledgeOf(st)
			if err != nil {
				t.Fatal(err)
			}
			tc.fn(t, k)
		})
	}
}

var knowT0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// knowDoc is a document of n passages, each holding words.
func knowDoc(collection, name, hash string, n int, words ...string) store.KnowledgeDocumentPut {
	p := store.KnowledgeDocumentPut{Now: knowT0, Doc: store.KnowledgeDocument{Collection: collection, Name: name, Title: "T " + name,
		MediaType: "text/markdown", Source: "test", Hash: hash, Size: int64(100 * n)}}
	for i := range n {
		terms := append([]string{fmt.Sprintf("para%d", i)}, words...)
		p.Passages = append(p.Passages, store.KnowledgePassage{Heading: []string{"Top", fmt.Sprintf("Part %d", i)},
			Text: strings.Join(terms, " "), Start: 100 * i, End: 100*i + 50, Terms: terms})
	}
	return p
}

func testKnowledgePut(t *testing.T, k store.Knowledge) {
	ctx := context.Background()
	doc, changed, err := k.PutKnowledgeDocument(ctx, knowDoc("shared", "a.md", "h1", 2, "leave", "annual", "leave"))
	if err != nil || !changed || doc.ID == 0 || doc.Version != 1 || doc.Passages != 2 || !doc.IndexedAt.Equal(knowT0) {
		t.Fatalf("first put: %+v %v %v", doc, changed, err)
	}
	again, changed, err := k.PutKnowledgeDocument(ctx, knowDoc("shared", "a.md", "h1", 3, "other"))
	if err != nil || changed || again.ID != doc.ID || again.Version != 1 || again.Passages != 2 {
		t.Fatalf("same hash: %+v %v %v", again, changed, err)
	}
	stats, err := k.KnowledgeTermStats(ctx, []string{"leave", "annual", "other", "nowhere"})
	if err != nil || stats.Passages != 2 || stats.Terms != 8 || stats.DF["leave"] != 2 || stats.DF["annual"] != 2 || stats.DF["other"] != 0 || stats.DF["nowhere"] != 0 {
		t.Fatalf("stats after the first put: %+v %v", stats, err)
	}
	ps, err := k.KnowledgePassages(ctx, doc.ID)
	if err != nil || len(ps) != 2 || ps[1].Ord != 1 || !slices.Equal(ps[1].Heading, []string{"Top", "Part 1"}) || ps[1].Start != 100 || ps[1].End != 150 ||
		ps[1].Length != 4 || ps[1].Text != "para1 leave annual leave" || ps[1].DocumentID != doc.ID || ps[1].Collection != "shared" {
		t.Fatalf("passages: %+v %v", ps, err)
	}
	// A changed file replaces every passage; the version rises.
	later := knowDoc("shared", "a.md", "h2", 3, "sick")
	later.Now = knowT0.Add(time.Hour)
	v2, changed, err := k.PutKnowledgeDocument(ctx, later)
	if err != nil || !changed || v2.ID != doc.ID || v2.Version != 2 || v2.Passages != 3 || !v2.Created.Equal(knowT0) || !v2.IndexedAt.Equal(later.Now) {
		t.Fatalf("changed put: %+v %v %v", v2, changed, err)
	}
	stats, _ = k.KnowledgeTermStats(ctx, []string{"leave", "sick", "para0"})
	if stats.Passages != 3 || stats.Terms != 6 || stats.DF["leave"] != 0 || stats.DF["sick"] != 3 || stats.DF["para0"] != 1 {
		t.Fatalf("stats after the change: %+v", stats)
	}
	if hits, _ := k.KnowledgeMatch(ctx, store.KnowledgeMatch{Collections: []string{"shared"}, Terms: []string{"leave"}, Limit: 10}); len(hits) != 0 {
		t.Fatalf("the old passages are still found: %+v", hits)
	}
	k.PutKnowledgeDocument(ctx, knowDoc("chat:s1", "b.txt", "hb", 1, "sick"))
	docs, err := k.KnowledgeDocuments(ctx, "")
	if err != nil || len(docs) != 2 || docs[0].Collection != "chat:s1" || docs[1].Name != "a.md" {
		t.Fatalf("documents: %+v %v", docs, err)
	}
	if docs, _ := k.KnowledgeDocuments(ctx, "shared"); len(docs) != 1 {
		t.Fatalf("shared documents: %+v", docs)
	}
	cols, err := k.KnowledgeCollections(ctx)
	if err != nil || len(cols) != 2 || cols[1].Name != "shared" || cols[1].Version != 2 || cols[1].Documents != 1 || cols[1].Passages != 3 {
		t.Fatalf("collections: %+v %v", cols, err)
	}
	if ok, err := k.DeleteKnowledgeDocument(ctx, "shared", "a.md", knowT0.Add(2*time.Hour)); err != nil || !ok {
		t.Fatalf("delete: %v %v", ok, err)
	}
	if ok, err := k.DeleteKnowledgeDocument(ctx, "shared", "a.md", knowT0.Add(2*time.Hour)); err != nil || ok {
		t.Fatalf("second delete: %v %v", ok, err)
	}
	if _, found, err := k.GetKnowledgeDocument(ctx, "shared", "a.md"); err != nil || found {
		t.Fatalf("deleted document found: %v %v", found, err)
	}
	stats, _ = k.KnowledgeTermStats(ctx, []string{"sick", "para2"})
	if stats.Passages != 1 || stats.Terms != 2 || stats.DF["sick"] != 1 || stats.DF["para2"] != 0 {
		t.Fatalf("stats after the delete: %+v", stats)
	}
	if v, _ := k.KnowledgeCollectionVersions(ctx, []string{"shared", "chat:s1", "user:none"}); v["shared"] != 3 || v["chat:s1"] != 1 || len(v) != 2 {
		t.Fatalf("versions: %v", v)
	}
}

func testKnowledgeMatch(t *testing.T, k store.Knowledge) {
	ctx := context.Background()
	k.PutKnowledgeDocument(ctx, knowDoc("shared", "s.md", "1", 2, "vacation"))
	k.PutKnowledgeDocument(ctx, knowDoc("chat:a", "a.md", "2", 1, "vacation", "rare"))
	k.PutKnowledgeDocument(ctx, knowDoc("chat:b", "b.md", "3", 3, "vacation", "rare"))
	hits, err := k.KnowledgeMatch(ctx, store.KnowledgeMatch{Collections: []string{"shared", "chat:a"}, Terms: []string{"vacation", "rare"},
		Weights: []float64{0.1, 5}, Limit: 10})
	if err != nil || len(hits) != 3 {
		t.Fatalf("match: %+v %v", hits, err)
	}
	for _, h := range hits {
		if h.Passage.Collection == "chat:b" || h.Document.Collection != h.Passage.Collection || h.Document.ID != h.Passage.DocumentID || h.Document.Name == "" {
			t.Fatalf("hit out of scope or without its document: %+v", h)
		}
	}
	if hits[0].Document.Name != "a.md" {
		t.Fatalf("the passage holding the rare term is not first: %+v", hits[0])
	}
	// Counts that make a term common send the store down the other
	// path (combinations of the common terms, each query stopping at the
	// limit): the same passages in the same order, at every limit.
	ids := func(hs []store.KnowledgeHit) []int64 {
		out := make([]int64, len(hs))
		for i, h := range hs {
			out[i] = h.Passage.ID
		}
		return out
	}
	for _, df := range [][]int64{{5000, 5000}, {5000, 1}, {1, 5000}} {
		for _, limit := range []int{1, 2, 3, 10} {
			m := store.KnowledgeMatch{Collections: []string{"shared", "chat:a"}, Terms: []string{"vacation", "rare"}, Weights: []float64{0.1, 5}, Limit: limit}
			want, err := k.KnowledgeMatch(ctx, m)
			if err != nil {
				t.Fatal(err)
			}
			m.DF = df
			got, err := k.KnowledgeMatch(ctx, m)
			if err != nil || !slices.Equal(ids(got), ids(want)) || len(want) != min(limit, 3) {
				t.Fatalf("counts %v, limit %d: %v %v, want %v", df, limit, ids(got), err, ids(want))
			}
		}
	}
	if hits, _ := k.KnowledgeMatch(ctx, store.KnowledgeMatch{Collections: []string{"shared", "chat:a"}, Terms: []string{"vacation"}, Limit: 2}); len(hits) != 2 {
		t.Fatalf("limit: %d hits", len(hits))
	}
	if hits, _ := k.KnowledgeMatch(ctx, store.KnowledgeMatch{Collections: []string{"chat:c"}, Terms: []string{"vacation"}, Limit: 10}); len(hits) != 0 {
		t.Fatalf("another chat's passages: %+v", hits)
	}
	if _, err := k.KnowledgeMatch(ctx, store.KnowledgeMatch{Collections: []string{"shared"}, Terms: []string{`a" OR "b`}, Limit: 1}); err == nil {
		t.Fatal("a term with a quote was taken")
	}
}

// A reader never sees half a replacement: every read of the document's
// passages finds all of one version.
func testKnowledgeAtomic(t *testing.T, k store.Knowledge) {
	ctx := context.Background()
	sizes := []int{5, 9}
	if _, _, err := k.PutKnowledgeDocument(ctx, knowDoc("shared", "d.md", "v0", sizes[0], "zebra")); err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	var reads atomic.Int64
	for range 3 {
		wg.Go(func() {
			for !stop.Load() {
				hits, err := k.KnowledgeMatch(ctx, store.KnowledgeMatch{Collections: []string{"shared"}, Terms: []string{"zebra"}, Limit: 100})
				if err != nil {
					t.Error(err)
					return
				}
				if n := len(hits); n != sizes[0] && n != sizes[1] {
					t.Errorf("a read found %d passages: half a replacement", n)
					return
				}
				for _, h := range hits {
					if h.Document.Passages != len(hits) {
						t.Errorf("%d passages of a document that says %d", len(hits), h.Document.Passages)
						return
					}
				}
				reads.Add(1)
			}
		})
	}
	for i := 1; i <= 20; i++ {
		if _, _, err := k.PutKnowledgeDocument(ctx, knowDoc("shared", "d.md", fmt.Sprint("v", i), sizes[i%2], "zebra")); err != nil {
			t.Fatal(err)
		}
	}
	stop.Store(true)
	wg.Wait()
	if reads.Load() == 0 {
		t.Fatal("no read ran")
	}
}

func testKnowledgeVectors(t *testing.T, k store.Knowledge) {
	ctx := context.Background()
	k.PutKnowledgeDocument(ctx, knowDoc("shared", "v.md", "1", 3, "word"))
	hits, version, err := k.KnowledgeVectors(ctx, "shared", "m1")
	if err != nil || len(hits) != 3 || version != 1 || hits[0].Passage.Vector != nil || hits[0].Document.Name != "v.md" {
		t.Fatalf("vectors before: %+v %d %v", hits, version, err)
	}
	ids := []int64{hits[0].Passage.ID, hits[2].Passage.ID, 1 << 40}
	if err := k.SetKnowledgeVectors(ctx, "m1", ids, [][]byte{{1, 2, 3, 4}, {5, 6, 7, 8}, {9, 9, 9, 9}}); err != nil {
		t.Fatal(err)
	}
	hits, _, _ = k.KnowledgeVectors(ctx, "shared", "m1")
	if string(hits[0].Passage.Vector) != "\x01\x02\x03\x04" || hits[1].Passage.Vector != nil || string(hits[2].Passage.Vector) != "\x05\x06\x07\x08" {
		t.Fatalf("vectors after: %+v", hits)
	}
	if hits, _, _ := k.KnowledgeVectors(ctx, "shared", "m2"); hits[0].Passage.Vector != nil {
		t.Fatal("a vector of another model was returned")
	}
	if hits, version, err := k.KnowledgeVectors(ctx, "chat:none", "m1"); err != nil || len(hits) != 0 || version != 0 {
		t.Fatalf("an unknown collection: %+v %d %v", hits, version, err)
	}
	if err := k.SetKnowledgeVectors(ctx, "m1", ids[:1], nil); err == nil {
		t.Fatal("ids without vectors were taken")
	}
}

// The term counts stay exact over many documents (a store may keep them
// in batches and fold them, as Postgres does every 32 documents), through
// replacements and deletions.
func testKnowledgeCounts(t *testing.T, k store.Knowledge) {
	ctx := context.Background()
	const docs = 75
	for i := range docs {
		// Every document: 2 passages holding "common", the even ones a
		// third holding "even" twice.
		n, words := 2, []string{"common"}
		if i%2 == 0 {
			n, words = 3, []string{"common", "even", "even"}
		}
		if _, _, err := k.PutKnowledgeDocument(ctx, knowDoc("shared", fmt.Sprintf("doc%02d.md", i), "h", n, words...)); err != nil {
			t.Fatal(err)
		}
	}
	check := func(when string, passages, common, even, para2 int64) {
		t.Helper()
		stats, err := k.KnowledgeTermStats(ctx, []string{"common", "even", "para2", "none"})
		if err != nil || stats.Passages != passages || stats.DF["common"] != common || stats.DF["even"] != even || stats.DF["para2"] != para2 ||
			len(stats.DF) != 3 {
			t.Fatalf("%s: %+v %v, want %d passages, common %d, even %d, para2 %d", when, stats, err, passages, common, even, para2)
		}
	}
	// 38 even documents of 3 passages, 37 odd ones of 2.
	check("after the puts", 38*3+37*2, 38*3+37*2, 38*3, 38)
	// Replace 10 even documents by odd-shaped ones and delete 5 odd ones.
	for i := 0; i < 20; i += 2 {
		if _, _, err := k.PutKnowledgeDocument(ctx, knowDoc("shared", fmt.Sprintf("doc%02d.md", i), "h2", 2, "common")); err != nil {
			t.Fatal(err)
		}
	}
	for i := 1; i < 10; i += 2 {
		if ok, err := k.DeleteKnowledgeDocument(ctx, "shared", fmt.Sprintf("doc%02d.md", i), knowT0); err != nil || !ok {
			t.Fatalf("delete: %v %v", ok, err)
		}
	}
	check("after replacing and deleting", 28*3+42*2, 28*3+42*2, 28*3, 28)
	for i := range docs {
		k.DeleteKnowledgeDocument(ctx, "shared", fmt.Sprintf("doc%02d.md", i), knowT0)
	}
	stats, err := k.KnowledgeTermStats(ctx, []string{"common", "even"})
	if err != nil || stats.Passages != 0 || stats.Terms != 0 || len(stats.DF) != 0 {
		t.Fatalf("after deleting all: %+v %v", stats, err)
	}
	if hits, err := k.KnowledgeMatch(ctx, store.KnowledgeMatch{Collections: []string{"shared"}, Terms: []string{"common"}, Limit: 10}); err != nil || len(hits) != 0 {
		t.Fatalf("passages left: %d %v", len(hits), err)
	}
}
