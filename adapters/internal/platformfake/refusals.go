package platformfake

import (
	"fmt"
	"slices"
	"sync"
)

// Refusals is what a fake refused, as the platform would have (Errors),
// and, kept apart, the calls it slowed with 429 (Throttled): a 429 is the
// platform's pace, and a sender that honours it is correct. It has a lock
// of its own, taken last, so a fake may record under its own lock.
type Refusals struct {
	mu        sync.Mutex
	errs      []string
	throttled []string
}

// Refusef records a refusal.
func (r *Refusals) Refusef(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

// Throttle records a call answered with 429.
func (r *Refusals) Throttle(line string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.throttled = append(r.throttled, line)
}

// Errors are the refusals, oldest first (nil when none).
func (r *Refusals) Errors() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.errs)
}

// Throttled are the calls answered with 429, oldest first (nil when none).
func (r *Refusals) Throttled() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.throttled)
}

// ThrottledCount is len(Throttled()).
func (r *Refusals) ThrottledCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.throttled)
}
