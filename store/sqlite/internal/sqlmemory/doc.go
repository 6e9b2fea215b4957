// Package sqlmemory owns the SQLite store's memory rows: facts with their
// postings (memory_terms), per-user term counts (memory_dict,
// memory_users), embeddings, and memory jobs with their batch claim. It
// holds the SQL and the scanning as functions over a Querier (the read
// pool, the writer connection or a transaction), so the store keeps only
// the thin methods that implement the store interfaces. Errors carry the
// store's codes and messages.
package sqlmemory
