// Package gateway owns what lies between the chat platforms and the
// kernel: the inbound pipeline and its receive log (every update ends
// handed on or dropped with a reason, committed with its user.message and
// queued run in one transaction before the platform is acknowledged), the
// address book (platform chat and message ids stay here, keyed by session;
// the log sees a session id and a platform name), decisions from any
// surface (a button press goes through the gate service's compare-and-set),
// and the outbox: a follower turns the log's deliverable events into rows
// keyed by (session, seq), and a dispatcher per platform sends them within
// the platform's limits, honouring 429 Retry-After and keeping failures as
// dead letters. With pairing on, a stranger who writes in a direct chat is
// sent a one-time code instead (an outbox row of its own, in the receive's
// transaction), and People approves it, lets people in and revokes them;
// who is let in is read in every receive's transaction. What a card or an
// answer says is package cards; the pacing of sends is package
// gateway/pacing.
//
// Platform SDKs live in adapters/*; this package knows none of them. A
// connection that must be single (Telegram polling, a Discord gateway
// session, Slack Socket Mode) and its dispatcher run on the replica that
// holds the platform's lease in the database.
package gateway
