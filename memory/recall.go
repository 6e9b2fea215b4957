package memory

import (
	"cmp"
	"context"
	"math"
	"slices"
	"strings"

	"github.com/gatehouse/gatehouse/store"
)

// Recall methods.
const (
	MethodLexical    = "lexical"
	MethodEmbeddings = "embeddings"
)

// Scored is a recalled fact with the parts of its evidence.
type Scored struct {
	Fact Fact `json:"fact"`
	// Closeness is how much closer in meaning the fact is to the question
	// than the background is, from 0 (no closer) to 1.
	Closeness float64 `json:"closeness"`
	// Coverage is the share of the question's content words the fact
	// holds, from 0 to 1.
	Coverage float64 `json:"coverage"`
	// Evidence is Closeness + Coverage: what the floor is compared with.
	Evidence float64 `json:"evidence"`
	// Method says how closeness was measured: "embeddings" or "lexical".
	Method string `json:"method"`
}

// BM25 parameters: term-frequency saturation and length normalisation.
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// Recall returns the user's facts that bear on question, strongest
// evidence first, at most limit (0: Config.RecallLimit). A fact is returned
// only when its evidence — closeness plus coverage — clears Config.Floor.
//
// Closeness, with embeddings configured: the fact's cosine similarity to
// the question minus the background's (the mean over the user's other
// facts and a few everyday sentences), divided by what the background
// leaves (1 − background). Without embeddings, or when the endpoint fails:
// the fact's BM25 score for the question's content words, over the user's
// facts, minus the mean score of the user's other facts, divided by the
// score of an ideal fact holding each of the question's words once (so a
// word no fact holds still counts against every fact).
//
// Coverage, either way: the share of the question's distinct content words
// (stop words dropped, plurals folded) that the fact holds.
func (m *Memory) Recall(ctx context.Context, userKey, question string, limit int) ([]Scored, error) {
	if err := checkUser(userKey); err != nil {
		return nil, err
	}
	if limit <= 0 {
		limit = m.cfg.RecallLimit
	}
	question = strings.TrimSpace(question)
	if question == "" {
		return nil, nil
	}
	terms, _ := contentTerms(question)
	if m.emb != nil {
		scored, err := m.semantic(ctx, userKey, question, terms)
		if err == nil {
			return m.pick(ctx, userKey, scored, limit)
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		m.cfg.Logger.Warn("memory: embeddings failed; recalling lexically", "user", userKey, "err", err)
	}
	scored, err := m.lexical(ctx, userKey, terms)
	if err != nil {
		return nil, err
	}
	return m.pick(ctx, userKey, scored, limit)
}

// pick keeps what clears the floor, best first, and loads the facts.
func (m *Memory) pick(ctx context.Context, userKey string, scored []Scored, limit int) ([]Scored, error) {
	scored = slices.DeleteFunc(scored, func(s Scored) bool { return s.Evidence < m.cfg.Floor })
	slices.SortFunc(scored, func(a, b Scored) int {
		return cmp.Or(cmp.Compare(b.Evidence, a.Evidence), cmp.Compare(b.Fact.ID, a.Fact.ID))
	})
	if len(scored) > limit {
		scored = scored[:limit]
	}
	if len(scored) == 0 {
		return nil, nil
	}
	ids := make([]int64, len(scored))
	for i, s := range scored {
		ids[i] = s.Fact.ID
	}
	facts, err := m.st.MemoryFactsByID(ctx, userKey, ids)
	if err != nil {
		return nil, err
	}
	byID := make(map[int64]Fact, len(facts))
	for _, f := range facts {
		byID[f.ID] = f
	}
	out := scored[:0]
	for _, s := range scored {
		if f, ok := byID[s.Fact.ID]; ok { // forgotten meanwhile: dropped
			s.Fact = f
			out = append(out, s)
		}
	}
	return out, nil
}

func clamp01(x float64) float64 { return max(0, min(1, x)) }

// lexical scores the facts holding any of the question's terms by BM25;
// the others have no evidence. It does not read the postings that cannot
// matter: the commonest terms, as long as a fact holding only those could
// not clear the floor however often it held them, are read only for the
// facts that hold a rarer term (max-score pruning). The background mean
// counts the facts left out at one average occurrence of each such term.
func (m *Memory) lexical(ctx context.Context, userKey string, terms []string) ([]Scored, error) {
	if len(terms) == 0 {
		return nil, nil
	}
	stats, err := m.st.MemoryTermStats(ctx, userKey, terms)
	if err != nil {
		return nil, err
	}
	n := stats.Facts
	for _, d := range stats.DF {
		n = max(n, d) // the reads are separate snapshots; stay consistent
	}
	if n == 0 || len(stats.DF) == 0 {
		return nil, nil
	}
	avgdl := max(float64(stats.Terms)/float64(n), 1)
	idf := func(t string) float64 {
		d := float64(stats.DF[t])
		return math.Log(1 + (float64(n)-d+0.5)/(d+0.5))
	}
	var ideal float64
	var held []string // the question's terms some fact holds, commonest first
	for _, t := range terms {
		ideal += idf(t)
		if stats.DF[t] > 0 {
			held = append(held, t)
		}
	}
	slices.SortFunc(held, func(a, b string) int { return cmp.Or(cmp.Compare(idf(a), idf(b)), strings.Compare(a, b)) })
	var cheap []string
	if m.cfg.Floor > 0 {
		var sum float64
		for k, t := range held {
			sum += idf(t)
			// The most a fact holding only held[:k+1] can have: each term's
			// BM25 part is below idf × (k1+1).
			if min(1, (bm25K1+1)*sum/ideal)+float64(k+1)/float64(len(terms)) >= m.cfg.Floor {
				break
			}
			cheap = held[:k+1]
		}
	}
	essential := held[len(cheap):]
	if len(essential) == 0 {
		return nil, nil // no fact can clear the floor
	}
	postings, err := m.st.MemoryPostings(ctx, userKey, essential, cheap)
	if err != nil {
		return nil, err
	}
	type acc struct {
		score float64
		held  int
	}
	facts := map[int64]*acc{}
	var order []int64
	seen := map[string]int{} // postings read of each cheap term
	for _, p := range postings {
		a := facts[p.FactID]
		if a == nil {
			a = &acc{}
			facts[p.FactID] = a
			order = append(order, p.FactID)
		}
		tf := float64(p.TF)
		a.score += idf(p.Term) * tf * (bm25K1 + 1) / (tf + bm25K1*(1-bm25B+bm25B*float64(p.Length)/avgdl))
		a.held++
		seen[p.Term]++
	}
	var total float64
	for _, a := range facts {
		total += a.score
	}
	for _, t := range cheap {
		total += idf(t) * float64(max(stats.DF[t]-seen[t], 0))
	}
	out := make([]Scored, 0, len(order))
	for _, id := range order {
		a := facts[id]
		var bg float64
		if n > 1 {
			bg = (total - a.score) / float64(n-1)
		}
		c := clamp01((a.score - bg) / ideal)
		w := float64(a.held) / float64(len(terms))
		out = append(out, Scored{Fact: Fact{ID: id}, Closeness: c, Coverage: w, Evidence: c + w, Method: MethodLexical})
	}
	return out, nil
}

// semantic scores every live fact of the user by embeddings. Facts without
// a vector of the configured model are embedded now (in the same request
// as the question) and their vectors kept.
func (m *Memory) semantic(ctx context.Context, userKey, question string, terms []string) ([]Scored, error) {
	vecs, err := m.st.MemoryVectors(ctx, userKey, m.cfg.EmbeddingsModel)
	if err != nil || len(vecs) == 0 {
		return nil, err
	}
	postings, err := m.st.MemoryPostings(ctx, userKey, terms, nil)
	if err != nil {
		return nil, err
	}
	decoded := make([][]float32, len(vecs))
	texts := []string{question}
	var missing []int
	for i, v := range vecs {
		decoded[i] = decodeVector(v.Vector)
		if decoded[i] == nil {
			missing = append(missing, i)
			texts = append(texts, v.Text)
		}
	}
	got, err := m.emb.Embed(ctx, texts)
	if err != nil {
		return nil, err
	}
	q := got[0]
	for j, i := range missing {
		decoded[i] = got[j+1]
	}
	// A vector of another size was made by another model of the same name:
	// embed those facts again.
	var stale []int
	var staleTexts []string
	for i, d := range decoded {
		if len(d) != len(q) {
			stale = append(stale, i)
			staleTexts = append(staleTexts, vecs[i].Text)
		}
	}
	if len(stale) > 0 {
		again, err := m.emb.Embed(ctx, staleTexts)
		if err != nil {
			return nil, err
		}
		for j, i := range stale {
			decoded[i] = again[j]
		}
		missing = append(missing, stale...)
	}
	var upd []store.MemoryVector
	for _, i := range missing {
		upd = append(upd, store.MemoryVector{FactID: vecs[i].FactID, Text: vecs[i].Text, Model: m.cfg.EmbeddingsModel, Vector: encodeVector(decoded[i])})
	}
	if len(upd) > 0 {
		if err := m.st.SetMemoryVectors(ctx, upd); err != nil {
			m.cfg.Logger.Warn("memory: keep fact vectors", "user", userKey, "err", err)
		}
	}
	bg, err := m.emb.Background(ctx)
	if err != nil {
		return nil, err
	}
	held := map[int64]int{}
	for _, p := range postings {
		held[p.FactID]++
	}
	cos := make([]float64, len(vecs))
	var sum, bgSum float64
	for i := range vecs {
		cos[i] = dot(q, decoded[i])
		sum += cos[i]
	}
	for _, v := range bg {
		bgSum += dot(q, v)
	}
	out := make([]Scored, 0, len(vecs))
	for i, v := range vecs {
		background := (sum - cos[i] + bgSum) / float64(len(vecs)-1+len(bg))
		var c, w float64
		if background < 1 {
			c = clamp01((cos[i] - background) / (1 - background))
		}
		if len(terms) > 0 {
			w = float64(held[v.FactID]) / float64(len(terms))
		}
		out = append(out, Scored{Fact: Fact{ID: v.FactID}, Closeness: c, Coverage: w, Evidence: c + w, Method: MethodEmbeddings})
	}
	return out, nil
}
