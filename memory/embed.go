package memory

import "github.com/gatehouse/gatehouse/internal/embeddings"

// The /embeddings client is shared with the knowledge library
// (internal/embeddings); memory keeps its own names for it.

type embedder = embeddings.Client

func newEmbedder(cfg Config) *embedder {
	return embeddings.New(embeddings.Config{
		URL:        cfg.EmbeddingsURL,
		APIKey:     cfg.EmbeddingsAPIKey,
		Model:      cfg.EmbeddingsModel,
		Timeout:    cfg.EmbeddingsTimeout,
		HTTPClient: cfg.HTTPClient,
	})
}

var (
	dot          = embeddings.Dot
	encodeVector = embeddings.Encode
	decodeVector = embeddings.Decode
)
