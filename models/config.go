package models

import (
	"context"
	"net/http"
	"time"

	gh "github.com/gatehouse/gatehouse"
)

// Default values of Config.
const (
	DefaultOpenAIBaseURL    = "https://api.openai.com/v1"
	DefaultAnthropicBaseURL = "https://api.anthropic.com"
	DefaultRequestTimeout   = 120 * time.Second
	DefaultRetryBase        = 500 * time.Millisecond
	DefaultMaxRetries       = 3
	// MaxRetryAfter is the longest Retry-After the registry waits for; a
	// longer one ends the attempts on that model at once (the chain moves on).
	MaxRetryAfter = 60 * time.Second
	// defaultAnthropicMaxTokens is sent when Request.MaxTokens is 0
	// (the Messages API requires max_tokens).
	defaultAnthropicMaxTokens = 4096
)

// Config configures a Registry. Every option is explicit: this package
// reads no environment variable (cmd does), and the SDK clients are built so
// that theirs do not leak in either.
type Config struct {
	// Selection is the default fallback chain, the GATEHOUSE_MODEL value:
	// "openai:gpt-4.1-mini,anthropic:claude-sonnet-4-5". Defaults to empty:
	// Call then fails with model-not-configured and a hint.
	Selection string

	// OpenAIAPIKey is sent as "Authorization: Bearer …". Required for the
	// default base URL; may be empty for a local server. Defaults to empty.
	OpenAIAPIKey string
	// OpenAIBaseURL is the OpenAI-compatible endpoint (Ollama, vLLM,
	// llama.cpp …), ending before "/chat/completions".
	// Defaults to https://api.openai.com/v1.
	OpenAIBaseURL string

	// AnthropicAPIKey is sent as X-Api-Key. Required to use anthropic.
	// Defaults to empty.
	AnthropicAPIKey string
	// AnthropicBaseURL is the Messages API endpoint, ending before
	// "/v1/messages". Defaults to https://api.anthropic.com.
	AnthropicBaseURL string

	// ScriptFile is the JSON file the scripted provider replays (see the
	// package documentation). Defaults to empty: scripted is not configured.
	ScriptFile string

	// RequestTimeout bounds one attempt, from sending to the last byte of
	// the stream. Defaults to 120s.
	RequestTimeout time.Duration
	// RetryBase is the first backoff; it doubles on each retry.
	// Defaults to 500ms.
	RetryBase time.Duration
	// MaxRetries is the maximum number of attempts per model of the chain,
	// the first one included: 1 disables retries. Defaults to 3.
	MaxRetries int

	// ThinkingModels lists the models that take a thinking level
	// (Request.Thinking), as "provider:model" entries; an entry ending in
	// "*" matches every model name starting with the rest. A model not
	// listed is sent no thinking option, and the answer's Applied.Note says
	// so. Defaults to DefaultThinkingModels; an empty, non-nil list: none.
	ThinkingModels []string

	// Prices gives the cost of each "provider:model" for the ledger.
	// Defaults to none (cost 0).
	Prices map[string]Price
	// Ledger, if set, is called after every attempt, success or failure.
	// Defaults to nil.
	Ledger func(ctx context.Context, row LedgerRow)

	// HTTPClient carries every provider request. Defaults to a client on a
	// clone of http.DefaultTransport.
	HTTPClient *http.Client
}

// Price is a model's price in US dollars per million tokens.
type Price struct {
	InputPerMTok  float64
	OutputPerMTok float64
}

// LedgerRow records one provider call attempt.
type LedgerRow struct {
	Provider     string
	Model        string
	Attempt      int // 1 for the first attempt on this model in this Call
	InputTokens  int
	OutputTokens int
	CostUSD      float64
	Duration     time.Duration
	Err          string // "" on success
}

func (c Config) withDefaults() Config {
	if c.OpenAIBaseURL == "" {
		c.OpenAIBaseURL = DefaultOpenAIBaseURL
	}
	if c.AnthropicBaseURL == "" {
		c.AnthropicBaseURL = DefaultAnthropicBaseURL
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = DefaultRequestTimeout
	}
	if c.RetryBase <= 0 {
		c.RetryBase = DefaultRetryBase
	}
	if c.MaxRetries <= 0 {
		c.MaxRetries = DefaultMaxRetries
	}
	if c.ThinkingModels == nil {
		c.ThinkingModels = DefaultThinkingModels
	}
	if c.HTTPClient == nil {
		var rt http.RoundTripper = http.DefaultTransport
		if t, ok := http.DefaultTransport.(*http.Transport); ok {
			rt = t.Clone()
		}
		c.HTTPClient = &http.Client{Transport: rt}
	}
	return c
}

func (c Config) cost(provider, model string, u gh.Usage) float64 {
	p, ok := c.Prices[provider+":"+model]
	if !ok {
		return 0
	}
	return float64(u.InputTokens)*p.InputPerMTok/1e6 + float64(u.OutputTokens)*p.OutputPerMTok/1e6
}
