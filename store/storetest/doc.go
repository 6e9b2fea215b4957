// Package storetest is the conformance suite every store backend passes:
// the kernel's rules (seq, idempotency, leases, fencing, settling, loads,
// wake-ups) exercised through the kernel over a real backend, including
// concurrency with real goroutines. Backends call Run from their tests.
package storetest
