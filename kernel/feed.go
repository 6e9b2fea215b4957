package kernel

import (
	"context"
	"sync"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/store"
)

// Partial is a piece of a model answer still streaming: shown live, never
// committed. The committed assistant.message replaces it.
type Partial struct {
	SessionID    string `json:"sessionId"`
	GenerationID string `json:"generationId,omitempty"`
	// Text is the delta since the previous partial of the same generation.
	Text string `json:"text"`
}

// Subscription receives a session's live signals in this process.
type Subscription struct {
	// Committed receives a value when the session's log may have grown:
	// read the events after your cursor. It holds at most one pending
	// signal, so a slow reader is never blocked, only coalesced.
	Committed <-chan struct{}
	// Partials carries streaming text. A slow reader loses partials, never
	// committed events.
	Partials <-chan Partial

	committed chan struct{}
	partials  chan Partial
	session   string
	feed      *feed

	// mu guards what was committed since the last Take: the events the
	// kernel published, and stale when something committed that was not
	// published (or too much was), so the store must be read.
	mu           sync.Mutex
	pending      []gh.Event
	pendingBytes int
	stale        bool
}

// maxPending and maxPendingBytes bound the published events a
// subscription holds between two Takes (a slow stream holds no more);
// past them, the subscriber reads the store instead.
const (
	maxPending      = 256
	maxPendingBytes = 1 << 20
)

// Take returns the events this process committed to the session since
// the last Take, in the order they were published, and complete, which
// is false when something else may have committed too (a commit that only
// signalled, or more than the subscription holds): then read the store
// after your cursor. Published events can arrive out of seq order (two
// commits finishing together): a gap in the seqs means read the store
// as well.
func (s *Subscription) Take() (events []gh.Event, complete bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	events, complete = s.pending, !s.stale
	s.pending, s.pendingBytes, s.stale = nil, 0, false
	return events, complete
}

// Close stops the subscription.
func (s *Subscription) Close() { s.feed.remove(s) }

// feed fans signals out to the subscribers of each session. It is
// in-process: subscribers on other replicas notice commits by polling.
type feed struct {
	mu   sync.Mutex
	subs map[string]map[*Subscription]struct{}
}

// partialsBuffer is how many streaming pieces a subscription holds for a
// slow reader before it loses some (never committed events).
const partialsBuffer = 64

func (f *feed) add(session string, partials bool) *Subscription {
	s := &Subscription{committed: make(chan struct{}, 1), session: session, feed: f}
	if partials {
		s.partials = make(chan Partial, partialsBuffer)
	}
	s.Committed, s.Partials = s.committed, s.partials
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.subs == nil {
		f.subs = map[string]map[*Subscription]struct{}{}
	}
	if f.subs[session] == nil {
		f.subs[session] = map[*Subscription]struct{}{}
	}
	f.subs[session][s] = struct{}{}
	return s
}

func (f *feed) remove(s *Subscription) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.subs[s.session], s)
	if len(f.subs[s.session]) == 0 {
		delete(f.subs, s.session)
	}
}

// allSessions is the subscription key of SubscribeAll: no session id can
// be empty.
const allSessions = ""

// notify signals the session's subscribers; events, when given, are all
// that the signalling commit wrote, and travel with the signal.
func (f *feed) notify(session string, events []gh.Event) {
	size := 0
	for _, e := range events {
		size += len(e.Payload)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, key := range []string{session, allSessions} {
		for s := range f.subs[key] {
			s.mu.Lock()
			// SubscribeAll's subscriber (the outbox follower) reads the
			// store anyway: it is only signalled.
			if events == nil || key == allSessions || len(s.pending)+len(events) > maxPending || s.pendingBytes+size > maxPendingBytes {
				s.pending, s.pendingBytes, s.stale = nil, 0, true
			} else {
				s.pending, s.pendingBytes = append(s.pending, events...), s.pendingBytes+size
			}
			s.mu.Unlock()
			select {
			case s.committed <- struct{}{}:
			default:
			}
		}
	}
}

func (f *feed) partial(p Partial) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for s := range f.subs[p.SessionID] {
		if s.partials == nil {
			continue
		}
		select {
		case s.partials <- p:
		default:
		}
	}
}

// Subscribe returns live signals for a session; Close it when done.
func (k *Kernel) Subscribe(sessionID string) *Subscription { return k.feed.add(sessionID, true) }

// SubscribeCommits is Subscribe without partials (Partials is nil): for
// a subscriber that only follows commits.
func (k *Kernel) SubscribeCommits(sessionID string) *Subscription {
	return k.feed.add(sessionID, false)
}

// SubscribeAll returns a subscription signalled when any session's log
// grows in this process (the gateway's outbox follower). It carries no
// partials.
func (k *Kernel) SubscribeAll() *Subscription { return k.feed.add(allSessions, false) }

// Follow makes other processes' commits to the session reach this one's
// subscribers (Subscribe) without a read, until release: on Postgres,
// through NOTIFY while the session is followed; on SQLite every commit is
// this process's own. An error (a store that cannot relay, or one that
// failed to record the follow) means subscribers must poll to see other
// processes' commits.
func (k *Kernel) Follow(ctx context.Context, sessionID string) (release func(), err error) {
	if r, ok := k.st.(store.Relay); ok {
		return r.Follow(ctx, sessionID)
	}
	if k.st.Dialect() == "sqlite" {
		return func() {}, nil
	}
	return nil, gh.Errorf(gh.CodeUnavailable, "the %s store does not relay other processes' commits", k.st.Dialect())
}

// Notify tells subscribers that the session's log grew. The kernel calls it
// after its own commits; call it after a transaction of yours that
// committed events with EdgeCommitTx or CommitTx.
func (k *Kernel) Notify(sessionID string) { k.feed.notify(sessionID, nil) }

// Publish is Notify carrying what a transaction of the caller's committed
// with EdgeCommitTx: subscribers in this process need no read to send it.
// Pass everything the transaction committed to the session, or Notify.
func (k *Kernel) Publish(sessionID string, committed []Committed) { k.publish(sessionID, committed) }

// publish is Notify carrying the events the commit wrote — all of them,
// or subscribers would miss one — so a subscriber in this process (the
// SSE stream) needs no read to send them. Duplicates (committed before)
// are left out.
func (k *Kernel) publish(sessionID string, committed []Committed) {
	evs := make([]gh.Event, 0, len(committed))
	for _, c := range committed {
		if !c.Duplicate {
			evs = append(evs, c.Event)
		}
	}
	k.observe(sessionID, evs)
	k.feed.notify(sessionID, evs)
}

// PublishPartial sends streaming text to the session's subscribers.
func (k *Kernel) PublishPartial(p Partial) { k.feed.partial(p) }
