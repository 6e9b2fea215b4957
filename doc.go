// Package gatehouse holds the domain types every other package shares: event
// kinds and their classes, sessions, runs, leases, events and the one error
// type with its codes. It does no I/O; storage lives in store, the rules of
// the log in kernel.
package gatehouse
