package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/cards"
	"github.com/gatehouse/gatehouse/gateway/chat"
	"github.com/gatehouse/gatehouse/gateway/pacing"
	"github.com/gatehouse/gatehouse/internal/backoff"
	"github.com/gatehouse/gatehouse/store"
)

// The dispatcher sends one platform's outbox rows, on the replica holding
// the platform's lease, so its pacing is the only pacing. A session's rows
// go out in seq order, one at a time; different chats go out in parallel.
//
// A send is at most once: a row is claimed (state sending) before its first
// part goes out, and a row found still sending after its claim expired —
// the replica died mid-send — becomes a dead letter marked outcome
// unknown instead of being sent a second time.

const (
	dueBatch       = 100
	maxInflight    = 16
	min429Wait     = time.Second
	stuckReasonFmt = "outcome unknown: the gateway stopped while sending (parts sent before: %d); not sent again"
)

// RetryPolicy spaces one row's retries after failed sends (429s aside,
// which wait as long as the platform asks): 2s, 4s, 8s … at most 5m, each
// shortened by up to a fifth at random so rows that failed together do
// not retry together (docs/operations.md).
var RetryPolicy = backoff.Policy{Floor: 2 * time.Second, Ceiling: 5 * time.Minute}

// MaxRoundWait is the ceiling of DispatchPolicy.
const MaxRoundWait = 30 * time.Second

// DispatchPolicy spaces a dispatcher's rounds while they fail — the store
// failing a round, or the platform failing every send (a transport error,
// a 5xx, a 404 on the method, a refused token): from poll (Config.Poll)
// doubling to 30s. While the platform fails, one send at a time goes out
// after each wait, so a platform that is down sees one request per wait
// instead of one per pending row.
func DispatchPolicy(poll time.Duration) backoff.Policy {
	return backoff.Policy{Floor: poll, Ceiling: MaxRoundWait}
}

type dispatcher struct {
	ob     *Outbox
	a      chat.Adapter
	pace   *pacing.Pacer
	mu     sync.Mutex
	flying map[string]bool // sessions with a send in flight
	sem    chan struct{}
	wg     sync.WaitGroup
	done   chan struct{} // a send finished

	// failing counts the platform's failed sends in a row (under mu);
	// until hold no send starts, and while it is non-zero one send at a
	// time goes out.
	failing *backoff.Backoff
	hold    time.Time
}

// Dispatch sends platform a's outbox rows until ctx ends; sends in flight
// finish before it returns. Run it only while holding the platform's
// lease: its pacing must be the only pacing.
func (ob *Outbox) Dispatch(ctx context.Context, a chat.Adapter) {
	l := a.Limits()
	pace := pacing.New(pacing.Limits{PerChat: l.PerChat, GroupPerMinute: l.GroupPerMinute, PerSecond: l.PerSecond})
	d := &dispatcher{ob: ob, a: a, pace: pace, flying: map[string]bool{}, sem: make(chan struct{}, maxInflight), done: make(chan struct{}, 1),
		failing: DispatchPolicy(ob.cfg.Poll).New()}
	defer d.wg.Wait()
	// roundFails spaces rounds that fail (the store): Poll doubling to
	// 30s, logged once per streak, not once per round.
	roundFails := DispatchPolicy(ob.cfg.Poll).New()
	for {
		next, err := d.round(ctx)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			wait := roundFails.Next()
			if roundFails.Failures() == 1 {
				ob.cfg.Logger.Warn("outbox dispatch failed; retrying with backoff (logged once until it works again)", "platform", a.Platform(), "err", err, "backoff", wait)
			} else {
				ob.cfg.Logger.Debug("outbox dispatch failed again", "platform", a.Platform(), "err", err, "backoff", wait, "failures", roundFails.Failures())
			}
			// Only the backoff or the end: a kick must not cut it short.
			if !backoff.Sleep(ctx, wait) {
				return
			}
			continue
		}
		if n := roundFails.Failures(); n > 0 {
			ob.cfg.Logger.Info("outbox dispatch works again", "platform", a.Platform(), "failedRounds", n)
			roundFails.Reset()
		}
		wait := ob.cfg.Poll
		if next > 0 && next < wait {
			wait = next
		}
		if held := d.heldFor(ob.cfg.Now()); held > wait {
			wait = held
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-ob.kicks[a.Platform()]:
		case <-d.done:
		case <-t.C:
		}
		t.Stop()
	}
}

// heldFor is how long the platform's failures still hold every send.
func (d *dispatcher) heldFor(now time.Time) time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	return max(d.hold.Sub(now), 0)
}

// probing reports whether the platform failed its last send: then one
// send at a time goes out, as a probe.
func (d *dispatcher) probing() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.failing.Failures() > 0
}

// outcome takes a send's outcome for the whole platform: a failure holds
// every send for the next wait of DispatchPolicy (sends that were in
// flight together and fail together count once); anything that shows the
// platform answering ends the hold.
func (d *dispatcher) outcome(err error) {
	now := d.ob.cfg.Now()
	d.mu.Lock()
	if !platformFailed(err) {
		n := d.failing.Failures()
		d.failing.Reset()
		d.hold = time.Time{}
		d.mu.Unlock()
		if n > 0 {
			d.ob.cfg.Logger.Info("platform sends go through again", "platform", d.a.Platform(), "failedSends", n)
		}
		return
	}
	if now.Before(d.hold) {
		d.mu.Unlock()
		return
	}
	wait := d.failing.Next()
	d.hold = now.Add(wait)
	n := d.failing.Failures()
	d.mu.Unlock()
	if n == 1 {
		d.ob.cfg.Logger.Warn("platform failed a send: sends slowed to one at a time, backing off (logged once until one goes through)",
			"platform", d.a.Platform(), "err", err, "backoff", wait)
	} else {
		d.ob.cfg.Logger.Debug("platform failed a send again", "platform", d.a.Platform(), "err", err, "backoff", wait, "failures", n)
	}
}

// platformFailed reports whether a send's error says the platform (not
// this one message) fails: a transport error, a refused token, a 401, a
// 404 on the method, a 5xx. A refusal of the message or chat (a 400, a
// 403, a 429, anything permanent) is the platform answering.
func platformFailed(err error) bool {
	if err == nil {
		return false
	}
	if chat.IsTokenRefused(err) {
		return true
	}
	if se, ok := chat.AsSendError(err); ok {
		switch {
		case se.Permanent || se.Status == 429:
			return false
		case se.Status == 401 || se.Status == 404 || se.Status >= 500 || se.Status == 0:
			return true
		default:
			return false
		}
	}
	return true
}

// round starts every send that may go now and says when the next one may.
func (d *dispatcher) round(ctx context.Context) (time.Duration, error) {
	ob, platform := d.ob, d.a.Platform()
	now := ob.cfg.Now().UTC()
	if wait := d.heldFor(now); wait > 0 {
		return wait, nil // the platform failed: nothing starts before the hold ends
	}
	probing := d.probing()
	stuck, err := ob.st.OutboxStuck(ctx, platform, now, dueBatch)
	if err != nil {
		return 0, err
	}
	for _, r := range stuck {
		if d.isFlying(r.SessionID) {
			continue // ours, still sending (a long split answer)
		}
		r.State, r.LastError, r.Updated = store.OutboxDead, fmt.Sprintf(stuckReasonFmt, r.PartsSent), now
		if _, err := ob.st.UpdateOutbox(ctx, r); err != nil {
			return 0, err
		}
		ob.sends.WithLabelValues(r.Platform, r.Kind, "dead").Inc()
		ob.cfg.Logger.Error("outbox row left sending by a stopped replica: dead letter, not resent", "platform", platform, "session", r.SessionID, "seq", r.Seq)
	}
	due, err := ob.st.OutboxDue(ctx, platform, now, dueBatch)
	if err != nil {
		return 0, err
	}
	var next time.Duration
	for _, r := range due {
		if d.isFlying(r.SessionID) {
			continue
		}
		addr, ok, err := ob.addressOf(ctx, r)
		if err != nil {
			return 0, err
		}
		if !ok {
			if strings.HasPrefix(r.SessionID, approvalCopyPrefix) {
				d.bury(ctx, r, "the approval chat is no longer configured for "+platform+": not sent")
			}
			continue
		}
		if wait := d.pace.Reserve(addr.Address, now); wait > 0 {
			if next == 0 || wait < next {
				next = wait
			}
			continue
		}
		if probing && d.anyFlying() {
			// One send at a time while the platform fails.
			return next, nil
		}
		select {
		case d.sem <- struct{}{}:
		default:
			return next, nil
		}
		claimed, ok, err := ob.st.ClaimOutbox(ctx, r.ID, ob.cfg.Owner, now, now.Add(ob.cfg.SendTimeout*4))
		if err != nil || !ok {
			<-d.sem
			if err != nil {
				return 0, err
			}
			continue
		}
		d.setFlying(r.SessionID, true)
		d.wg.Add(1)
		go func() {
			defer d.wg.Done()
			defer func() { <-d.sem; d.setFlying(claimed.SessionID, false); d.signal() }()
			// A send in flight finishes even when the dispatcher stops:
			// cutting it would leave its outcome unknown.
			d.send(context.WithoutCancel(ctx), claimed, addr)
		}()
	}
	return next, nil
}

func (d *dispatcher) isFlying(s string) bool { d.mu.Lock(); defer d.mu.Unlock(); return d.flying[s] }
func (d *dispatcher) anyFlying() bool        { d.mu.Lock(); defer d.mu.Unlock(); return len(d.flying) > 0 }
func (d *dispatcher) setFlying(s string, v bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if v {
		d.flying[s] = true
	} else {
		delete(d.flying, s)
	}
}
func (d *dispatcher) signal() {
	select {
	case d.done <- struct{}{}:
	default:
	}
}

// send delivers one claimed row and records its outcome.
func (d *dispatcher) send(ctx context.Context, r store.OutboxEntry, addr store.AddressEntry) {
	ob := d.ob
	err := d.deliver(ctx, &r, addr)
	d.outcome(err)
	now := ob.cfg.Now().UTC()
	r.Updated = now
	switch se, isSend := chat.AsSendError(err); {
	case err == nil:
		r.State, r.LastError = store.OutboxSent, ""
	case isSend && se.Status == 429:
		wait := max(se.RetryAfter, min429Wait)
		r.State, r.AvailableAt, r.LastError = store.OutboxPending, now.Add(wait), err.Error()
		d.pace.Hold(addr.Address, now.Add(wait))
		ob.cfg.Logger.Warn("platform rate limit: send rescheduled", "platform", r.Platform, "session", r.SessionID, "seq", r.Seq, "retryAfter", wait)
	case (isSend && !se.Permanent) || (!isSend && notDelivered(err)):
		r.Attempts++
		r.LastError = err.Error()
		if r.Attempts >= ob.cfg.MaxAttempts {
			r.State = store.OutboxDead
		} else {
			r.State, r.AvailableAt = store.OutboxPending, now.Add(retryWait(r.Attempts))
		}
	default:
		// Refused for good, or an error after which the platform may or
		// may not have it: a dead letter, never a second copy.
		r.Attempts++
		r.State, r.LastError = store.OutboxDead, err.Error()
	}
	ob.sends.WithLabelValues(r.Platform, r.Kind, sendResult(r, err)).Inc()
	if r.State == store.OutboxDead {
		ob.cfg.Logger.Error("outbox row is a dead letter", "platform", r.Platform, "session", r.SessionID, "seq", r.Seq, "kind", r.Kind, "err", r.LastError)
	}
	uctx, cancel := context.WithTimeout(ctx, ob.cfg.SendTimeout)
	defer cancel()
	if ok, err := ob.st.UpdateOutbox(uctx, r); err != nil || !ok {
		ob.cfg.Logger.Error("could not record a send's outcome", "platform", r.Platform, "session", r.SessionID, "seq", r.Seq, "ok", ok, "err", err)
	}
}

// retryWait is the wait after a row's failures-th failed send
// (RetryPolicy, with its jitter).
func retryWait(failures int) time.Duration {
	b := RetryPolicy.New()
	var d time.Duration
	for range failures {
		d = b.Next()
	}
	return d
}

func sendResult(r store.OutboxEntry, err error) string {
	switch {
	case r.State == store.OutboxSent:
		return "sent"
	case r.State == store.OutboxDead:
		return "dead"
	}
	if se, ok := chat.AsSendError(err); ok && se.Status == 429 {
		return "rate_limited"
	}
	return "retry"
}

// notSent marks an error met before anything reached the platform: the
// row is retried later, not given up.
func notSent(err error) error { return &chat.SendError{Err: err} }

// notDelivered reports whether err proves the request never reached the
// platform, so sending again cannot make a second copy.
func notDelivered(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

func (d *dispatcher) deliver(ctx context.Context, r *store.OutboxEntry, addr store.AddressEntry) error {
	switch r.Kind {
	case store.OutboxMessage:
		var p Text
		if err := json.Unmarshal(r.Payload, &p); err != nil {
			return &chat.SendError{Permanent: true, Err: err}
		}
		parts := cards.SplitText(p.Text, d.a.Limits().MaxText, d.a.Format)
		for i := r.PartsSent; i < len(parts); i++ {
			if i > r.PartsSent {
				if err := d.waitPace(ctx, addr.Address); err != nil {
					return err
				}
			}
			id, err := d.sendOne(ctx, chat.Outgoing{Address: addr.Address, Text: parts[i]})
			if err != nil {
				return err
			}
			r.PartsSent, r.MessageIDs = i+1, append(r.MessageIDs, id)
			if i < len(parts)-1 {
				// Progress is kept, so a retry resumes after this part,
				// and the claim is extended so the row is not taken for
				// one a dead replica left.
				r.LeaseUntil = d.ob.cfg.Now().UTC().Add(d.ob.cfg.SendTimeout * 4)
				if _, err := d.ob.st.UpdateOutbox(ctx, *r); err != nil {
					return err
				}
			}
		}
		return nil
	case store.OutboxCard:
		var o gh.GateOpened
		if err := json.Unmarshal(r.Payload, &o); err != nil {
			return &chat.SendError{Permanent: true, Err: err}
		}
		gate, err := d.ob.st.GetGate(ctx, o.GateID)
		if err != nil {
			return notSent(err)
		}
		card := chat.CardFor(d.a, o, &gate, d.ob.cfg.PublicURL)
		id, err := d.sendOne(ctx, chat.Outgoing{Address: addr.Address, Text: card.Text, Card: &card})
		if err != nil {
			return err
		}
		r.PartsSent, r.MessageIDs = 1, []string{id}
		// The card is out: sending it again would show two. Its record
		// (which later edits need) is retried here instead.
		c := store.GateCard{GateID: o.GateID, SessionID: gate.SessionID, Platform: addr.Platform, ChatID: addr.ChatID,
			ThreadID: addr.ThreadID, MessageID: id, Created: d.ob.cfg.Now().UTC()}
		for try := range 5 {
			if err = d.ob.st.PutGateCard(ctx, c); err == nil {
				break
			}
			sleep(ctx, time.Duration(try+1)*200*time.Millisecond)
		}
		if err != nil {
			d.ob.cfg.Logger.Error("approval card sent but not recorded: its buttons will not be removed after the decision", "gate", o.GateID, "err", err)
		}
		return nil
	case store.OutboxGrant:
		var gc gh.GrantCreated
		if err := json.Unmarshal(r.Payload, &gc); err != nil {
			return &chat.SendError{Permanent: true, Err: err}
		}
		card, err := d.ob.grantNotice(ctx, d.a, gc)
		if err != nil {
			return notSent(err)
		}
		id, err := d.sendOne(ctx, chat.Outgoing{Address: addr.Address, Text: card.Text, Card: &card})
		if err != nil {
			return err
		}
		r.PartsSent, r.MessageIDs = 1, []string{id}
		return nil
	case store.OutboxCardUpdate:
		var dec gh.GateDecided
		if err := json.Unmarshal(r.Payload, &dec); err != nil {
			return &chat.SendError{Permanent: true, Err: err}
		}
		gate, err := d.ob.st.GetGate(ctx, dec.GateID)
		if err != nil {
			return notSent(err)
		}
		card := chat.CardFor(d.a, d.ob.Opened(ctx, gate), &gate, d.ob.cfg.PublicURL)
		cards, err := d.ob.st.GateCards(ctx, dec.GateID)
		if err != nil {
			return notSent(err)
		}
		// A row edits the cards of its own chat: the session's, or (its
		// copy) the approval chat's, which has a row of its own.
		for i, c := range cards {
			if i < r.PartsSent || c.Platform != d.a.Platform() || c.ChatID != addr.ChatID {
				continue
			}
			cctx, cancel := context.WithTimeout(ctx, d.ob.cfg.SendTimeout)
			err := d.a.EditCard(cctx, gh.Address{Platform: c.Platform, ChatID: c.ChatID, ThreadID: c.ThreadID, ChatType: addr.ChatType}, c.MessageID, card)
			cancel()
			if err != nil {
				return err
			}
			r.PartsSent = i + 1
		}
		return nil
	}
	return &chat.SendError{Permanent: true, Err: gh.Errorf(gh.CodeInternal, "unknown outbox kind %q", r.Kind)}
}

// addressOf is where row r goes: its session's address, or for a copy of
// a card for the approval chat, that chat while it is configured on the
// row's platform.
func (ob *Outbox) addressOf(ctx context.Context, r store.OutboxEntry) (store.AddressEntry, bool, error) {
	session, copied := strings.CutPrefix(r.SessionID, approvalCopyPrefix)
	if !copied {
		return ob.st.AddressBySession(ctx, r.SessionID)
	}
	ac := ob.cfg.ApprovalChat
	if ac.Platform == "" || ac.Platform != r.Platform {
		return store.AddressEntry{}, false, nil
	}
	return store.AddressEntry{SessionID: session, Address: ac}, true, nil
}

// bury makes r a dead letter for reason, unless another replica took it.
func (d *dispatcher) bury(ctx context.Context, r store.OutboxEntry, reason string) {
	ob, now := d.ob, d.ob.cfg.Now().UTC()
	claimed, ok, err := ob.st.ClaimOutbox(ctx, r.ID, ob.cfg.Owner, now, now.Add(ob.cfg.SendTimeout))
	if err != nil || !ok {
		return
	}
	claimed.State, claimed.LastError, claimed.Updated = store.OutboxDead, reason, now
	if _, err := ob.st.UpdateOutbox(ctx, claimed); err != nil {
		ob.cfg.Logger.Warn("could not bury an outbox row", "session", r.SessionID, "seq", r.Seq, "err", err)
		return
	}
	ob.sends.WithLabelValues(r.Platform, r.Kind, "dead").Inc()
	ob.cfg.Logger.Error("outbox row is a dead letter", "platform", r.Platform, "session", r.SessionID, "seq", r.Seq, "kind", r.Kind, "err", reason)
}

func (d *dispatcher) sendOne(ctx context.Context, m chat.Outgoing) (string, error) {
	sctx, cancel := context.WithTimeout(ctx, d.ob.cfg.SendTimeout)
	defer cancel()
	id, err := d.a.Send(sctx, m)
	if f := d.ob.cfg.SendOutcome; f != nil && ctx.Err() == nil {
		f(ctx, d.a.Platform(), err)
	}
	return id, err
}

func (d *dispatcher) waitPace(ctx context.Context, addr gh.Address) error {
	for {
		wait := d.pace.Reserve(addr, d.ob.cfg.Now())
		if wait == 0 {
			return nil
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}
