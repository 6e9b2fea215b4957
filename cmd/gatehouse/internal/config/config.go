package config

import (
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/gatehouse/gatehouse/models"
	"github.com/gatehouse/gatehouse/toolworker"
)

// Config is every setting of the gateway. Each comes from the optional
// config file (--config gatehouse.yaml, keys as below) and from the
// environment, which wins. `gatehouse serve --help` prints this list.
type Config struct {
	// Addr is where HTTP listens. Defaults to 127.0.0.1:8080.
	Addr string
	// DataDir holds the SQLite database and spool files. Defaults to ./data.
	DataDir string
	// DatabaseURL selects Postgres when it starts with postgres:// or
	// postgresql://. Defaults to empty: SQLite at DataDir/gatehouse.db.
	DatabaseURL string
	// DatabaseMaxConns bounds the Postgres pool. Defaults to 40.
	DatabaseMaxConns int
	// SQLiteSynchronous is SQLite's synchronous pragma. Defaults to FULL.
	SQLiteSynchronous string
	// LogLevel is debug, info, warn or error. Defaults to info.
	LogLevel string
	// LogFormat is text or json. Defaults to text.
	LogFormat string
	// LeaseTTL is how long a worker's claim lasts unrenewed. Defaults to 30s.
	LeaseTTL time.Duration
	// MaxAttempts is how many attempts a run gets. Defaults to 3.
	MaxAttempts int
	// SessionCache is how many sessions' tenants the kernel keeps in
	// memory (kernel.Config.SessionCache). Defaults to 10000.
	SessionCache int
	// RetryBackoff is the delay before retrying a failed attempt, times the
	// attempt number. Defaults to 1s.
	RetryBackoff time.Duration
	// MaxPayloadBytes bounds one event's payload. Defaults to 1048576.
	MaxPayloadBytes int
	// DrainTimeout bounds the drain on SIGTERM. Defaults to 30s.
	DrainTimeout time.Duration
	// Metrics is on (package metrics' series on /metrics) or off. Defaults to on.
	Metrics string

	// GuardInterval is the time between the guard's /livez probes of its
	// child. Defaults to 5s.
	GuardInterval time.Duration
	// GuardFailures is how many probes in a row must fail before the
	// guard kills and restarts the child. Defaults to 3.
	GuardFailures int
	// GuardStartGrace is how long a new child has to answer /livez for
	// the first time. Defaults to 60s.
	GuardStartGrace time.Duration
	// GuardBackoff and GuardMaxBackoff: the wait before a restart doubles
	// from the first up to the second. Default to 1s and 1m.
	GuardBackoff, GuardMaxBackoff time.Duration
	// ReloadMaxWait bounds how long a reload waits for running turns
	// before it restarts the child anyway. Defaults to 2m.
	ReloadMaxWait time.Duration

	// APIToken is the credential every /v1 request (and GET /metrics on
	// the main listener) must carry. Defaults to empty: the first start
	// generates one, keeps it in the store so every replica on the same
	// database serves it, and writes it to <DataDir>/api-token.
	APIToken string
	// MaxBodyBytes bounds an HTTP request body. Defaults to 1048576.
	MaxBodyBytes int
	// HTTPReadTimeout bounds reading a request's headers and body.
	// Defaults to 30s.
	HTTPReadTimeout time.Duration
	// HTTPWriteTimeout bounds writing a response; the SSE stream bounds
	// each write by it instead. Defaults to 60s.
	HTTPWriteTimeout time.Duration
	// HTTPIdleTimeout closes an idle keep-alive connection. Defaults to 120s.
	HTTPIdleTimeout time.Duration
	// HTTPMaxHeaderBytes bounds a request's headers. Defaults to 65536.
	HTTPMaxHeaderBytes int
	// HTTPMaxConns caps open HTTP connections (lowered at start to fit the
	// open-file limit). Defaults to 16384.
	HTTPMaxConns int
	// HTTPMaxStreams caps open SSE streams. Defaults to 8192.
	HTTPMaxStreams int
	// ProbeAddr is an extra listener for /healthz, /livez, /readyz and
	// /metrics only. Defaults to empty: probes on Addr only.
	ProbeAddr string

	// Model is the model selection, provider:model[,fallback…]. Defaults
	// to empty: the gateway runs, and a turn says how to configure one.
	Model string
	// ChatModels lists the selections a chat may pick with /model or the
	// web chat's selector: selections separated by ";" (each with its
	// fallbacks after commas). Defaults to empty: the Model chain only.
	ChatModels string
	// OpenAIAPIKey, OpenAIBaseURL, AnthropicAPIKey and AnthropicBaseURL
	// configure the providers. The base URLs default to the public APIs.
	OpenAIAPIKey, OpenAIBaseURL, AnthropicAPIKey, AnthropicBaseURL string
	// ScriptFile is the scripted provider's file (scripted:… selections).
	ScriptFile string
	// ModelTimeout bounds one model request. Defaults to 120s.
	ModelTimeout time.Duration
	// ModelRetries is attempts per model, the first included. Defaults to 3.
	ModelRetries int
	// Prices is the price table, "provider:model=in/out,…" in US dollars
	// per million tokens. Defaults to empty (cost 0).
	Prices string
	// ThinkingModels lists the models that take a thinking level,
	// "provider:model" entries where a trailing * matches a prefix; "none"
	// is no model. Defaults to empty: models.DefaultThinkingModels.
	ThinkingModels string

	// Workers bounds concurrent turns per replica. Defaults to 4.
	Workers int
	// Timezone is the gateway's time zone for the date in the base prompt:
	// a person's own (/tz) comes first. Defaults to the server's.
	Timezone string
	// ContextWindow is the model's context window in tokens. Defaults to 128000.
	ContextWindow int
	// CompactionShare is the share of the window that triggers compaction.
	// Defaults to 0.8.
	CompactionShare float64
	// MaxModelRequests bounds model requests in one attempt. Defaults to 16.
	MaxModelRequests int
	// TurnTimeout bounds each running part of a turn. Defaults to 0: none.
	TurnTimeout time.Duration
	// StuckAfter is how long a running turn's step may stay the same
	// before an incident card asks whether to close or diagnose it.
	// Defaults to 10m.
	StuckAfter time.Duration
	// EmbeddingsURL, EmbeddingsModel and EmbeddingsAPIKey configure memory
	// recall by meaning. Default to empty: lexical recall.
	EmbeddingsURL, EmbeddingsModel, EmbeddingsAPIKey string
	// MemoryFloor is the evidence a memory needs to be recalled. Defaults to 0.6.
	MemoryFloor float64
	// MemoryBatch is how many of a person's turns in a session memory's
	// model pass reads in one call. Defaults to 5.
	MemoryBatch int
	// KnowledgeDir is the folder the knowledge library's shared collection
	// is kept in step with (one replica at a time, by a lease). Defaults
	// to empty: no folder watched.
	KnowledgeDir string
	// KnowledgeScanInterval is how often that folder is scanned. Defaults
	// to 10s.
	KnowledgeScanInterval time.Duration
	// KnowledgeMaxDocumentBytes refuses larger documents (folder, API,
	// admin page). Defaults to 20971520 (20 MiB).
	KnowledgeMaxDocumentBytes int
	// KnowledgeLexicalFloor and KnowledgeEmbeddingsFloor are the evidence
	// a passage needs from each retriever (knowledge.Config). Default to
	// 1.0 and 0.3; a negative floor keeps every candidate.
	KnowledgeLexicalFloor, KnowledgeEmbeddingsFloor float64
	// KnowledgeMaxPassages bounds the passages one recall gives. Defaults
	// to 5.
	KnowledgeMaxPassages int
	// KnowledgeTokenBudget bounds their text together, in tokens. Defaults
	// to 1500.
	KnowledgeTokenBudget int
	// KnowledgePassageBytes bounds one passage; KnowledgeOverlapBytes is
	// how much of it the next passage of its section repeats. Default to
	// 1600 and 160.
	KnowledgePassageBytes, KnowledgeOverlapBytes int
	// DailyBudgetUSD caps a user's model spending per day. Defaults to 0: none.
	DailyBudgetUSD float64
	// BudgetAlertShare is the share of the cap that raises an alert. Defaults to 0.8.
	BudgetAlertShare float64

	// SMTPURL and EmailFrom configure email_send. Default to empty: the
	// tool is refused with a reason.
	SMTPURL, EmailFrom string
	// Contacts is the address book email_send resolves names against,
	// "Name=address,…". Defaults to empty.
	Contacts string
	// Workspace is the root of the workspace tools. Defaults to
	// $GATEHOUSE_DATA_DIR/workspace.
	Workspace string
	// Shell is how shell_exec runs: off, on (isolated by bubblewrap) or
	// host (unisolated, as the gateway's user). Defaults to off.
	Shell string
	// ShellBubblewrap is the bwrap binary of the isolated shell and of
	// isolated stdio MCP servers. Defaults to bwrap on PATH.
	ShellBubblewrap string
	// ShellNetwork gives isolated commands the host's network. Defaults to
	// false (a network namespace with nothing in it).
	ShellNetwork bool
	// ShellTimeout bounds one command. Defaults to 60s.
	ShellTimeout time.Duration
	// ShellMaxProcesses bounds one isolated command's processes (pids
	// cgroup). Defaults to 128.
	ShellMaxProcesses int
	// MCPConfig is a JSON file listing MCP servers. Defaults to none.
	MCPConfig string
	// ApprovalTimeout is how long an approval card waits. Defaults to 5m.
	ApprovalTimeout time.Duration
	// GrantTTL is how long an "Approve for this chat" lasts. Defaults to 1h.
	GrantTTL time.Duration
	// Approvers names who, besides the requester, may decide a card on a
	// chat platform: platform:user entries, or "allowed" for anyone
	// allowed in the card's chat. ToolApprovers replace it for a tool,
	// by people.ToolKey (GATEHOUSE_APPROVERS_<TOOL>). Default to empty:
	// the requester alone.
	Approvers     string
	ToolApprovers map[string]string
	// RequesterOff says, by people.ToolKey ("" for every tool), that the
	// requester does not decide their own card
	// (GATEHOUSE_REQUESTER_APPROVES=off, _<TOOL>). Defaults to none: the
	// requester decides.
	RequesterOff map[string]bool
	// ApproversNeeded is, by people.ToolKey ("" for every tool), how
	// many distinct people must approve a card (GATEHOUSE_APPROVERS_NEEDED,
	// _<TOOL>). Defaults to 1.
	ApproversNeeded map[string]int
	// ApprovalChat is platform:chat, a chat every card is also sent to.
	// Defaults to empty: none.
	ApprovalChat string
	// PublicURL is the web UI's address as people reach it: a card whose
	// free text was clipped to fit a chat links to the whole card there.
	// Defaults to empty: the card says to open the web chat's /admin.
	PublicURL string
	// RedisURL puts gate claims in Redis for many replicas. Defaults to
	// empty: SQL compare-and-set in the database.
	RedisURL string

	// Retention is how long the receive log and delivered or dead outbox
	// rows are kept. Defaults to 720h (30 days).
	Retention time.Duration
	// FloodLimit is how many messages one chat may send per minute before
	// more are dropped as flood. Defaults to 30.
	FloodLimit int
	// Pairing gives strangers who write in a direct chat a one-time code
	// an admin approves to let them in. Defaults to false (off).
	Pairing bool
	// MidTurn is how a chat message that arrives mid-turn is delivered:
	// queue or guide. Defaults to queue.
	MidTurn string
	// Platform holds the chat platforms' settings (see platforms), by
	// environment variable name: TELEGRAM_BOT_TOKEN and so on. A platform's
	// adapter starts when its token is set.
	Platform map[string]string
}

// Setting is one row of the settings table: its names, default and help,
// and how to store a value. The table is the single source for loading,
// --help and the configuration doc test.
type Setting struct {
	Env, Key, Default, Help string
	val                     value
}

// Secret reports whether the setting holds a credential (a key, a token,
// a URL that may carry a password): what it holds is in Config.Secrets,
// which tool output must never carry. A row is marked where it is
// declared (key, inURL), as a platform's settings are (chat.Setting's
// Secret), so no list of secrets is kept by hand.
func (s Setting) Secret() bool { return s.val.secret != nil }

// value is how a row stores its value and, for a credential, what of it is
// secret.
type value struct {
	set    func(c *Config, v string) error
	secret func(c *Config) []string
}

// fn is a row whose value is stored by set, not secret.
func fn(set func(c *Config, v string) error) value { return value{set: set} }

func str(dst func(*Config) *string) value {
	return fn(func(c *Config, v string) error { *dst(c) = v; return nil })
}

// key is a string row that is a credential whole (a key, a token).
func key(dst func(*Config) *string) value {
	v := str(dst)
	v.secret = func(c *Config) []string { return []string{*dst(c)} }
	return v
}

// inURL is v, a URL row, whose credentials (user info, a token in its
// query) are secret.
func inURL(v value, dst func(*Config) *string) value {
	v.secret = func(c *Config) []string { return toolworker.SecretsOfURL(*dst(c)) }
	return v
}

func integer(dst func(*Config) *int) value {
	return fn(func(c *Config, v string) error {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n <= 0 {
			return fmt.Errorf("want a positive whole number, got %q", v)
		}
		*dst(c) = n
		return nil
	})
}

func duration(dst func(*Config) *time.Duration) value {
	return fn(func(c *Config, v string) error {
		d, err := time.ParseDuration(strings.TrimSpace(v))
		if err != nil || d <= 0 {
			return fmt.Errorf("want a positive duration such as 30s or 5m, got %q", v)
		}
		*dst(c) = d
		return nil
	})
}

// floor parses an evidence floor: above 0 and at most hi, or negative
// (every candidate kept). 0 is refused: the library would read it as its
// default.
func floor(dst func(*Config) *float64, hi float64) value {
	return fn(func(c *Config, v string) error {
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || f == 0 || f > hi {
			return fmt.Errorf("want a number above 0 and at most %g (negative keeps every candidate), got %q", hi, v)
		}
		*dst(c) = f
		return nil
	})
}

func oneOf(dst func(*Config) *string, allowed ...string) value {
	return fn(func(c *Config, v string) error {
		for _, a := range allowed {
			if strings.EqualFold(v, a) {
				*dst(c) = a
				return nil
			}
		}
		return fmt.Errorf("want one of %s, got %q", strings.Join(allowed, ", "), v)
	})
}

// Settings are the rows of the settings table: the gateway's own, then
// each platform's.
func Settings() []Setting { return settings }

// settings are the gateway's own rows, then each platform's.
var settings = append([]Setting{
	{"GATEHOUSE_ADDR", "addr", "127.0.0.1:8080", "HTTP listen address", str(func(c *Config) *string { return &c.Addr })},
	{"GATEHOUSE_DATA_DIR", "data_dir", "./data", "directory of the SQLite database and spool files", str(func(c *Config) *string { return &c.DataDir })},
	{"GATEHOUSE_DATABASE_URL", "database_url", "", "postgres://… selects Postgres; empty selects SQLite at $GATEHOUSE_DATA_DIR/gatehouse.db", inURL(fn(func(c *Config, v string) error {
		if v != "" && !strings.HasPrefix(v, "postgres://") && !strings.HasPrefix(v, "postgresql://") {
			return fmt.Errorf("want a postgres:// URL or nothing (SQLite), got a URL of another scheme")
		}
		c.DatabaseURL = v
		return nil
	}), func(c *Config) *string { return &c.DatabaseURL })},
	{"GATEHOUSE_DATABASE_MAX_CONNS", "database_max_conns", "40", "Postgres connection pool size", integer(func(c *Config) *int { return &c.DatabaseMaxConns })},
	{"GATEHOUSE_SQLITE_SYNCHRONOUS", "sqlite_synchronous", "FULL", "SQLite synchronous pragma: FULL survives power loss, NORMAL only process crashes", oneOf(func(c *Config) *string { return &c.SQLiteSynchronous }, "FULL", "NORMAL")},
	{"GATEHOUSE_LOG_LEVEL", "log_level", "info", "debug, info, warn or error", oneOf(func(c *Config) *string { return &c.LogLevel }, "debug", "info", "warn", "error")},
	{"GATEHOUSE_LOG_FORMAT", "log_format", "text", "text or json", oneOf(func(c *Config) *string { return &c.LogFormat }, "text", "json")},
	{"GATEHOUSE_METRICS", "metrics", "on", "on: /metrics exports turns, model calls, gates, effects and the queue (package metrics); off: only the gateway's series and Go's", oneOf(func(c *Config) *string { return &c.Metrics }, "on", "off")},
	{"GATEHOUSE_LEASE_TTL", "lease_ttl", "30s", "how long a worker's claim on a run lasts without renewal (renewed every third)", duration(func(c *Config) *time.Duration { return &c.LeaseTTL })},
	{"GATEHOUSE_MAX_ATTEMPTS", "max_attempts", "3", "attempts a run gets before it fails for good", integer(func(c *Config) *int { return &c.MaxAttempts })},
	{"GATEHOUSE_SESSION_CACHE", "session_cache", "10000", "sessions whose tenant is kept in memory, so checking it reads nothing (an LRU: memory stays bounded however many sessions exist)", integer(func(c *Config) *int { return &c.SessionCache })},
	{"GATEHOUSE_RETRY_BACKOFF", "retry_backoff", "1s", "delay before retrying a failed attempt, times the attempt number", duration(func(c *Config) *time.Duration { return &c.RetryBackoff })},
	{"GATEHOUSE_MAX_PAYLOAD_BYTES", "max_payload_bytes", "1048576", "largest event payload accepted", integer(func(c *Config) *int { return &c.MaxPayloadBytes })},
	{"GATEHOUSE_DRAIN_TIMEOUT", "drain_timeout", "30s", "how long SIGTERM waits for work in flight before stopping", duration(func(c *Config) *time.Duration { return &c.DrainTimeout })},
	{"GATEHOUSE_GUARD_INTERVAL", "guard_interval", "5s", "gatehouse guard: time between two /livez probes of the gateway it runs", duration(func(c *Config) *time.Duration { return &c.GuardInterval })},
	{"GATEHOUSE_GUARD_FAILURES", "guard_failures", "3", "gatehouse guard: /livez probes in a row that must fail (no answer in an interval, or 503) before the gateway is killed and restarted", integer(func(c *Config) *int { return &c.GuardFailures })},
	{"GATEHOUSE_GUARD_START_GRACE", "guard_start_grace", "60s", "gatehouse guard: time a newly started gateway has to answer /livez for the first time", duration(func(c *Config) *time.Duration { return &c.GuardStartGrace })},
	{"GATEHOUSE_GUARD_BACKOFF", "guard_backoff", "1s", "gatehouse guard: wait before restarting a gateway that exited or stopped answering; doubles with each restart in a row", duration(func(c *Config) *time.Duration { return &c.GuardBackoff })},
	{"GATEHOUSE_GUARD_MAX_BACKOFF", "guard_max_backoff", "1m", "gatehouse guard: the longest wait before a restart (a gateway that ran longer starts the sequence over)", duration(func(c *Config) *time.Duration { return &c.GuardMaxBackoff })},
	{"GATEHOUSE_RELOAD_MAX_WAIT", "reload_max_wait", "2m", "gatehouse reload: how long the guard waits for running turns (claims paused) before restarting the gateway anyway; its drain then hands them back", duration(func(c *Config) *time.Duration { return &c.ReloadMaxWait })},
	{"GATEHOUSE_API_TOKEN", "api_token", "", "bearer token for /v1 and /metrics; without one the first start generates one, kept in the store (every replica shares it) and written to <data dir>/api-token; `gatehouse token` prints it", key(func(c *Config) *string { return &c.APIToken })},
	{"GATEHOUSE_MAX_BODY_BYTES", "max_body_bytes", "1048576", "largest HTTP request body accepted", integer(func(c *Config) *int { return &c.MaxBodyBytes })},
	{"GATEHOUSE_HTTP_READ_TIMEOUT", "http_read_timeout", "30s", "time a client has to send a request's headers and body (API and webhooks); later gets 400", duration(func(c *Config) *time.Duration { return &c.HTTPReadTimeout })},
	{"GATEHOUSE_HTTP_WRITE_TIMEOUT", "http_write_timeout", "60s", "time to write a response; on the SSE stream, each write (a client that stops reading is dropped)", duration(func(c *Config) *time.Duration { return &c.HTTPWriteTimeout })},
	{"GATEHOUSE_HTTP_IDLE_TIMEOUT", "http_idle_timeout", "120s", "an idle keep-alive connection is closed after this long", duration(func(c *Config) *time.Duration { return &c.HTTPIdleTimeout })},
	{"GATEHOUSE_HTTP_MAX_HEADER_BYTES", "http_max_header_bytes", "65536", "largest request header block; larger gets 431", integer(func(c *Config) *int { return &c.HTTPMaxHeaderBytes })},
	{"GATEHOUSE_HTTP_MAX_CONNS", "http_max_conns", "16384", "open HTTP connections; over it requests get 503 (probes still answer); lowered at start to fit the open-file limit", integer(func(c *Config) *int { return &c.HTTPMaxConns })},
	{"GATEHOUSE_HTTP_MAX_STREAMS", "http_max_streams", "8192", "open SSE streams; over it a new stream gets 503 with Retry-After", integer(func(c *Config) *int { return &c.HTTPMaxStreams })},
	{"GATEHOUSE_PROBE_ADDR", "probe_addr", "", "extra listen address serving only /healthz, /livez, /readyz and /metrics (for Kubernetes probes); empty serves them on GATEHOUSE_ADDR only", str(func(c *Config) *string { return &c.ProbeAddr })},
	{"GATEHOUSE_MODEL", "model", "", "model selection provider:model, with fallbacks after commas (openai:gpt-4.1-mini,anthropic:claude-sonnet-4-5)", str(func(c *Config) *string { return &c.Model })},
	{"GATEHOUSE_CHAT_MODELS", "chat_models", "", "selections a chat may pick with /model or the web chat's selector, separated by ; (each with its fallbacks after commas); empty is the GATEHOUSE_MODEL chain only", fn(func(c *Config, v string) error {
		if _, err := models.ParseChatChoices(v); err != nil {
			return fmt.Errorf("want selections separated by ; such as openai:gpt-4.1-mini;anthropic:claude-sonnet-4-5: %w", err)
		}
		c.ChatModels = v
		return nil
	})},
	{"OPENAI_API_KEY", "openai_api_key", "", "key for the OpenAI-compatible provider (may be empty for a local server)", key(func(c *Config) *string { return &c.OpenAIAPIKey })},
	{"OPENAI_BASE_URL", "openai_base_url", "https://api.openai.com/v1", "OpenAI-compatible endpoint (Ollama, vLLM, llama.cpp, gateways)", inURL(str(func(c *Config) *string { return &c.OpenAIBaseURL }), func(c *Config) *string { return &c.OpenAIBaseURL })},
	{"ANTHROPIC_API_KEY", "anthropic_api_key", "", "key for the Anthropic provider", key(func(c *Config) *string { return &c.AnthropicAPIKey })},
	{"ANTHROPIC_BASE_URL", "anthropic_base_url", "https://api.anthropic.com", "Anthropic Messages API endpoint", inURL(str(func(c *Config) *string { return &c.AnthropicBaseURL }), func(c *Config) *string { return &c.AnthropicBaseURL })},
	{"GATEHOUSE_SCRIPT_FILE", "script_file", "", "canned responses for the scripted provider (GATEHOUSE_MODEL=scripted:demo), for tests and demos", str(func(c *Config) *string { return &c.ScriptFile })},
	{"GATEHOUSE_MODEL_TIMEOUT", "model_timeout", "120s", "bound on one model request, to the end of its stream", duration(func(c *Config) *time.Duration { return &c.ModelTimeout })},
	{"GATEHOUSE_MODEL_RETRIES", "model_retries", "3", "attempts per model for network errors, timeouts, 429 and 5xx (first included)", integer(func(c *Config) *int { return &c.ModelRetries })},
	{"GATEHOUSE_PRICES", "prices", "", "price table for the ledger: provider:model=in/out,… in USD per million tokens", fn(func(c *Config, v string) error {
		if _, err := ParsePrices(v); err != nil {
			return err
		}
		c.Prices = v
		return nil
	})},
	{"GATEHOUSE_THINKING_MODELS", "thinking_models", "", "models that take an input's thinking level (Anthropic extended thinking, OpenAI reasoning_effort): provider:model entries, a trailing * matching every model starting so; empty is the built-in list, none is no model", fn(func(c *Config, v string) error {
		if _, err := ParseThinkingModels(v); err != nil {
			return err
		}
		c.ThinkingModels = v
		return nil
	})},
	{"GATEHOUSE_WORKERS", "workers", "4", "turns one replica runs at once", integer(func(c *Config) *int { return &c.Workers })},
	{"GATEHOUSE_TIMEZONE", "timezone", "", "time zone (IANA name, e.g. Europe/Berlin) of today's date in the prompt for people who set none of their own with /tz; empty is the server's", fn(func(c *Config, v string) error {
		if v != "" {
			if _, err := time.LoadLocation(v); err != nil {
				return fmt.Errorf("want an IANA time zone such as Europe/Berlin: %w", err)
			}
		}
		c.Timezone = v
		return nil
	})},
	{"GATEHOUSE_CONTEXT_WINDOW", "context_window", "128000", "the model's context window in tokens", integer(func(c *Config) *int { return &c.ContextWindow })},
	{"GATEHOUSE_COMPACTION_SHARE", "compaction_share", "0.8", "share of the context window above which older messages are summarised", fn(func(c *Config, v string) error {
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || f <= 0 || f >= 1 {
			return fmt.Errorf("want a number between 0 and 1, got %q", v)
		}
		c.CompactionShare = f
		return nil
	})},
	{"GATEHOUSE_MAX_TURNS", "max_turns", "16", "model requests one attempt may make before it stops", integer(func(c *Config) *int { return &c.MaxModelRequests })},
	{"GATEHOUSE_STUCK_AFTER", "stuck_after", "10m", "a running turn whose step (a model call, a tool) has not changed for this long gets an incident card: Close or Diagnose", duration(func(c *Config) *time.Duration { return &c.StuckAfter })},
	{"GATEHOUSE_TURN_TIMEOUT", "turn_timeout", "0", "time limit of each running part of a turn (waiting for approval not counted); 0 is none", fn(func(c *Config, v string) error {
		if strings.TrimSpace(v) == "0" {
			c.TurnTimeout = 0
			return nil
		}
		d, err := time.ParseDuration(strings.TrimSpace(v))
		if err != nil || d < 0 {
			return fmt.Errorf("want a duration such as 2m, or 0 for none, got %q", v)
		}
		c.TurnTimeout = d
		return nil
	})},
	{"GATEHOUSE_EMBEDDINGS_URL", "embeddings_url", "", "OpenAI-compatible API with /embeddings for memory recall by meaning (e.g. http://127.0.0.1:11434/v1); empty recalls lexically", inURL(str(func(c *Config) *string { return &c.EmbeddingsURL }), func(c *Config) *string { return &c.EmbeddingsURL })},
	{"GATEHOUSE_EMBEDDINGS_MODEL", "embeddings_model", "text-embedding-3-small", "embeddings model for memory recall", str(func(c *Config) *string { return &c.EmbeddingsModel })},
	{"GATEHOUSE_EMBEDDINGS_API_KEY", "embeddings_api_key", "", "key for the embeddings API", key(func(c *Config) *string { return &c.EmbeddingsAPIKey })},
	{"GATEHOUSE_MEMORY_FLOOR", "memory_floor", "0.6", "evidence a memory needs to be given to the model: closeness beyond the background (0–1) plus the share of the question's words it holds (0–1)", fn(func(c *Config, v string) error {
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || f < 0 || f > 2 {
			return fmt.Errorf("want a number from 0 to 2, got %q", v)
		}
		c.MemoryFloor = f
		return nil
	})},
	{"GATEHOUSE_MEMORY_BATCH", "memory_batch", "5", "turns of one person in one session that memory's model pass reads in one model call (1 to 20); fewer are read once the session has been quiet for 2 minutes", fn(func(c *Config, v string) error {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 1 || n > 20 { // memory.MaxBatch
			return fmt.Errorf("want a whole number from 1 to 20, got %q", v)
		}
		c.MemoryBatch = n
		return nil
	})},
	{"GATEHOUSE_KNOWLEDGE_DIR", "knowledge_dir", "", "folder of Markdown, text, HTML and PDF files kept in the knowledge library's shared collection (rescanned; one replica at a time); empty watches none", str(func(c *Config) *string { return &c.KnowledgeDir })},
	{"GATEHOUSE_KNOWLEDGE_SCAN_INTERVAL", "knowledge_scan_interval", "10s", "how often the knowledge folder is scanned for added, changed and removed files", duration(func(c *Config) *time.Duration { return &c.KnowledgeScanInterval })},
	{"GATEHOUSE_KNOWLEDGE_MAX_DOCUMENT_BYTES", "knowledge_max_document_bytes", "20971520", "largest document the knowledge library takes (folder, API, admin page)", integer(func(c *Config) *int { return &c.KnowledgeMaxDocumentBytes })},
	{"GATEHOUSE_KNOWLEDGE_LEXICAL_FLOOR", "knowledge_lexical_floor", "1.0", "evidence a passage needs from the lexical retriever: closeness above the background (0–1) plus the share of the question's words it holds (0–1); negative keeps every candidate", floor(func(c *Config) *float64 { return &c.KnowledgeLexicalFloor }, 2)},
	{"GATEHOUSE_KNOWLEDGE_EMBEDDINGS_FLOOR", "knowledge_embeddings_floor", "0.3", "closeness in meaning above the background (0–1) a passage needs from the embeddings retriever (with GATEHOUSE_EMBEDDINGS_URL); negative keeps every candidate", floor(func(c *Config) *float64 { return &c.KnowledgeEmbeddingsFloor }, 1)},
	{"GATEHOUSE_KNOWLEDGE_MAX_PASSAGES", "knowledge_max_passages", "5", "passages of the knowledge library one recall gives the model at most", integer(func(c *Config) *int { return &c.KnowledgeMaxPassages })},
	{"GATEHOUSE_KNOWLEDGE_TOKEN_BUDGET", "knowledge_token_budget", "1500", "bound on the recalled passages' text together, in tokens (4 bytes each)", integer(func(c *Config) *int { return &c.KnowledgeTokenBudget })},
	{"GATEHOUSE_KNOWLEDGE_PASSAGE_BYTES", "knowledge_passage_bytes", "1600", "bound of one passage of a document (at least 200); a changed value applies to documents added or changed after", integer(func(c *Config) *int { return &c.KnowledgePassageBytes })},
	{"GATEHOUSE_KNOWLEDGE_OVERLAP_BYTES", "knowledge_overlap_bytes", "160", "how much of a passage's end the next passage of the same section repeats (at most a quarter of a passage)", integer(func(c *Config) *int { return &c.KnowledgeOverlapBytes })},
	{"GATEHOUSE_DAILY_BUDGET_USD", "daily_budget_usd", "0", "cap on one user's model spending per day (from the ledger and GATEHOUSE_PRICES); 0 is none", fn(func(c *Config, v string) error {
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || f < 0 {
			return fmt.Errorf("want an amount in US dollars such as 5 or 0.50, got %q", v)
		}
		c.DailyBudgetUSD = f
		return nil
	})},
	{"GATEHOUSE_BUDGET_ALERT_SHARE", "budget_alert_share", "0.8", "share of the daily cap at which an alert notice is committed", fn(func(c *Config, v string) error {
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || f <= 0 || f > 1 {
			return fmt.Errorf("want a number above 0 and at most 1, got %q", v)
		}
		c.BudgetAlertShare = f
		return nil
	})},
	{"GATEHOUSE_SMTP_URL", "smtp_url", "", "SMTP server for email_send: smtp://user:pass@host:587 (STARTTLS when offered), smtps://… (TLS), ?tls=none on loopback", inURL(str(func(c *Config) *string { return &c.SMTPURL }), func(c *Config) *string { return &c.SMTPURL })},
	{"GATEHOUSE_EMAIL_FROM", "email_from", "", "sender address of email_send", str(func(c *Config) *string { return &c.EmailFrom })},
	{"GATEHOUSE_CONTACTS", "contacts", "", "address book for email_send names: Name=address,Other Name=address", fn(func(c *Config, v string) error {
		if _, err := ParseContacts(v); err != nil {
			return err
		}
		c.Contacts = v
		return nil
	})},
	{"GATEHOUSE_WORKSPACE", "workspace", "", "root directory of the workspace tools; empty is $GATEHOUSE_DATA_DIR/workspace", str(func(c *Config) *string { return &c.Workspace })},
	{"GATEHOUSE_SHELL", "shell", "off", "shell_exec (always behind approval): off; on runs each command isolated by bubblewrap (own PID/mount/user/network namespaces, only the workspace writable; refused with the reason where isolation is unavailable); host runs it unisolated as the gateway's user (see docs/security.md)", oneOf(func(c *Config) *string { return &c.Shell }, "off", "on", "host")},
	{"GATEHOUSE_SHELL_BWRAP", "shell_bwrap", "bwrap", "the bubblewrap binary of the isolated shell and of isolated stdio MCP servers (Debian package bubblewrap)", str(func(c *Config) *string { return &c.ShellBubblewrap })},
	{"GATEHOUSE_SHELL_NETWORK", "shell_network", "off", "on gives isolated commands the host's network (they can reach the API on loopback, but hold no token: the sandbox shows them none of the gateway's environment or files)", fn(func(c *Config, v string) error {
		switch strings.TrimSpace(v) {
		case "on":
			c.ShellNetwork = true
		case "off", "":
			c.ShellNetwork = false
		default:
			return fmt.Errorf("want on or off, got %q", v)
		}
		return nil
	})},
	{"GATEHOUSE_SHELL_TIMEOUT", "shell_timeout", "60s", "time limit of one shell_exec command; at the limit the command and every process it started are killed", duration(func(c *Config) *time.Duration { return &c.ShellTimeout })},
	{"GATEHOUSE_SHELL_MAX_PROCESSES", "shell_max_processes", "128", "processes one isolated command may have at once (a pids cgroup, where the host allows one)", integer(func(c *Config) *int { return &c.ShellMaxProcesses })},
	{"GATEHOUSE_MCP_CONFIG", "mcp_config", "", "JSON file listing MCP servers whose tools the agent may call (see docs/configuration.md)", str(func(c *Config) *string { return &c.MCPConfig })},
	{"GATEHOUSE_APPROVAL_TIMEOUT", "approval_timeout", "5m", "how long an approval card waits before it expires (the call does not run; never counted as a denial)", duration(func(c *Config) *time.Duration { return &c.ApprovalTimeout })},
	{"GATEHOUSE_GRANT_TTL", "grant_ttl", "1h", "how long an \"Approve for this chat\" lets the tool's calls with the same bound (email: the same recipients) run in that chat without a card", duration(func(c *Config) *time.Duration { return &c.GrantTTL })},
	{"GATEHOUSE_APPROVERS", "approvers", "", "who besides the requester may decide a card on a chat platform: platform:user ids (telegram:111,slack:U012), or allowed (anyone allowed in the card's chat, the earlier rule); GATEHOUSE_APPROVERS_<TOOL> (e.g. _EMAIL_SEND) replaces it for one tool; empty: the requester alone", fn(func(c *Config, v string) error {
		return setApprovers(c, "", v)
	})},
	{"GATEHOUSE_REQUESTER_APPROVES", "requester_approves", "on", "on: the person who asked decides their own card; off: only the named approvers (or, under allowed, anyone else) and the operator do; GATEHOUSE_REQUESTER_APPROVES_<TOOL> sets it for one tool", fn(func(c *Config, v string) error {
		return setRequesterApproves(c, "", v)
	})},
	{"GATEHOUSE_APPROVERS_NEEDED", "approvers_needed", "1", "how many distinct people must approve a card before it is approved (the operator counts as one; one deny denies; short of it at the timeout the card expires); GATEHOUSE_APPROVERS_NEEDED_<TOOL> sets it for one tool", fn(func(c *Config, v string) error {
		return setApproversNeeded(c, "", v)
	})},
	{"GATEHOUSE_APPROVAL_CHAT", "approval_chat", "", "platform:chat id (slack:C0123) of an approvers' chat every card is also sent to; the first decision anywhere wins and every copy is edited to it", fn(func(c *Config, v string) error {
		if _, err := ParseApprovalChat(v); err != nil {
			return err
		}
		c.ApprovalChat = strings.TrimSpace(v)
		return nil
	})},
	{"GATEHOUSE_PUBLIC_URL", "public_url", "", "the web UI's address as people reach it (https://gatehouse.example.com): a chat card clipped to fit links to the whole card there", fn(func(c *Config, v string) error {
		v = strings.TrimRight(strings.TrimSpace(v), "/")
		if v == "" {
			c.PublicURL = ""
			return nil
		}
		u, err := url.Parse(v)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || strings.ContainsAny(v, " \t\n") {
			return fmt.Errorf("want an http:// or https:// address without query or fragment, got %q", v)
		}
		c.PublicURL = v
		return nil
	})},
	{"GATEHOUSE_REDIS_URL", "redis_url", "", "redis://… puts approval claims in Redis for many replicas (redis://sentinel:26379?master_name=NAME&addr=…: behind Sentinel); empty uses the database", inURL(fn(func(c *Config, v string) error {
		if v != "" && !strings.HasPrefix(v, "redis://") && !strings.HasPrefix(v, "rediss://") && !strings.HasPrefix(v, "unix://") {
			return fmt.Errorf("want a redis:// URL, got %q", v)
		}
		c.RedisURL = v
		return nil
	}), func(c *Config) *string { return &c.RedisURL })},
	{"GATEHOUSE_RETENTION", "retention", "720h", "how long the receive log and sent or dead outbox rows are kept (must outlast platform redelivery, 24 h on Telegram)", duration(func(c *Config) *time.Duration { return &c.Retention })},
	{"GATEHOUSE_FLOOD_LIMIT", "flood_limit", "30", "messages one chat may send per minute; more are dropped as flood (and logged)", integer(func(c *Config) *int { return &c.FloodLimit })},
	{"GATEHOUSE_PAIRING", "pairing", "off", "on: a stranger who writes to a chat platform's bot in a direct chat is sent a one-time code (valid 1h) that an admin approves to let them in (/admin People, gatehouse pair approve CODE, POST /v1/people); off: strangers are dropped", fn(func(c *Config, v string) error {
		switch strings.TrimSpace(v) {
		case "on":
			c.Pairing = true
		case "off", "":
			c.Pairing = false
		default:
			return fmt.Errorf("want on or off, got %q", v)
		}
		return nil
	})},
	{"GATEHOUSE_MIDTURN_DELIVERY", "midturn_delivery", "queue", "a chat message that arrives while its turn runs: queue (answered after it) or guide (joins the running turn)", oneOf(func(c *Config) *string { return &c.MidTurn }, "queue", "guide")},
}, platformSettings()...)

// Load applies defaults, then the file (if any), then the
// environment. Every bad value is reported with the setting's name.
func Load(file string, getenv func(string) string) (Config, error) {
	var c Config
	for _, s := range settings {
		if err := s.val.set(&c, s.Default); err != nil && s.Default != "" {
			return c, fmt.Errorf("default of %s: %w", s.Env, err)
		}
	}
	if file != "" {
		raw, err := os.ReadFile(file)
		if err != nil {
			return c, fmt.Errorf("config file: %w", err)
		}
		var values map[string]any
		if err := yaml.Unmarshal(raw, &values); err != nil {
			return c, fmt.Errorf("config file %s: %w", file, err)
		}
		byKey := map[string]Setting{}
		for _, s := range settings {
			byKey[s.Key] = s
		}
		keys := make([]string, 0, len(values))
		for k := range values {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			s, ok := byKey[k]
			if !ok {
				return c, fmt.Errorf("config file %s: unknown setting %q (see gatehouse serve --help)", file, k)
			}
			if k == "approvers" {
				// One list, or a map of them by tool.
				if err := approversFromFile(&c, values[k]); err != nil {
					return c, fmt.Errorf("config file %s: %s: %w", file, k, err)
				}
				continue
			}
			if set := perToolSetters[k]; set != nil {
				// One value, or a map of them by tool.
				if err := perToolFromFile(&c, values[k], set); err != nil {
					return c, fmt.Errorf("config file %s: %s: %w", file, k, err)
				}
				continue
			}
			if err := s.val.set(&c, fmt.Sprint(values[k])); err != nil {
				return c, fmt.Errorf("config file %s: %s: %w", file, k, err)
			}
		}
	}
	for _, s := range settings {
		if v, ok := lookup(getenv, s.Env); ok {
			if err := s.val.set(&c, v); err != nil {
				return c, fmt.Errorf("%s: %w", s.Env, err)
			}
		}
	}
	if err := toolApproversFromEnv(&c, getenv); err != nil {
		return c, err
	}
	if err := perToolFromEnv(&c, getenv, requesterApprovesPrefix, setRequesterApproves); err != nil {
		return c, err
	}
	if err := perToolFromEnv(&c, getenv, approversNeededPrefix, setApproversNeeded); err != nil {
		return c, err
	}
	return c, nil
}

// Loopback reports whether addr listens only on this machine.
func Loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func lookup(getenv func(string) string, name string) (string, bool) {
	v := getenv(name)
	return v, v != ""
}

// PrintSettings writes the settings table for --help.
func PrintSettings(w io.Writer) {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ENVIRONMENT\tFILE KEY\tDEFAULT\tMEANING")
	for _, s := range settings {
		def := s.Default
		if def == "" {
			def = "(empty)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", s.Env, s.Key, def, s.Help)
	}
	tw.Flush()
}

// ParsePrices reads "provider:model=in/out,…" (USD per million tokens).
func ParsePrices(v string) (map[string]models.Price, error) {
	out := map[string]models.Price{}
	for part := range strings.SplitSeq(v, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, price, ok := strings.Cut(part, "=")
		in, outp, ok2 := strings.Cut(price, "/")
		fi, err1 := strconv.ParseFloat(strings.TrimSpace(in), 64)
		fo, err2 := strconv.ParseFloat(strings.TrimSpace(outp), 64)
		if !ok || !ok2 || err1 != nil || err2 != nil || !strings.Contains(name, ":") || fi < 0 || fo < 0 {
			return nil, fmt.Errorf("want provider:model=input/output prices per million tokens, got %q", part)
		}
		out[strings.TrimSpace(name)] = models.Price{InputPerMTok: fi, OutputPerMTok: fo}
	}
	return out, nil
}

// ParseContacts reads "Name=address,…".
func ParseContacts(v string) (map[string]string, error) {
	out := map[string]string{}
	for part := range strings.SplitSeq(v, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, addr, ok := strings.Cut(part, "=")
		name, addr = strings.TrimSpace(name), strings.TrimSpace(addr)
		if !ok || name == "" || !strings.Contains(addr, "@") {
			return nil, fmt.Errorf("want Name=address entries separated by commas, got %q", part)
		}
		out[name] = addr
	}
	return out, nil
}

// ParseThinkingModels reads GATEHOUSE_THINKING_MODELS: empty is nil (the
// built-in list), "none" an empty list, else comma-separated
// provider:model entries.
func ParseThinkingModels(v string) ([]string, error) {
	v = strings.TrimSpace(v)
	switch v {
	case "":
		return nil, nil
	case "none":
		return []string{}, nil
	}
	var out []string
	for e := range strings.SplitSeq(v, ",") {
		e = strings.TrimSpace(e)
		if provider, model, ok := strings.Cut(e, ":"); !ok || provider == "" || model == "" {
			return nil, fmt.Errorf("want provider:model entries (a trailing * matches a prefix), e.g. openai:o3*,anthropic:claude-sonnet-*; got %q", e)
		}
		out = append(out, e)
	}
	return out, nil
}

// Location is Timezone loaded (checked when read), or the server's zone
// (time.Local) when it is empty: the gateway's zone, which the supervisor
// dates turns in and /tz names, for people who set none of their own.
func (c Config) Location() *time.Location {
	if c.Timezone != "" {
		if loc, err := time.LoadLocation(c.Timezone); err == nil {
			return loc
		}
	}
	return time.Local
}
