// Package gateway owns what lies between the chat platforms and the
// kernel: the inbound pipeline and its receive log (every update ends
// handed on or dropped with a reason, committed with its user.message and
// queued run in one transaction before the platform is acknowledged), the
// address book (platform chat and message ids stay here, keyed by session;
// the log sees a session id and a platform name), decisions from any
// surface (a button press goes through the gate service's compare-and-set),
// chat commands and grants revoked from the chat, the platform leases and
// the runners that hold a platform's connection and dispatcher, pruning,
// and the admin's reads. With pairing on, a stranger who writes in a
// direct chat is sent a one-time code instead (an outbox row of its own,
// in the receive's transaction); who is let in is read in every receive's
// transaction.
//
// Around it: package gateway/chat is the contract with the adapters
// (Adapter, Sink, cards and buttons, the platform table); package
// gateway/people says who a user is and who is let in (user keys,
// approver rules, pairing codes, the people admin); package
// gateway/outbox follows the log into outbox rows and dispatches them,
// run by this package's Start and, per platform, under its lease; package
// gateway/pacing paces the sends; what a card or an answer says is
// package cards.
//
// Platform SDKs live in adapters/*; this package knows none of them. A
// connection that must be single (Telegram polling, a Discord gateway
// session, Slack Socket Mode) and its dispatcher run on the replica that
// holds the platform's lease in the database.
package gateway
