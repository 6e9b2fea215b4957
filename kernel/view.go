package kernel

import (
	"context"
	"sync"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/store"
)

// View is what one attempt knows of its session's log: the events it
// loaded after its claim and those it committed since, by key, and
// whether anything else may have been committed meanwhile. It saves the
// attempt the reads whose answer it already holds: a lookup of a key only
// leases write (a gate's opening, a receipt, a tool result), and a check
// for new input when nothing else committed to the session.
//
// It also holds what the attempt staged: writes that need not be durable
// on their own (an assistant message asking for tools, a gate's opening)
// and are committed with the attempt's next commit under the lease — its
// settle at the latest — so an approval turn costs fewer commits. A
// staged write is lost if the attempt dies first; its successor then
// does that step again (asks the model again, opens the same gate), as it
// would after a crash just before the write.
//
// A View belongs to one attempt and is used from its goroutine (the tool
// worker runs there too); it is safe for concurrent use all the same.
type View struct {
	lease gh.Lease
	// complete: the log was loaded from its first event, so a key the
	// view does not hold was never committed (for keys only leases write).
	complete bool
	fresh    time.Duration
	now      func() time.Time
	sub      *Subscription

	mu    sync.Mutex
	byKey map[string]gh.Event
	// last is the highest seq the attempt has seen; gap is set when a
	// commit of its own, or the feed, showed a seq it did not see.
	last   int64
	gap    bool
	readAt time.Time
	staged []stagedWrite
}

// stagedWrite is one write held for the attempt's next commit.
type stagedWrite struct {
	event gh.NewEvent
	// inTx writes rows that commit with the event (the gate's row).
	inTx func(ctx context.Context, tx store.Tx) error
	// after runs once the event is committed (the gate registry's seed).
	after func(ctx context.Context)
}

type viewKey struct{}

// WithView returns ctx carrying v: the kernel's lease-scoped calls made
// with it (Commit, CommitTx, InTx, LeasedEventByKey) use and update it.
func WithView(ctx context.Context, v *View) context.Context {
	return context.WithValue(ctx, viewKey{}, v)
}

// ViewOf returns the view ctx carries for the lease's attempt, or nil.
func ViewOf(ctx context.Context, l gh.Lease) *View { return viewFor(ctx, l) }

// viewFor returns the view ctx carries for the lease's attempt, or nil.
func viewFor(ctx context.Context, l gh.Lease) *View {
	v, _ := ctx.Value(viewKey{}).(*View)
	if v == nil || v.lease.SessionID != l.SessionID || v.lease.RunID != l.RunID || v.lease.Epoch != l.Epoch {
		return nil
	}
	return v
}

// LoadView loads the lease's log, as LoadLeased does, and returns the
// attempt's view of it; Close the view when the attempt ends. The view
// listens to this process's commits to the session from before the load,
// so input committed here later is noticed without a read.
func (k *Kernel) LoadView(ctx context.Context, l gh.Lease) (*View, []gh.Event, error) {
	sub := k.SubscribeCommits(l.SessionID)
	events, err := k.LoadLeased(ctx, l)
	if err != nil {
		sub.Close()
		return nil, nil, err
	}
	v := &View{lease: l, complete: l.CompactionSeq == 0, fresh: k.cfg.ViewFresh, now: k.cfg.Now, sub: sub,
		byKey: make(map[string]gh.Event, len(events)), readAt: k.cfg.Now()}
	for _, e := range events {
		if e.Key != "" {
			v.byKey[e.Key] = e
		}
		v.last = max(v.last, e.Seq)
	}
	sub.Take() // what the load read
	return v, events, nil
}

// Close stops the view's subscription.
func (v *View) Close() { v.sub.Close() }

// Quiet reports whether nothing but the attempt's own commits can have
// reached the session's log since the attempt last read it: no commit of
// this process, no gap in the seqs of its own commits (a commit of
// another replica takes a seq), and the last read younger than the
// kernel's ViewFresh (which bounds how late a commit of another replica
// between two of the attempt's own is noticed). When it is not quiet,
// read, then call Seen.
func (v *View) Quiet() bool {
	events, complete := v.sub.Take()
	v.mu.Lock()
	defer v.mu.Unlock()
	if !complete {
		v.gap = true
	}
	for _, e := range events {
		if e.Seq > v.last {
			v.gap = true
		}
	}
	return !v.gap && v.now().Sub(v.readAt) < v.fresh
}

// Seen records a read of the log up to its end at seq.
func (v *View) Seen(seq int64) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.last, v.gap, v.readAt = max(v.last, seq), false, v.now()
}

// Stage holds e, with rows that commit with it (inTx, may be nil) and a
// step to run once it is committed (after, may be nil), for the
// attempt's next commit under its lease.
func (v *View) Stage(e gh.NewEvent, inTx func(ctx context.Context, tx store.Tx) error, after func(ctx context.Context)) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.staged = append(v.staged, stagedWrite{event: e, inTx: inTx, after: after})
}

// hasStaged reports whether writes wait for a commit.
func (v *View) hasStaged() bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return len(v.staged) > 0
}

func (v *View) lookup(key string) (gh.Event, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	e, ok := v.byKey[key]
	return e, ok
}

// committed records the events a transaction of the attempt committed,
// in seq order, and drops the staged writes it carried.
func (v *View) committed(events []gh.Event, flushed int) {
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, e := range events {
		if e.Key != "" {
			v.byKey[e.Key] = e
		}
		if e.Seq > v.last+1 {
			v.gap = true
		}
		v.last = max(v.last, e.Seq)
	}
	v.staged = v.staged[min(flushed, len(v.staged)):]
}

// LeasedEventByKey is EventByKey for a key that only commits under a lease
// of the session (a gate's opening, a receipt, a tool result): with the
// attempt's view in ctx, the answer comes from it when it holds the key,
// or — when it loaded the whole log — when it does not.
func (k *Kernel) LeasedEventByKey(ctx context.Context, l gh.Lease, key string) (gh.Event, bool, error) {
	if v := viewFor(ctx, l); v != nil {
		if e, ok := v.lookup(key); ok {
			return e, true, nil
		}
		if v.complete {
			return gh.Event{}, false, nil
		}
	}
	return k.st.EventByKey(ctx, l.SessionID, key)
}

// SessionEventByKey is EventByKey that asks the attempt's view first: a
// key it holds needs no read (any key; one it lacks is read).
func (k *Kernel) SessionEventByKey(ctx context.Context, l gh.Lease, key string) (gh.Event, bool, error) {
	if v := viewFor(ctx, l); v != nil {
		if e, ok := v.lookup(key); ok {
			return e, true, nil
		}
	}
	return k.st.EventByKey(ctx, l.SessionID, key)
}

// txNote collects what one transaction of the kernel committed under a
// lease, for the attempt's view and the subscribers once it commits.
type txNote struct {
	view     *View
	events   []gh.Event
	flushed  []Committed
	nFlushed int
	afters   []func(ctx context.Context)
}

type txNoteKey struct{}

func noteFrom(ctx context.Context) *txNote {
	n, _ := ctx.Value(txNoteKey{}).(*txNote)
	return n
}

// inTx runs fn in one transaction, noting what it commits under a lease:
// once it has committed, the attempt's view learns the events and drops
// the staged writes they carried, the staged events are published and
// their after steps run.
func (k *Kernel) inTx(ctx context.Context, fn func(ctx context.Context, tx store.Tx) error) error {
	var note *txNote
	err := k.st.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
		note = &txNote{}
		return fn(context.WithValue(ctx, txNoteKey{}, note), tx)
	})
	if err != nil || note == nil || note.view == nil {
		return err
	}
	note.view.committed(note.events, note.nFlushed)
	if len(note.flushed) > 0 {
		k.publish(note.view.lease.SessionID, note.flushed)
	}
	for _, f := range note.afters {
		f(ctx)
	}
	return nil
}

// flush writes the attempt's staged writes in tx, ahead of the commit
// that carries them, once per transaction, in one batch with then (the
// commit's own events, whose results it returns).
func (k *Kernel) flush(ctx context.Context, tx store.Tx, l gh.Lease, now time.Time, then []leasedWrite) ([]Committed, error) {
	note := noteFrom(ctx)
	v := viewFor(ctx, l)
	if note == nil || v == nil || note.view != nil {
		return k.appendLeased(ctx, tx, l, then, now)
	}
	note.view = v
	v.mu.Lock()
	staged := append([]stagedWrite(nil), v.staged...)
	v.mu.Unlock()
	ws := make([]leasedWrite, 0, len(staged)+len(then))
	for _, s := range staged {
		_, payload, err := k.validateEvent(s.event, false)
		if err != nil {
			return nil, err
		}
		ws = append(ws, leasedWrite{s.event, payload})
	}
	committed, err := k.appendLeased(ctx, tx, l, append(ws, then...), now)
	if err != nil {
		return nil, err
	}
	for i, s := range staged {
		if s.inTx != nil {
			if err := s.inTx(ctx, tx); err != nil {
				return nil, err
			}
		}
		note.flushed = append(note.flushed, committed[i])
		if s.after != nil {
			note.afters = append(note.afters, s.after)
		}
	}
	note.nFlushed = len(staged)
	return committed[len(staged):], nil
}

// LeasedEvents is Events for the session of a lease the caller holds: the
// session exists, so an empty page needs no second statement to tell it
// from an unknown session.
func (k *Kernel) LeasedEvents(ctx context.Context, l gh.Lease, after int64, limit int) ([]gh.Event, error) {
	limit, err := pageOf(after, limit)
	if err != nil {
		return nil, err
	}
	return k.st.Events(ctx, l.SessionID, after, limit)
}

// Flush commits what the attempt staged, in a transaction of its own, now:
// before a step whose progress people should see while it runs (a tool
// that takes its time shows its call first). Nothing staged: no commit.
func (k *Kernel) Flush(ctx context.Context, l gh.Lease) error {
	v := viewFor(ctx, l)
	if v == nil || !v.hasStaged() {
		return nil
	}
	return k.outageTx(ctx, l, func(ctx context.Context, tx store.Tx) error {
		_, err := k.flush(ctx, tx, l, k.now(), nil)
		return err
	}, nil)
}
