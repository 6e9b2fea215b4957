// Package sqlite is the embedded store: one SQLite file in WAL mode through
// modernc.org/sqlite (no cgo, no server). Writes go through a single
// connection, so SQLite's one-writer rule is a queue in Go rather than
// SQLITE_BUSY errors; reads use a pool of read-only connections that WAL lets
// run beside the writer. Wake-ups are in-process.
package sqlite
