package knowledge

import (
	"cmp"
	"context"
	"math"
	"slices"
	"strings"

	"github.com/gatehouse/gatehouse/internal/embeddings"
	"github.com/gatehouse/gatehouse/store"
)

// Query is a question and who asks it.
type Query struct {
	Text string
	Scope
}

// Recalled is a passage with its document and its evidence.
type Recalled struct {
	Passage  Passage  `json:"passage"`
	Document Document `json:"document"`
	Evidence Evidence `json:"evidence"`
}

// Evidence is what each retriever found for a passage, and their fusion.
type Evidence struct {
	// Lexical is the lexical retriever's, when it scored the passage.
	Lexical *LexicalEvidence `json:"lexical,omitempty"`
	// Embeddings is the embeddings retriever's, when it scored it.
	Embeddings *EmbeddingsEvidence `json:"embeddings,omitempty"`
	// Fused is the reciprocal-rank fusion of the retrievers whose floor
	// the passage cleared (0 when it cleared none).
	Fused float64 `json:"fused"`
}

// LexicalEvidence is a passage's BM25 evidence.
type LexicalEvidence struct {
	// Score is its BM25 score for the question; Background the score of
	// an average passage of the library.
	Score      float64 `json:"score"`
	Background float64 `json:"background"`
	// Closeness is (Score − Background) / the score of an ideal passage
	// holding each of the question's terms once, 0–1.
	Closeness float64 `json:"closeness"`
	// Coverage is the share of the question's content terms it holds.
	Coverage float64 `json:"coverage"`
	// Evidence is Closeness + Coverage: what LexicalFloor is compared
	// with.
	Evidence float64 `json:"evidence"`
	// Rank is its place among the passages that cleared the floor, from
	// 1 (0: under the floor).
	Rank int `json:"rank,omitempty"`
}

// EmbeddingsEvidence is a passage's similarity evidence.
type EmbeddingsEvidence struct {
	// Similarity is the cosine of its vector and the question's;
	// Background the mean over the other passages in scope and a few
	// everyday sentences.
	Similarity float64 `json:"similarity"`
	Background float64 `json:"background"`
	// Closeness is (Similarity − Background) / (1 − Background), 0–1:
	// what EmbeddingsFloor is compared with.
	Closeness float64 `json:"closeness"`
	Rank      int     `json:"rank,omitempty"`
}

// Found is what a recall found.
type Found struct {
	// Passages are the recalled passages, best first: those that cleared
	// a retriever's floor, fused by rank, at most MaxPassages within
	// TokenBudget.
	Passages []Recalled `json:"passages"`
	// Considered are every passage a retriever scored, kept or not, best
	// fused first (for the operator's "what would be recalled and why").
	Considered []Recalled `json:"considered"`
	// Terms are the question's content terms; EmbeddingsError says why
	// the embeddings retriever did not run, when it failed.
	Terms           []string `json:"terms"`
	EmbeddingsError string   `json:"embeddingsError,omitempty"`
}

// BM25 parameters, and the reciprocal-rank fusion constant.
const (
	bm25K1 = 1.2
	bm25B  = 0.75
	rrfK   = 60
)

// maxQueryTerms bounds the terms a question is looked up by.
const maxQueryTerms = 16

// Recall finds the passages of the scope's collections (the shared one,
// the chat's and the person's; never another chat's) that bear on the
// question. Each retriever keeps only the passages whose own evidence
// clears its floor; the survivors are fused by reciprocal rank. An
// unrelated question recalls nothing. When the embeddings endpoint fails,
// the lexical retriever answers alone (Found.EmbeddingsError says so).
func (l *Library) Recall(ctx context.Context, q Query) (Found, error) {
	var f Found
	question := strings.TrimSpace(q.Text)
	if question == "" {
		return f, nil
	}
	f.Terms = distinct(terms(question))
	if len(f.Terms) > maxQueryTerms {
		f.Terms = f.Terms[:maxQueryTerms]
	}
	scope := q.Collections()
	byID := map[int64]*Recalled{}
	var order []int64
	get := func(h store.KnowledgeHit) *Recalled {
		r := byID[h.Passage.ID]
		if r == nil {
			r = &Recalled{Passage: h.Passage, Document: h.Document}
			byID[h.Passage.ID] = r
			order = append(order, h.Passage.ID)
		}
		return r
	}
	if err := l.lexical(ctx, scope, f.Terms, get); err != nil {
		return f, err
	}
	if l.emb != nil {
		if err := l.semantic(ctx, scope, question, get); err != nil {
			if ctx.Err() != nil {
				return f, ctx.Err()
			}
			f.EmbeddingsError = err.Error()
			l.cfg.Logger.Warn("knowledge: embeddings failed; recalling lexically", "err", err)
		}
	}
	l.fuse(byID)
	for _, id := range order {
		f.Considered = append(f.Considered, *byID[id])
	}
	slices.SortStableFunc(f.Considered, func(a, b Recalled) int {
		return cmp.Or(cmp.Compare(b.Evidence.Fused, a.Evidence.Fused), cmp.Compare(a.Passage.ID, b.Passage.ID))
	})
	budget := l.cfg.TokenBudget
	for _, r := range f.Considered {
		if r.Evidence.Fused == 0 || len(f.Passages) == l.cfg.MaxPassages {
			break
		}
		if t := tokens(r.Passage.Text); t <= budget {
			f.Passages = append(f.Passages, r)
			budget -= t
		}
	}
	return f, nil
}

// tokens estimates a text's tokens (4 bytes each).
func tokens(s string) int { return (len(s) + 3) / 4 }

// fuse ranks each retriever's survivors by its evidence and sums their
// reciprocal ranks.
func (l *Library) fuse(byID map[int64]*Recalled) {
	var lex, sem []*Recalled
	for _, r := range byID {
		if e := r.Evidence.Lexical; e != nil && e.Evidence >= l.cfg.LexicalFloor {
			lex = append(lex, r)
		}
		if e := r.Evidence.Embeddings; e != nil && e.Closeness >= l.cfg.EmbeddingsFloor {
			sem = append(sem, r)
		}
	}
	slices.SortFunc(lex, func(a, b *Recalled) int {
		return cmp.Or(cmp.Compare(b.Evidence.Lexical.Evidence, a.Evidence.Lexical.Evidence), cmp.Compare(a.Passage.ID, b.Passage.ID))
	})
	slices.SortFunc(sem, func(a, b *Recalled) int {
		return cmp.Or(cmp.Compare(b.Evidence.Embeddings.Closeness, a.Evidence.Embeddings.Closeness), cmp.Compare(a.Passage.ID, b.Passage.ID))
	})
	for i, r := range lex {
		r.Evidence.Lexical.Rank = i + 1
		r.Evidence.Fused += 1.0 / float64(rrfK+i+1)
	}
	for i, r := range sem {
		r.Evidence.Embeddings.Rank = i + 1
		r.Evidence.Fused += 1.0 / float64(rrfK+i+1)
	}
}

// lexical scores by BM25 over the library's counts the passages the index
// finds for the question's terms. The index is asked only for the terms
// that matter: the commonest ones are left out while a passage holding
// only those could not clear the floor however often it held them
// (max-score pruning), though every term counts in the score and the
// coverage of the passages found.
func (l *Library) lexical(ctx context.Context, scope, qterms []string, get func(store.KnowledgeHit) *Recalled) error {
	if len(qterms) == 0 {
		return nil
	}
	stats, err := l.k.KnowledgeTermStats(ctx, qterms)
	if err != nil {
		return err
	}
	n := float64(stats.Passages)
	for _, d := range stats.DF {
		n = max(n, float64(d))
	}
	if n == 0 || len(stats.DF) == 0 {
		return nil
	}
	avgdl := max(float64(stats.Terms)/n, 1)
	idf := func(t string) float64 {
		d := float64(stats.DF[t])
		return math.Log(1 + (n-d+0.5)/(d+0.5))
	}
	var ideal, background float64
	var held []string // the terms some passage holds, commonest first
	for _, t := range qterms {
		ideal += idf(t)
		background += float64(stats.DF[t]) / n * idf(t)
		if stats.DF[t] > 0 {
			held = append(held, t)
		}
	}
	slices.SortFunc(held, func(a, b string) int { return cmp.Or(cmp.Compare(idf(a), idf(b)), strings.Compare(a, b)) })
	cheap := 0
	if l.cfg.LexicalFloor > 0 {
		var sum float64
		for k, t := range held {
			sum += idf(t)
			if min(1, (bm25K1+1)*sum/ideal)+float64(k+1)/float64(len(qterms)) >= l.cfg.LexicalFloor {
				break
			}
			cheap = k + 1
		}
	}
	essential := held[cheap:]
	if len(essential) == 0 {
		return nil // no passage can clear the floor
	}
	weights, dfs := make([]float64, len(essential)), make([]int64, len(essential))
	var cheapIDF float64
	for _, t := range held[:cheap] {
		cheapIDF += idf(t)
	}
	for i, t := range essential {
		weights[i], dfs[i] = idf(t), stats.DF[t]
	}
	// The index ranks the passages holding the essential terms by their
	// summed idf; a passage holding k of them of summed idf w, and at
	// best every cheap term as often as it likes, could not clear the
	// floor when the bound of max-score pruning above says so.
	var worth func(int, float64) bool
	if l.cfg.LexicalFloor > 0 {
		worth = func(k int, w float64) bool {
			return min(1, (bm25K1+1)*(w+cheapIDF)/ideal)+float64(k+cheap)/float64(len(qterms)) >= l.cfg.LexicalFloor
		}
	}
	hits, err := l.k.KnowledgeMatch(ctx, store.KnowledgeMatch{Collections: scope, Terms: essential, Weights: weights, DF: dfs,
		Limit: l.cfg.Candidates, Worth: worth})
	if err != nil {
		return err
	}
	counter := newTermCounter(qterms)
	tf := make([]int, len(qterms))
	for _, h := range hits {
		clear(tf)
		counter.count(h.Passage.Heading, h.Passage.Text, tf)
		var score float64
		var holds int
		for i, t := range qterms {
			if c := float64(tf[i]); c > 0 {
				holds++
				score += idf(t) * c * (bm25K1 + 1) / (c + bm25K1*(1-bm25B+bm25B*float64(h.Passage.Length)/avgdl))
			}
		}
		c := clamp01((score - background) / ideal)
		w := float64(holds) / float64(len(qterms))
		get(h).Evidence.Lexical = &LexicalEvidence{Score: score, Background: background, Closeness: c, Coverage: w, Evidence: c + w}
	}
	return nil
}

// semantic scores every passage in scope by its vector's similarity to the
// question's, against the background.
func (l *Library) semantic(ctx context.Context, scope []string, question string, get func(store.KnowledgeHit) *Recalled) error {
	entries, err := l.vectorsOf(ctx, scope)
	if err != nil {
		return err
	}
	total := 0
	for _, e := range entries {
		total += len(e.hits)
	}
	if total == 0 {
		return nil
	}
	qv, err := l.emb.Embed(ctx, []string{question})
	if err != nil {
		return err
	}
	bg, err := l.emb.Background(ctx)
	if err != nil {
		return err
	}
	// Every passage's similarity, and the best Candidates of them kept
	// in order as they come (most are under the worst kept).
	type scored struct {
		hit *store.KnowledgeHit
		cos float64
		at  int
	}
	k := l.cfg.Candidates
	best := make([]scored, 0, k+1)
	var sum, bgSum float64
	at := 0
	for _, e := range entries {
		for i, v := range e.vecs {
			c := embeddings.Dot(qv[0], v)
			sum += c
			if len(best) == k && c <= best[k-1].cos {
				at++
				continue
			}
			s := scored{&e.hits[i], c, at}
			j, _ := slices.BinarySearchFunc(best, s, func(a, b scored) int { return cmp.Or(cmp.Compare(b.cos, a.cos), cmp.Compare(a.at, b.at)) })
			best = slices.Insert(best, j, s)
			if len(best) > k {
				best = best[:k]
			}
			at++
		}
	}
	for _, v := range bg {
		bgSum += embeddings.Dot(qv[0], v)
	}
	for _, b := range best {
		background := (sum - b.cos + bgSum) / float64(total-1+len(bg))
		var c float64
		if background < 1 {
			c = clamp01((b.cos - background) / (1 - background))
		}
		get(*b.hit).Evidence.Embeddings = &EmbeddingsEvidence{Similarity: b.cos, Background: background, Closeness: c}
	}
	return nil
}

func clamp01(x float64) float64 { return max(0, min(1, x)) }
