// Package discordtest is a fake Discord for tests: DiscordFake serves the
// REST API under /api/v9 and the gateway websocket on loopback, strict
// about what Discord refuses (rate limits, interaction deadlines, bad
// components). It implements adaptertest.Fake; DiscordFactory hands it,
// with an adapter aimed at it, to the shared suite adaptertest.Run. Its
// own tests hold it to Discord's rules with raw HTTP and a raw websocket.
// With SetInteractionsURL, interactions are POSTed, Ed25519-signed, to
// the adapter's endpoint instead (DiscordInteractionsFactory), with the
// interaction webhook for deferred answers. The rules for request bodies
// (callbacks' too) are in formbody; the wire shapes, the message view
// and the intents' filter in wire; rate limits in ratelimit, signing in
// signed; what the fakes share in adapters/internal/platformfake.
package discordtest
