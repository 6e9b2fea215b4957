// Package sqlknowledge owns the SQLite store's knowledge rows: collections,
// documents, passages, their FTS5 index (contentless, terms given by the
// library) and the library's counts. It holds the SQL as functions over a
// Querier (the read pool, or the writer's transaction), so the store keeps
// only thin methods. Errors carry the store's codes and messages.
package sqlknowledge
