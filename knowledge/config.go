package knowledge

import (
	"log/slog"
	"net/http"
	"time"
)

// Config configures the library. The zero value is usable: lexical recall
// only, no folder watched. The package reads no environment; cmd wires it.
type Config struct {
	// LexicalFloor is the evidence a passage needs from the lexical
	// retriever: closeness (how far its BM25 score stands above the
	// library's background, as a share of an ideal match of the
	// question, 0–1) plus coverage (the share of the question's content
	// words it holds, 0–1). Defaults to 1.0: a passage holding half the
	// question's words must also stand out by half an ideal match. A
	// negative floor keeps every candidate.
	LexicalFloor float64
	// EmbeddingsFloor is the closeness a passage needs from the
	// embeddings retriever: how much more similar to the question it is
	// than the background (the other passages in scope and a few everyday
	// sentences), as a share of what the background leaves, 0–1.
	// Defaults to 0.3. A negative floor keeps every candidate.
	EmbeddingsFloor float64
	// MaxPassages is how many passages a recall returns at most.
	// Defaults to 5.
	MaxPassages int
	// TokenBudget bounds the recalled passages' text together, in tokens
	// (estimated as 4 bytes each). Defaults to 1,500.
	TokenBudget int
	// Candidates is how many passages each retriever scores at most.
	// Defaults to 64.
	Candidates int
	// PassageBytes bounds a passage's text. Defaults to 1,600 (about 400
	// tokens); at least 200.
	PassageBytes int
	// OverlapBytes is how much of a passage's end the next passage of
	// the same section repeats, so a sentence cut at the bound is whole
	// in one of them. Defaults to 160; at most a quarter of PassageBytes.
	OverlapBytes int
	// MaxDocumentBytes refuses larger files. Defaults to 20 MiB.
	MaxDocumentBytes int64
	// MaxTextBytes refuses a document whose extracted text is larger (a
	// compressed PDF can hold far more text than its size says).
	// Defaults to 4 × MaxDocumentBytes.
	MaxTextBytes int64
	// EmbeddingsURL is the base URL of an OpenAI-compatible API with a
	// /embeddings endpoint; empty: no embeddings retriever.
	EmbeddingsURL    string
	EmbeddingsAPIKey string
	// EmbeddingsModel defaults to "text-embedding-3-small".
	EmbeddingsModel string
	// EmbeddingsTimeout bounds one request. Defaults to 30s.
	EmbeddingsTimeout time.Duration
	// HTTPClient makes the embeddings requests. Defaults to
	// http.DefaultClient.
	HTTPClient *http.Client
	// Now is the clock. Defaults to time.Now.
	Now func() time.Time
	// Logger receives warnings. Defaults to slog.Default().
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.LexicalFloor == 0 {
		c.LexicalFloor = 1.0
	}
	if c.EmbeddingsFloor == 0 {
		c.EmbeddingsFloor = 0.3
	}
	if c.MaxPassages <= 0 {
		c.MaxPassages = 5
	}
	if c.TokenBudget <= 0 {
		c.TokenBudget = 1500
	}
	if c.Candidates <= 0 {
		c.Candidates = 64
	}
	if c.PassageBytes <= 0 {
		c.PassageBytes = 1600
	}
	c.PassageBytes = max(c.PassageBytes, 200)
	if c.OverlapBytes <= 0 {
		c.OverlapBytes = 160
	}
	c.OverlapBytes = min(c.OverlapBytes, c.PassageBytes/4)
	if c.MaxDocumentBytes <= 0 {
		c.MaxDocumentBytes = 20 << 20
	}
	if c.MaxTextBytes <= 0 {
		c.MaxTextBytes = 4 * c.MaxDocumentBytes
	}
	if c.EmbeddingsModel == "" {
		c.EmbeddingsModel = "text-embedding-3-small"
	}
	if c.EmbeddingsTimeout <= 0 {
		c.EmbeddingsTimeout = 30 * time.Second
	}
	if c.HTTPClient == nil {
		c.HTTPClient = http.DefaultClient
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}
