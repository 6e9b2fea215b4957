// Package sqlgateway owns the SQLite store's gateway rows (see
// store/gateway.go and store/people.go): the receive log, chat addresses
// and their cursors, the outbox, gate cards, platform leases, pairing
// codes and the people let in. It holds the SQL and the scanning as
// functions over a Querier (the read pool, the writer connection or a
// transaction), so the store keeps only the thin methods that implement
// the store interfaces. The functions that take several statements
// (InsertReceive, UpsertAddress, TouchChat, Prune, InsertPairingCode,
// PutPerson) expect a transaction. Errors carry the store's codes and
// messages.
package sqlgateway
