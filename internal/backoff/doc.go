// Package backoff owns how a retry loop waits: a floor, a ceiling and
// jitter, doubling between failures and starting over after a success.
// Every loop that talks to something that can fail at once (a platform
// poll, a socket reconnect, an outbox send, an MCP reconnect) waits
// through a [Policy], so none can spin against a server that answers
// instantly.
package backoff
