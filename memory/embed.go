package memory

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// embedder calls an OpenAI-compatible /embeddings endpoint.
type embedder struct {
	svc     openai.EmbeddingService
	model   string
	timeout time.Duration

	mu sync.Mutex
	bg [][]float32 // the background sentences, embedded once
}

func newEmbedder(cfg Config) *embedder {
	base := strings.TrimSuffix(strings.TrimRight(cfg.EmbeddingsURL, "/"), "/embeddings")
	return &embedder{
		// Built from explicit options only: openai.NewClient would read
		// OPENAI_* variables from the environment.
		svc: openai.NewEmbeddingService(
			option.WithHTTPClient(cfg.HTTPClient),
			option.WithBaseURL(base),
			option.WithAPIKey(cfg.EmbeddingsAPIKey),
			option.WithMaxRetries(1),
		),
		model:   cfg.EmbeddingsModel,
		timeout: cfg.EmbeddingsTimeout,
	}
}

// embedBatch is the most inputs sent in one request.
const embedBatch = 128

// embed returns unit vectors of texts, in order.
func (e *embedder) embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, 0, len(texts))
	for start := 0; start < len(texts); start += embedBatch {
		batch := texts[start:min(start+embedBatch, len(texts))]
		vs, err := e.embedOnce(ctx, batch)
		if err != nil {
			return nil, err
		}
		out = append(out, vs...)
	}
	return out, nil
}

func (e *embedder) embedOnce(ctx context.Context, texts []string) ([][]float32, error) {
	ctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	resp, err := e.svc.New(ctx, openai.EmbeddingNewParams{
		Input:          openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: texts},
		Model:          e.model,
		EncodingFormat: openai.EmbeddingNewParamsEncodingFormatFloat,
	})
	if err != nil {
		return nil, fmt.Errorf("embeddings: %w", err)
	}
	out := make([][]float32, len(texts))
	for _, d := range resp.Data {
		if d.Index < 0 || int(d.Index) >= len(texts) || len(d.Embedding) == 0 {
			return nil, fmt.Errorf("embeddings: bad item %d of %d", d.Index, len(texts))
		}
		out[d.Index] = unit(d.Embedding)
	}
	for i, v := range out {
		if v == nil {
			return nil, fmt.Errorf("embeddings: no vector for input %d of %d", i, len(texts))
		}
	}
	return out, nil
}

// backgroundTexts are everyday sentences about nothing in particular: with
// the user's other facts they are the background a fact must be closer to
// the question than. They keep the background meaningful for a user with
// one or two facts.
var backgroundTexts = []string{
	"The weather was mild today.",
	"I had a sandwich for lunch.",
	"The meeting moved to Thursday afternoon.",
	"Thanks, that sounds good.",
	"Can you help me with something?",
	"Here is the document you asked for.",
	"The train was late this morning.",
	"Let me think about it and get back to you.",
}

func (e *embedder) background(ctx context.Context) ([][]float32, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.bg != nil {
		return e.bg, nil
	}
	bg, err := e.embed(ctx, backgroundTexts)
	if err != nil {
		return nil, err
	}
	e.bg = bg
	return bg, nil
}

func unit(v []float64) []float32 {
	var n float64
	for _, x := range v {
		n += x * x
	}
	n = math.Sqrt(n)
	if n == 0 {
		n = 1
	}
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x / n)
	}
	return out
}

func dot(a, b []float32) float64 {
	if len(a) != len(b) {
		return 0
	}
	var s float32
	for i := range a {
		s += a[i] * b[i]
	}
	return float64(s)
}

// encodeVector stores a vector as little-endian float32s.
func encodeVector(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

func decodeVector(b []byte) []float32 {
	if len(b) == 0 || len(b)%4 != 0 {
		return nil
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}
