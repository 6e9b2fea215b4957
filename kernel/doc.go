// Package kernel owns the rules of the log: validation of what may be
// committed, idempotency, edge commits that queue a run in the same
// transaction, claims that hand out a lease owner@epoch, fenced commits that
// reject a stale lease in the same transaction as the write, the durable
// read watermark, settling a run, and paged loads from the latest
// compaction. It decides; package store keeps.
package kernel
