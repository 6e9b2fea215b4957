// Package embeddings is the client of an OpenAI-compatible /embeddings
// endpoint that memory and the knowledge library share: unit vectors of
// texts in batches, a cached background of everyday sentences, and the
// vector encoding the stores keep opaque.
package embeddings

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// Config says which endpoint and model to call.
type Config struct {
	// URL is the base URL of the API (e.g. https://api.openai.com/v1); a
	// URL ending in /embeddings is accepted too.
	URL    string
	APIKey string
	Model  string
	// Timeout bounds one request.
	Timeout    time.Duration
	HTTPClient *http.Client
}

// Client calls an OpenAI-compatible /embeddings endpoint.
type Client struct {
	svc     openai.EmbeddingService
	model   string
	timeout time.Duration

	mu sync.Mutex
	bg [][]float32 // BackgroundTexts, embedded once
}

// New returns a client of cfg's endpoint.
func New(cfg Config) *Client {
	base := strings.TrimSuffix(strings.TrimRight(cfg.URL, "/"), "/embeddings")
	return &Client{
		// Built from explicit options only: openai.NewClient would read
		// OPENAI_* variables from the environment.
		svc: openai.NewEmbeddingService(
			option.WithHTTPClient(cfg.HTTPClient),
			option.WithBaseURL(base),
			option.WithAPIKey(cfg.APIKey),
			option.WithMaxRetries(1),
		),
		model:   cfg.Model,
		timeout: cfg.Timeout,
	}
}

// Model names the model the vectors are made by.
func (e *Client) Model() string { return e.model }

// batch is the most inputs sent in one request.
const batch = 128

// Embed returns unit vectors of texts, in order.
func (e *Client) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, 0, len(texts))
	for start := 0; start < len(texts); start += batch {
		vs, err := e.embedOnce(ctx, texts[start:min(start+batch, len(texts))])
		if err != nil {
			return nil, err
		}
		out = append(out, vs...)
	}
	return out, nil
}

func (e *Client) embedOnce(ctx context.Context, texts []string) ([][]float32, error) {
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

// BackgroundTexts are everyday sentences about nothing in particular: a
// text must be closer to a question than they are to count as close. They
// keep the background meaningful when there is little else to compare.
var BackgroundTexts = []string{
	"The weather was mild today.",
	"I had a sandwich for lunch.",
	"The meeting moved to Thursday afternoon.",
	"Thanks, that sounds good.",
	"Can you help me with something?",
	"Here is the document you asked for.",
	"The train was late this morning.",
	"Let me think about it and get back to you.",
}

// Background returns the vectors of BackgroundTexts, embedded on first use.
func (e *Client) Background(ctx context.Context) ([][]float32, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.bg != nil {
		return e.bg, nil
	}
	bg, err := e.Embed(ctx, BackgroundTexts)
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

// Dot is the cosine similarity of two unit vectors; 0 when their sizes
// differ.
func Dot(a, b []float32) float64 {
	if len(a) != len(b) {
		return 0
	}
	var s float32
	for i := range a {
		s += a[i] * b[i]
	}
	return float64(s)
}

// Encode stores a vector as little-endian float32s.
func Encode(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// Decode reverses Encode; what is not a whole number of float32s is nil.
func Decode(b []byte) []float32 {
	if len(b) == 0 || len(b)%4 != 0 {
		return nil
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}
