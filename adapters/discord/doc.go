// Package discord is Gatehouse's Discord adapter, built on
// github.com/bwmarrin/discordgo. It owns the translation between
// Discord and the gateway: the gateway session (HELLO → IDENTIFY →
// READY, heartbeats, resume) turned into [gh.Inbound] and [gh.Press] for
// a [chat.Sink], and the REST calls that send messages, edit approval
// cards and answer button interactions. It decides nothing: dedupe,
// allow-lists, the receive log, rate limiting and retries belong to the
// gateway.
//
// # Health
//
// The gateway socket is the platform's evidence (chat.Sink.Health):
// READY, RESUMED and each heartbeat ACK report a round trip that
// succeeded, a failed connect or a socket that closed reports the cause,
// and close code 4004 or a REST 401 is a refused token (chat.TokenRefused)
// that ends Connect. Connect reopens a lost socket through
// reconnectPolicy (internal/backoff: 1 s to Config.ReconnectMaxWait,
// jitter); discordgo's own reconnect loop is off.
//
// # Inbound
//
// MESSAGE_CREATE becomes an Inbound whose UpdateID and MessageID are the
// message id (a snowflake; a resumed session that replays the event
// repeats it). ChatID is the channel id. Discord threads are channels of
// their own, so a message in a thread has the thread's id as ChatID and
// ThreadID stays empty: one session per channel is one session per
// chat or thread, and a reply sent to ChatID lands in the thread.
// ChatType is dm when the message has no guild_id and group otherwise.
// IsBot is set for bot authors, webhook posts and our own messages
// (author id = the READY user id), which Discord echoes back to us.
// Messages that are not plain messages or replies (joins, pins, boosts,
// thread notices) are Unsupported "system_message"; messages without
// text are Unsupported "sticker", "attachment", "embed" or "poll". A
// message whose text is "!library" or "/library" (chat.LibraryCommand)
// goes to Sink.Command with its attachments, or those of the message it
// replies to, and is answered with a reply (see files.go).
//
// Discord's gateway has no per-event acknowledgement and never
// redelivers an event the client has read: a Receive error cannot make
// Discord send the message again. The adapter therefore retries
// Receive itself (Config.ReceiveAttempts, with backoff; the gateway's
// dedupe makes that safe) and then logs the message as lost. Messages
// are handed to Receive one at a time in the order Discord sent them.
// When Connect's context ends, messages already read from the socket
// are still handed on for Config.ShutdownGrace.
//
// # Buttons
//
// INTERACTION_CREATE of type 3 (a button press) carries the button's
// custom_id, which is [chat.ButtonData]. Discord wants an answer
// within 3 seconds, so sink.Press gets Config.PressTimeout and the
// answer goes out whatever happened: when the press decided the gate,
// type 7 (UPDATE_MESSAGE) rewrites the card to PressResult.Card, with no
// buttons once decided; otherwise type 4 with the ephemeral flag (64)
// shows PressResult.Text to the presser only. A custom_id that is not
// ours, or a Press error, is answered with an ephemeral message too.
// "Deny with reason…" is answered with a modal (type 9) whose custom_id
// is the deny button's data; its MODAL_SUBMIT (type 5) is the deny press
// with the text typed as its reason, answered like a press.
// Presses are handled concurrently, so a slow Receive cannot make one
// miss its deadline.
//
// # Slash commands
//
// After READY, once per Connect, the adapter overwrites the
// application's global commands (PUT /applications/{application.id}/
// commands) with /grants ([chat.CommandGrants]; usable in guilds and
// in DMs with the bot), in the background, retried with the reconnect
// backoff until it succeeds: a failure is logged, never holds messages
// up. An overwrite keeps a command's id, so every start registers it
// again without duplicating it. An invocation (INTERACTION_CREATE of
// type 2) goes to sink.Command as an Inbound whose UpdateID is the
// interaction id (ChatID the channel, ChatType and the sender as for a
// message), within Config.PressTimeout; any name is handed on, and the
// gateway answers the ones it does not know. The reply is answered with
// type 4, ephemeral: its text escaped as cards are (FormatLiteral), cut
// to 2,000 characters, allowed_mentions empty, and its buttons (Revoke)
// as action rows. A refusal is its text alone, an error "could not
// answer, try again", a redelivery already answered gets nothing. Revoke
// presses on that ephemeral answer are ordinary presses.
//
// # Outbound
//
// Send posts to the channel (Address.ThreadID when set, which for
// Discord is a thread's channel id, else Address.ChatID) with
// allowed_mentions {"parse":[]} so nothing a model writes can ping
// anyone, a message_reference to Address.ReplyTo that does not fail when
// the message is gone, and a card's buttons as action rows of up to five
// buttons: style 3 (green) for "primary" or approve, 4 (red) for
// "danger" or deny, 2 (grey) otherwise. EditCard sets the card text and
// components [] to remove the buttons.
//
// Rate limits: discordgo's own sleeping retry of 429s is turned off, so
// a 429 comes back as [*chat.SendError] with Status 429 and Discord's
// retry_after, and the dispatcher reschedules. discordgo still tracks
// Discord's X-RateLimit bucket headers; when a bucket is known to be
// empty, Send and EditCard return the same kind of 429 SendError at once
// (RetryAfter = the bucket's reset) instead of sleeping or spending a
// request Discord would refuse (refusals count toward Discord's ban
// threshold of 10,000 invalid requests in 10 minutes). Limits says 2000
// characters, 50 requests/s and at least 200 ms between two sends to a
// channel: Discord's real per-channel limit is a bucket of about 5
// messages per 5 s, announced in headers and enforced as above.
//
// # Format
//
// Discord renders Markdown, and answers are Markdown, so Format keeps
// it. What it neutralises is mentions: "@everyone" and "@here" get a
// zero-width space after the "@", so they neither ping (allowed_mentions
// already prevents that) nor render as a mention. User and role
// mentions (<@id>, <@&id>) are left alone: with allowed_mentions empty
// they render but notify nobody.
//
// # The interactions endpoint
//
// With Config.PublicKey (DISCORD_PUBLIC_KEY) set, Handler serves
// Discord's HTTP interactions endpoint, which the gateway mounts at
// POST /hooks/discord; without it Handler is nil. Each request must
// carry X-Signature-Ed25519, the signature of X-Signature-Timestamp
// followed by the body, checked with discordgo.VerifyInteraction against
// the key: a bad or missing one gets 401 (the developer portal sends
// such requests on purpose before it saves the URL), and so does a
// genuine one whose timestamp is not unix seconds or is more than five
// minutes off (Config.Now), as Slack's v0 window: a captured request
// cannot be replayed later. Bodies are bounded
// to 1 MiB. A PING (type 1) is answered {"type":1}.
//
// Presses, the reason modal's submission and slash commands are decided
// by the same function as over the socket (Adapter.answer), so the
// press's UpdateID is the interaction id on either transport and the
// gateway decides a gate once however often an interaction arrives. The
// answer goes in the response body when it is ready within
// Config.DeferAfter (2 s, inside Discord's 3 s); otherwise the response
// is deferred — type 6 for a press or modal, type 5 ephemeral for a
// command — and the decision, which keeps running for up to
// Config.DeferredTimeout, is delivered through the interaction's webhook:
// PATCH …/messages/@original edits the card (or replaces the command's
// "thinking…"), and text for the presser alone is a follow-up message
// with the ephemeral flag. A reason modal cannot follow a deferral: the
// presser is asked to press again.
//
// Discord sends each interaction either to the endpoint (when the
// portal has an Interactions Endpoint URL) or over the gateway, never to
// both, so the adapter handles INTERACTION_CREATE from the socket in
// either case: with the URL set none arrive there, and with the key set
// but no URL in the portal presses keep working over the socket.
// Messages always come over the gateway, which the adapter holds as
// before.
//
// # Aiming it at a fake
//
// discordgo's Endpoint* URLs are package variables fixed at load, so the
// adapter never changes them: Config.APIURL makes the HTTP client rewrite
// the scheme and host of every request to discord.com. The gateway URL
// comes from GET /api/v9/gateway, so a fake returns its own ws:// URL
// there. APIURL may be written "https://discord.com", with or without
// "/api", "/api/v<n>" or a trailing "/"; New refuses anything else that
// cannot be a base URL (baseurl.go).
package discord
