// Package kerneltest is the kernel's conformance suite, run against every
// store backend: the kernel's rules (seq, idempotency, leases, fencing,
// settling, loads, wake-ups) exercised through kernel.Kernel over a real
// backend, including concurrency with real goroutines, and the edge-commit
// benchmark against a bare insert. Backends call Run from their tests,
// beside storetest.Run, with the same Harness.
package kerneltest
