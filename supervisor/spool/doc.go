// Package spool owns the supervisor's answer spool: an answer the database
// refused to save, kept in a file of the data directory so the answer the
// user paid for is not lost with the attempt. The run's next attempt finds
// it under the same generation and commits it (once: the generation id is
// its key) instead of asking the model again, then drops it. Directory and
// files are the gateway user's alone (0700, 0600); writes are atomic.
package spool
