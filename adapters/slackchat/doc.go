// Package slackchat is Gatehouse's Slack adapter, built on slack-go. It owns the
// translation between Slack and the gateway, and nothing else: Slack message
// events become gh.Inbound, block_actions button presses become gh.Press
// (a press of "Deny with reason…" opens a modal with views.open, whose
// view_submission is the deny press with its reason),
// slash commands become gh.Inbound handed to the sink's Command (answered
// with an ephemeral message in the acknowledgement or the response body),
// and the dispatcher's sends become chat.postMessage and chat.update calls.
// Deduplication, allow-lists, sessions, rate limiting and the outbox belong
// to the gateway.
//
// Slack registers an app's scopes, event subscriptions and slash commands
// in the app's configuration, not at run time: docs/slack-app-manifest.yaml
// is a complete manifest for Gatehouse (the bot scopes chat:write, commands
// and the *:history scopes for message events, interactivity on, Socket
// Mode on, and /grants, /model and /think). /grants lists the chat's active grants, each with
// a Revoke button; the answer is shown to whoever typed it alone, and a
// press of its Revoke button is a block_actions press of that ephemeral
// message. Slack's slash command payload carries no thread: in a channel,
// the command speaks for the channel, not for one of its threads.
//
// A message whose text is "!library" (chat.LibraryCommand; Slack's clients
// keep "/library" for themselves) goes, with the files it shares, to the
// sink's Command and is answered in the message's thread; the files are
// downloaded (Adapter.FetchFile, with the bot token and only from Slack's
// file hosts) when the gateway asks. Downloading needs the files:read
// scope. "!model …", "!think …" and "!tz …" (chat.TextCommand), and the
// slash commands /model, /think and /tz, go to Command likewise (without
// files): the chat's model and thinking level, kept for the channel, every
// thread of it, and the sender's own time zone. Any other message goes to
// Receive as text alone.
//
// Two inbound modes, chosen by [Config]:
//
//   - Socket Mode (AppToken set, the default): [Adapter.Connect] holds the
//     WebSocket opened through apps.connections.open and acknowledges an
//     events_api envelope only after the sink has committed it; an envelope
//     left unacknowledged is resent by Slack (retry_attempt+1, same
//     event_id).
//   - Events API over HTTP (SigningSecret set, AppToken empty):
//     [Adapter.Handler] verifies Slack's v0 signature, answers the
//     url_verification challenge, and answers an event_callback 200 only
//     after the sink has committed it, 500 otherwise so that Slack retries
//     (with X-Slack-Retry-Num). Point the Event Subscriptions, the
//     Interactivity and the slash commands' request URLs at it.
//
// The update id is Slack's event_id, stable across retries, so a resend is
// recorded by the gateway as a duplicate. Sessions follow Slack threads: a
// message in a thread belongs to the thread (thread_ts); a top-level message
// in a channel starts a thread (its own ts) that the replies go to; a direct
// message conversation is one session without threads.
package slackchat
