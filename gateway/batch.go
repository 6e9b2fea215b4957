package gateway

import (
	"context"
	"sync"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/gateway/chat"
	"github.com/gatehouse/gatehouse/store"
)

// Receives are group-committed: updates that arrive while a transaction is
// committing wait for the next one, which commits all of them at once (up
// to maxBatch). Each still gets its own receive-log row, user.message and
// run; they share the transaction's round trips and its fsync. A batch
// that fails for any reason — one of its updates raced its own
// redelivery, say — is rolled back whole, and its updates are committed
// one by one instead, so one bad update never costs another its answer.

const (
	maxBatch = 64
	// batchIdle is how long the committing goroutine waits for work
	// before it exits (the next receive starts another).
	batchIdle = time.Second
	// batchTimeout bounds one batch's transaction.
	batchTimeout = 30 * time.Second
	// committers is how many batches may commit at once: one would
	// leave the database's other cores idle while it commits.
	committers = 2
)

type pendingReceive struct {
	ctx  context.Context
	in   gh.Inbound
	res  chat.ReceiveResult
	err  error
	done chan struct{}
}

type receiveBatcher struct {
	g       *Gateway
	queue   chan *pendingReceive
	mu      sync.Mutex
	running int
	// quit, once closed, lets idle committers end at once instead of
	// after batchIdle.
	quit     chan struct{}
	quitOnce sync.Once
}

func (g *Gateway) batcher() *receiveBatcher {
	g.batchOnce.Do(func() {
		g.batch = &receiveBatcher{g: g, queue: make(chan *pendingReceive, 4*maxBatch), quit: make(chan struct{})}
	})
	return g.batch
}

// submit queues in for the next batch and waits for its outcome.
func (b *receiveBatcher) submit(ctx context.Context, in gh.Inbound) (chat.ReceiveResult, error) {
	p := &pendingReceive{ctx: ctx, in: in, done: make(chan struct{})}
	select {
	case b.queue <- p:
	case <-ctx.Done():
		return chat.ReceiveResult{}, gh.Wrap(gh.CodeUnavailable, ctx.Err(), "receive abandoned before it was committed")
	}
	b.mu.Lock()
	if b.running < committers && (b.running == 0 || len(b.queue) > 0) {
		b.running++
		go b.run()
	}
	b.mu.Unlock()
	<-p.done
	return p.res, p.err
}

// wait returns once no committer runs: each ends after batchIdle without
// work, having committed everything queued.
func (b *receiveBatcher) wait(ctx context.Context) error {
	b.quitOnce.Do(func() { close(b.quit) })
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		b.mu.Lock()
		n := b.running
		b.mu.Unlock()
		if n == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return gh.Wrap(gh.CodeUnavailable, ctx.Err(), "receive committers did not stop in time")
		case <-t.C:
		}
	}
}

// endIfIdle counts the calling committer out when nothing is queued, under
// the same lock submit checks the count with, so a receive queued at that
// moment always finds a committer to run it.
func (b *receiveBatcher) endIfIdle() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.queue) > 0 {
		return false
	}
	b.running--
	return true
}

func (b *receiveBatcher) run() {
	idle := time.NewTimer(batchIdle)
	defer idle.Stop()
	for {
		var first *pendingReceive
		select {
		case first = <-b.queue:
		case <-b.quit:
			// Stopping: end now if nothing is queued (a committer started
			// later, by a late receive, ends the same way).
			if b.endIfIdle() {
				return
			}
			continue
		case <-idle.C:
			if b.endIfIdle() {
				return
			}
			idle.Reset(batchIdle)
			continue
		}
		batch := []*pendingReceive{first}
	fill:
		for len(batch) < maxBatch {
			select {
			case p := <-b.queue:
				batch = append(batch, p)
			default:
				break fill
			}
		}
		b.commit(batch)
		idle.Reset(batchIdle)
	}
}

func (b *receiveBatcher) commit(batch []*pendingReceive) {
	live := batch[:0:0]
	for _, p := range batch {
		if err := p.ctx.Err(); err != nil {
			// The adapter gave up and will not acknowledge: nothing of it
			// is written, and the platform delivers it again.
			p.err = gh.Wrap(gh.CodeUnavailable, err, "receive abandoned before it was committed")
			close(p.done)
			continue
		}
		live = append(live, p)
	}
	if len(live) == 0 {
		return
	}
	if len(live) > 1 {
		ctx, cancel := context.WithTimeout(context.Background(), batchTimeout)
		counts := map[string]int{}
		results := make([]chat.ReceiveResult, len(live))
		err := b.g.st.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
			clear(counts)
			for i, p := range live {
				r, err := b.g.receiveTx(ctx, tx, p.in, false, counts)
				if err != nil {
					return err
				}
				results[i] = r
			}
			return nil
		})
		cancel()
		if err == nil {
			for i, p := range live {
				p.res = results[i]
				close(p.done)
			}
			return
		}
	}
	for _, p := range live {
		p.res, p.err = b.g.receiveOne(p.ctx, p.in)
		close(p.done)
	}
}
