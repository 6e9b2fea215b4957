// Package models owns every call to a language model: the provider registry
// (OpenAI-compatible chat completions, the Anthropic Messages API, and a
// scripted provider for demos and tests), the retry rule, fallback along a
// chain of models with a notice for the user, and the per-call ledger hook
// with its cost. It speaks the providers' wire protocols through their SDKs
// (openai-go, anthropic-sdk-go) and knows nothing of sessions, logs or
// platforms. It reads no environment variable: cmd fills Config, and the SDK
// clients are built so that OPENAI_*/ANTHROPIC_* variables and credential
// files are ignored (the default HTTP transport still honours HTTP(S)_PROXY,
// as net/http does; pass Config.HTTPClient to change that).
//
// # Selection and fallback
//
// A selection (the GATEHOUSE_MODEL value) is an ordered chain
// "provider:model,provider:model…", e.g.
// "openai:gpt-4.1-mini,anthropic:claude-sonnet-4-5". Provider and model
// always switch together: a model name is only ever sent to its own
// provider's endpoint. [Registry.Call] tries each target in order; when one
// fails (after its retries) it moves to the next, and when a later one
// answers it returns, for each failed target, a [Notice]
// "<provider:model> failed (<code>); answered by <provider:model>" for the
// caller to commit. If the caller's context ends, no further target is tried.
// An empty selection makes Call fail with model-not-configured and a hint;
// a selection naming an unknown provider fails with model-unknown-provider
// (in [New], or in Call for an explicit chain). The scripted provider is used
// only when a selection names it.
//
// [Registry.Register] adds a provider of one's own under its Name.
//
// Before sending, system messages are moved to the head of the message list,
// keeping their relative order: strict local servers refuse a system message
// after the first user message. Anthropic gets them in its system field.
//
// # Retry rule
//
// Each attempt is bounded by Config.RequestTimeout (from sending to the end
// of the stream). A target gets at most Config.MaxRetries attempts (default
// 3, the first included). An attempt is retried when it failed with:
//
//   - a network error (refused, reset, DNS) — model-unreachable;
//   - its own timeout, or HTTP 408 — model-timeout;
//   - HTTP 429 — model-rate-limited;
//   - HTTP 500, 502, 503, 504 or 529 (Anthropic overloaded), or an error
//     event inside the stream that the provider marks transient
//     (overloaded, api error) — model-server-error.
//
// Every other failure fails fast: 401/403 (model-unauthorized), 404
// (model-not-found), other 4xx (model-bad-request), other 5xx, and an
// unparseable or inconsistent stream, or one that ends without its
// terminator (model-bad-response). A connection dropped mid-stream is a
// network error. An attempt
// that already passed text to onDelta is never retried (the preview would
// repeat); the chain still moves on.
//
// The wait before attempt n+1 is RetryBase·2^(n-1) plus up to 25% jitter,
// and at least the server's Retry-After (delay-seconds or HTTP date; also
// retry-after-ms). A Retry-After longer than [MaxRetryAfter] (60s) ends the
// attempts on that target at once. The SDK clients are built with their own
// retries off, so this rule is the only one.
//
// A stream must be complete to count: OpenAI chunks must all carry one id and
// a finish_reason must arrive; Anthropic must send message_start first and
// message_stop last; tool arguments must be valid JSON. Otherwise the result
// is model-bad-response, never a made-up answer.
//
// # Ledger
//
// Config.Ledger is called after every attempt, success or failure, with the
// tokens the provider reported (Anthropic input counts include cache
// reads/writes), the cost from Config.Prices["provider:model"] and the
// duration; Err is "" on success. A target that is not configured (no
// request sent) writes no row.
//
// # Providers
//
// openai: chat completions with stream=true and stream_options.include_usage,
// at Config.OpenAIBaseURL, so Ollama, vLLM and llama.cpp's server work as
// well. Tool call arguments are accumulated from the chunks. max_tokens is
// sent as max_completion_tokens to api.openai.com and as max_tokens to any
// other server. A failed tool result (IsError) is prefixed "ERROR: ".
//
// anthropic: messages with stream=true; text_delta and input_json_delta are
// accumulated; assistant tool calls become tool_use blocks and role tool
// messages tool_result blocks of a user message (consecutive messages of one
// role are merged). max_tokens defaults to 4096.
//
// # Thinking
//
// Request.Thinking ("", off, low, medium, high; anything else is
// model-bad-request before anything is sent) is applied only to the models
// Config.ThinkingModels lists ([DefaultThinkingModels] when nil: OpenAI's
// o1, o3…, o4…, gpt-5… and Anthropic's claude-3-7-sonnet… and
// claude-sonnet/opus/haiku-…). An entry "provider:model" matches that name,
// and one ending in "*" every name starting with the rest. Response.Applied
// says what was sent; a level a model cannot take is not sent, Applied.Note
// says so, and the call goes on: a thinking level never fails a call.
//
// openai sends low/medium/high as reasoning_effort; off cannot stop a
// reasoning model from reasoning (noted). anthropic sends extended thinking,
// budget_tokens 2048, 8192 or 24576 for low, medium, high, with max_tokens
// raised by the budget (the API wants it above the budget), and no
// temperature (which thinking forbids). Its answer's thinking and
// redacted_thinking blocks come back in Response.Thinking, verbatim with
// their signatures; the caller keeps them with the assistant message
// (Message.Thinking), and they are sent back first in that message when the
// request thinks, as the API requires after a tool result. When a thinking
// request would answer tool calls whose message has no thinking blocks, the
// API would refuse it, so that request is sent without thinking (noted).
// scripted takes every level and reports it as applied.
//
// scripted: replays Config.ScriptFile, a JSON list of steps:
//
//	[
//	  {"match": "weather", "toolCalls": [{"id": "call_1", "name": "get_weather", "arguments": {"city": "Paris"}}]},
//	  {"text": "It is sunny in Paris."},
//	  {"match": "hello", "text": "Hello! How can I help?"},
//	  {"error": "model-rate-limited"},
//	  {"text": "Answered after a retry."}
//	]
//
// Each step has "text" and/or "toolCalls" (each with "name", optional "id"
// and "arguments" object), or "error" with a code to simulate a failure
// (codes retried over HTTP, such as model-rate-limited or
// model-server-error, are retried, and each attempt takes a step). A step
// may have "match": if the request's last message is a user message that
// contains it (case-insensitive), the first such step is chosen; a step
// whose match is "*" answers any user message no other step matched;
// otherwise
// the step after the previously chosen one is (the first step at start), so
// a tool result is followed by the next step in the file. Past the last step
// calls fail with model-bad-response. Unknown fields are rejected. Text is
// streamed to onDelta in a few chunks. The position is kept in memory,
// shared by all sessions, and starts over when the process does.
//
// scripted:tour ([TourSelection]) is the built-in tour (tour.go, its words
// in internal/tourscript/tour.json, embedded): no file, no key, no position — each answer
// is decided by the newest user message and the tool result after it. Its
// tool calls carry ids with a MAC under a per-process key, so tools can
// tell the tour's calls from any model's ([Registry.TourCall]): the
// email tool delivers only those to its dev mailbox (docs/tour.md).
package models
