// Package pggateway owns the Postgres store's gateway rows (see
// store/gateway.go and store/people.go): the receive log, chat addresses
// and their cursors, the outbox, gate cards, platform leases, pairing
// codes and the people let in. It holds the SQL and the scanning as
// functions over a Querier (the pool, where each statement is its own
// transaction, or a transaction's connection), so the store keeps only
// the thin methods that implement the store interfaces; TouchChat
// pipelines on the transaction's connection (Batcher) and
// InsertReceiveAtCommit defers its insert to the COMMIT's pipeline
// (AtCommitter). Errors carry the store's codes and messages.
package pggateway
