// Package outbox owns how the log's answers, cards and notices leave for
// the chat platforms. The follower ([Outbox.Follow]) turns each platform
// session's deliverable events (an answer, a notice, a grant's notice, a
// gate.opened card, a gate.decided card update) into outbox rows keyed by
// (session, seq), moving the session's cursor past them in the same
// transaction, and copies cards to the approval chat when there is one:
// a chat session's beside its own rows, and a session's without a chat
// address (web, API) found from the gates table instead of a cursor, its
// cards alone (approvals.go).
// A dispatcher per platform ([Outbox.Dispatch]) sends the rows through
// the platform's adapter (package gateway/chat) within its limits
// (package gateway/pacing): a session's rows in seq order, 429
// Retry-After honoured, at most once, failures kept as dead letters. It
// draws a card for the adapter (chat.CardFor, from the gate.opened in
// the log: [Outbox.Opened]) and records the message ids later edits need.
//
// The outbox starts nothing itself. Package gateway runs the follower
// from its Start and a platform's dispatcher only while this replica
// holds the platform's lease in the database, so one replica dispatches
// each platform; both stop when their context ends (the gateway's Stop),
// sends in flight finishing first.
package outbox
