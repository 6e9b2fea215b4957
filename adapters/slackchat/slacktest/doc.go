// Package slacktest is a fake Slack for tests: SlackFake serves the Web
// API under /api/, a Socket Mode websocket, and posts signed Events API
// requests to an adapter's handler, strict about what Slack refuses. It
// implements adaptertest.Fake; SlackFactory (Socket Mode) and
// SlackEventsFactory (Events API) hand it, with an adapter aimed at it,
// to the shared suite adaptertest.Run. It can be down too (outage.go):
// every call failing at once, one method failing, every socket closing
// after its hello. Its own tests hold it to Slack's
// rules with the slack-go client and raw HTTP. Block Kit and modal views
// are checked by blockkit; what the fakes share (parameters, refusals,
// websocket writes, webhook posts) is in adapters/internal/platformfake.
package slacktest
