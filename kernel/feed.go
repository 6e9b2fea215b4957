package kernel

import "sync"

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
}

// Close stops the subscription.
func (s *Subscription) Close() { s.feed.remove(s) }

// feed fans signals out to the subscribers of each session. It is
// in-process: subscribers on other replicas notice commits by polling.
type feed struct {
	mu   sync.Mutex
	subs map[string]map[*Subscription]struct{}
}

func (f *feed) add(session string) *Subscription {
	s := &Subscription{committed: make(chan struct{}, 1), partials: make(chan Partial, 256), session: session, feed: f}
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

func (f *feed) notify(session string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, key := range []string{session, allSessions} {
		for s := range f.subs[key] {
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
		select {
		case s.partials <- p:
		default:
		}
	}
}

// Subscribe returns live signals for a session; Close it when done.
func (k *Kernel) Subscribe(sessionID string) *Subscription { return k.feed.add(sessionID) }

// SubscribeAll returns a subscription signalled when any session's log
// grows in this process (the gateway's outbox follower). It carries no
// partials.
func (k *Kernel) SubscribeAll() *Subscription { return k.feed.add(allSessions) }

// Notify tells subscribers that the session's log grew. The kernel calls it
// after its own commits; call it after a transaction of yours that
// committed events with EdgeCommitTx or CommitTx.
func (k *Kernel) Notify(sessionID string) { k.feed.notify(sessionID) }

// PublishPartial sends streaming text to the session's subscribers.
func (k *Kernel) PublishPartial(p Partial) { k.feed.partial(p) }
