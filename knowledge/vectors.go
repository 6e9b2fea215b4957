package knowledge

import (
	"context"
	"sync"

	"github.com/gatehouse/gatehouse/internal/embeddings"
	"github.com/gatehouse/gatehouse/store"
)

// The embeddings retriever's index is an exact scan over unit vectors kept
// in memory, per collection, reloaded when the collection's version moves
// (one indexed read per recall says whether it did). No approximate index
// is needed at the sizes a team's library reaches: 100,000 passages of
// 1,536 dimensions are 600 MB and about 50 ms of dot products on one core,
// and pgvector is not to be had here; an exact scan also gives the same
// answer on both stores.

type vectorEntry struct {
	version int64
	hits    []store.KnowledgeHit
	vecs    [][]float32
}

type vectorCache struct {
	mu      sync.Mutex
	entries map[string]*vectorEntry
}

func newVectorCache() *vectorCache { return &vectorCache{entries: map[string]*vectorEntry{}} }

// vectorsOf returns the entries of collections (passages with their
// vectors), loading what moved. Passages without a vector of the model
// are embedded now and their vectors kept. The entries are shared: the
// caller reads them and changes nothing.
func (l *Library) vectorsOf(ctx context.Context, collections []string) ([]*vectorEntry, error) {
	versions, err := l.k.KnowledgeCollectionVersions(ctx, collections)
	if err != nil {
		return nil, err
	}
	var out []*vectorEntry
	for _, c := range collections {
		v, ok := versions[c]
		if !ok {
			continue // never written
		}
		l.vec.mu.Lock()
		e := l.vec.entries[c]
		l.vec.mu.Unlock()
		if e == nil || e.version != v {
			if e, err = l.loadVectors(ctx, c); err != nil {
				return nil, err
			}
			l.vec.mu.Lock()
			l.vec.entries[c] = e
			l.vec.mu.Unlock()
		}
		out = append(out, e)
	}
	return out, nil
}

func (l *Library) loadVectors(ctx context.Context, collection string) (*vectorEntry, error) {
	hits, version, err := l.k.KnowledgeVectors(ctx, collection, l.cfg.EmbeddingsModel)
	if err != nil {
		return nil, err
	}
	e := &vectorEntry{version: version, hits: hits, vecs: make([][]float32, len(hits))}
	var missing []int
	var texts []string
	for i, h := range hits {
		e.vecs[i] = embeddings.Decode(h.Passage.Vector)
		if e.vecs[i] == nil {
			missing = append(missing, i)
			texts = append(texts, embedText(h.Passage))
		}
		e.hits[i].Passage.Vector = nil // decoded; the bytes need not stay
	}
	if len(missing) > 0 {
		got, err := l.emb.Embed(ctx, texts)
		if err != nil {
			return nil, err
		}
		ids, enc := make([]int64, len(missing)), make([][]byte, len(missing))
		for j, i := range missing {
			e.vecs[i] = got[j]
			ids[j], enc[j] = hits[i].Passage.ID, embeddings.Encode(got[j])
		}
		if err := l.k.SetKnowledgeVectors(ctx, l.cfg.EmbeddingsModel, ids, enc); err != nil {
			l.cfg.Logger.Warn("knowledge: keep passage vectors", "collection", collection, "err", err)
		}
	}
	return e, nil
}
