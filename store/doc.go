// Package store is the one storage seam of Gatehouse: the interfaces every
// backend implements, with a transaction (InTx) so several writes commit
// together. store/sqlite is the embedded default, store/postgres serves many
// replicas, and store/storetest is the one conformance suite both pass.
//
// The store holds data and enforces what only the database can (unique keys,
// gap-free seq under concurrency, row locks); the rules that decide what to
// write (leases, fencing, settling) live in package kernel, once.
package store
