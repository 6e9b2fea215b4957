package testenv

import "time"

// Patience is how long Eventually waits before it fails the test. It is a
// hang guard, not a speed assertion: a condition that holds returns at
// once, and only a broken test ever waits this long.
const Patience = 30 * time.Second

// Failer is the part of testing.TB Eventually needs; the fakes' narrower
// test handles (adaptertest.TB) have it too.
type Failer interface {
	Helper()
	Fatalf(format string, args ...any)
}

// Eventually polls cond every 10 ms until it holds; after Patience the
// test fails with "timed out waiting for <what>". It is the one polling
// helper of the tests: adaptertest, stacktest and gatestest forward to
// it.
func Eventually(t Failer, what string, cond func() bool) {
	t.Helper()
	EventuallyWithin(t, Patience, what, cond)
}

// EventuallyWithin is Eventually with a limit of its own, for waits on
// whole processes (a restart, a lease running out) that Patience does not
// cover.
func EventuallyWithin(t Failer, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
