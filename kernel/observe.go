package kernel

import gh "github.com/gatehouse/gatehouse"

// Observer sees the events of each commit this process made, after it
// committed (Config.Observer): the metrics derive their counters from it.
// Other replicas' commits relayed here (store.Relay) are not observed,
// so a commit is seen once, by the process that made it. It runs in the
// committing goroutine: it must be quick and must not block or commit.
// Duplicates (an idempotency key committed before) are left out; a
// commit whose events are not in hand (Notify) is not observed.
type Observer func(sessionID string, events []gh.Event)

// observe hands a local commit's events to the observer, if any.
func (k *Kernel) observe(sessionID string, events []gh.Event) {
	if k.cfg.Observer != nil && len(events) > 0 {
		k.cfg.Observer(sessionID, events)
	}
}
