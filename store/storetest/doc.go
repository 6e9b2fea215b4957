// Package storetest is the conformance suite of the store seam every
// backend passes: what a store keeps (gate rows and their compare-and-set,
// memory rows, the gateway's rows), over a real backend, including
// concurrency with real goroutines, with no rules of the kernel (leases,
// fencing and settling are kernel/kerneltest's). It also holds the test
// clock, a commit-counting store and the benchmark targets (a fresh store
// and a bare insert) other packages' benchmarks use. Backends call Run
// from their tests.
package storetest
