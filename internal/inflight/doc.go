// Package inflight counts the goroutines a service starts beside its main
// loop (a metrics lookup off the committing goroutine, a webhook's answer
// that outlives its request), so the service's Stop waits for them and
// the run group that stops the service owns them: nothing it started is
// left running after Stop returns.
package inflight
