// Package pgtx owns the Postgres store's transaction on one pooled
// connection, built to save round trips: BEGIN travels in one pipeline
// with the transaction's first statement, statements deferred to the
// commit travel with COMMIT, and a transaction that never ran a statement
// sends nothing. A rollback that cannot be confirmed closes the
// connection, so the pool never hands out one still inside a transaction.
package pgtx
