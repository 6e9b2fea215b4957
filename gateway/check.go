package gateway

import (
	"context"
	"fmt"
	"strings"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/gateway/chat"
	"github.com/gatehouse/gatehouse/store"
)

// The Test (POST /v1/adapters/{platform}/check, the admin page's Test
// button, `gatehouse check`) walks what must hold for a message written to
// the bot to be answered, in the order it happens, and says of each step
// whether it holds and, when it does not, what to do.

// Check step names, in the order Check walks them.
const (
	StepToken       = "token"
	StepLease       = "lease"
	StepReceiving   = "receiving"
	StepLastMessage = "last_message"
	StepReply       = "reply"
)

// Check step results. A skip is not a failure: the step does not apply
// (no webhook check for this platform, nothing received yet) and Detail
// says why.
const (
	CheckPass = "pass"
	CheckFail = "fail"
	CheckSkip = "skip"
)

// CheckStep is one step of the Test.
type CheckStep struct {
	Name   string `json:"name"`
	Result string `json:"result"`
	// Detail says what was found.
	Detail string `json:"detail"`
	// Fix says what to do, on a failure.
	Fix string `json:"fix,omitempty"`
}

// CheckResult is the Test of one platform, from this replica.
type CheckResult struct {
	Platform string `json:"platform"`
	// OK is true when no step failed (skips count as passes).
	OK bool `json:"ok"`
	// Failed names the first failing step.
	Failed  string      `json:"failed,omitempty"`
	Steps   []CheckStep `json:"steps"`
	Replica string      `json:"replica"`
	At      time.Time   `json:"at"`
}

// Check walks the Test for platform: the token, the lease, receiving,
// the last message and the last reply. An unknown platform is a
// *gh.Error of code not_found; a step that cannot be read (the store
// failing) is a failed step, not an error, so the rest still show.
func (g *Gateway) Check(ctx context.Context, platform string) (CheckResult, error) {
	a := g.adapters[platform]
	if a == nil {
		return CheckResult{}, gh.Errorf(gh.CodeNotFound, "no platform %q is served here (served: %s)", platform, strings.Join(g.Platforms(), ", "))
	}
	res := CheckResult{Platform: platform, Replica: g.cfg.Owner, At: g.cfg.Now().UTC()}
	for _, step := range []func(context.Context, chat.Adapter) CheckStep{g.checkToken, g.checkLease, g.checkReceiving, g.checkLastMessage, g.checkReply} {
		s := step(ctx, a)
		if s.Result == CheckFail && res.Failed == "" {
			res.Failed = s.Name
		}
		res.Steps = append(res.Steps, s)
	}
	res.OK = res.Failed == ""
	return res, nil
}

func envName(platform, what string) string { return strings.ToUpper(platform) + "_" + what }

// checkToken makes the adapter's cheap authenticated call (chat.Prober)
// and records its outcome as evidence, like any probe.
func (g *Gateway) checkToken(ctx context.Context, a chat.Adapter) CheckStep {
	s := CheckStep{Name: StepToken}
	p, ok := a.(chat.Prober)
	if !ok {
		s.Result, s.Detail = CheckSkip, "this adapter has no authenticated call to test the token with"
		return s
	}
	pctx, cancel := context.WithTimeout(ctx, g.cfg.SendTimeout)
	err := p.Probe(pctx)
	cancel()
	if ctx.Err() != nil {
		s.Result, s.Detail = CheckFail, "the Test was cut short: "+ctx.Err().Error()
		return s
	}
	g.Health(ctx, a.Platform(), err)
	switch {
	case err == nil:
		s.Result, s.Detail = CheckPass, "the platform accepted the token (an authenticated call answered)"
	case chat.IsTokenRefused(err):
		s.Result, s.Detail = CheckFail, err.Error()
		s.Fix = "The platform refused the token: set " + envName(a.Platform(), "BOT_TOKEN") + " to the bot's current token (a revoked or mistyped token, or one for another bot, is refused) and restart."
	default:
		s.Result, s.Detail = CheckFail, "the platform did not answer: "+err.Error()
		s.Fix = "Check that this host reaches the platform's API: its API URL setting, a proxy or firewall in between, DNS. The token could not be tested."
	}
	return s
}

// checkLease says who runs the platform's connection: here, another
// replica (standby is not an outage), or nobody.
func (g *Gateway) checkLease(ctx context.Context, a chat.Adapter) CheckStep {
	s := CheckStep{Name: StepLease}
	platform := a.Platform()
	l, ok, err := g.st.GetPlatformLease(ctx, "platform:"+platform)
	if err != nil {
		s.Result, s.Detail = CheckFail, "the lease could not be read: "+err.Error()
		s.Fix = "The database does not answer: see /readyz and the log."
		return s
	}
	st := g.snapshot(platform)
	switch {
	case ok && l.ExpiresAt.After(g.cfg.Now()) && l.Owner == g.cfg.Owner:
		s.Result, s.Detail = CheckPass, "held here ("+l.Owner+"): this replica runs the connection and sends the replies"
	case ok && l.ExpiresAt.After(g.cfg.Now()):
		s.Result, s.Detail = CheckPass, "held by replica "+l.Owner+", which runs the connection and sends the replies; this replica is on standby (not an outage) and takes over if it stops"
	default:
		s.Result, s.Detail = CheckFail, "nobody holds the lease: no replica runs the connection or sends replies"
		switch {
		case st.state == StateStopped:
			s.Fix = "This replica's platforms are not running: start the gateway (gatehouse serve) with " + envName(platform, "BOT_TOKEN") + " set."
		case st.lastError != "":
			s.Fix = "This replica cannot take the lease (" + st.lastError + "): see /readyz and the log."
		default:
			s.Fix = "A replica takes the lease within a few seconds of starting: run the Test again; if it stays so, see the log."
		}
	}
	return s
}

// snapshot copies the platform's state.
func (g *Gateway) snapshot(platform string) adapterState {
	g.mu.Lock()
	defer g.mu.Unlock()
	if s := g.states[platform]; s != nil {
		return *s
	}
	return adapterState{}
}

// checkReceiving: in webhook mode, whether the platform still delivers to
// us (chat.WebhookProber); with a connection (long polling, a socket),
// whether its last round trip answered recently.
func (g *Gateway) checkReceiving(ctx context.Context, a chat.Adapter) CheckStep {
	s := CheckStep{Name: StepReceiving}
	platform := a.Platform()
	if g.hooks[platform] != nil {
		wp, ok := a.(chat.WebhookProber)
		if !ok {
			s.Result, s.Detail = CheckSkip, "webhook mode: this adapter cannot ask the platform whether it still delivers to us; the last message step shows whether updates arrive"
			return s
		}
		pctx, cancel := context.WithTimeout(ctx, g.cfg.SendTimeout)
		err := wp.ProbeWebhook(pctx)
		cancel()
		if err != nil {
			s.Result, s.Detail = CheckFail, "webhook mode: "+err.Error()
			s.Fix = "The platform does not deliver to this gateway: check that GATEHOUSE_PUBLIC_URL (or the webhook URL setting) reaches /hooks/" + platform +
				" from the internet over HTTPS and that no other program registered another webhook for the bot; the replica holding the lease registers it again when it restarts."
			if chat.IsTokenRefused(err) {
				s.Fix = "The platform refused the token: set " + envName(platform, "BOT_TOKEN") + " and restart."
			}
			return s
		}
		s.Result, s.Detail = CheckPass, "webhook mode: the platform has our webhook and its last delivery did not fail"
		return s
	}
	st := g.snapshot(platform)
	now := g.cfg.Now()
	switch {
	case !st.holding && st.state == StateStandby:
		s.Result, s.Detail = CheckSkip, "the connection runs on the replica holding the lease, not here: run the Test there (or see its /v1/adapters)"
	case !st.holding:
		s.Result, s.Detail = CheckFail, "no connection runs here ("+st.state+")"
		if st.lastError != "" {
			s.Detail += ": " + st.lastError
		}
		s.Fix = "See the lease step."
	case st.state == StateConnected && now.Sub(st.lastOK) <= 2*g.cfg.ProbeInterval:
		s.Result, s.Detail = CheckPass, fmt.Sprintf("connected: the last round trip to the platform answered %s ago", roundAgo(now.Sub(st.lastOK)))
	case st.state == StateConnected:
		s.Result, s.Detail = CheckFail, fmt.Sprintf("no round trip to the platform for %s", roundAgo(now.Sub(st.lastOK)))
		s.Fix = "The connection has gone quiet: see the log; restart the gateway if it stays so."
	default:
		s.Result, s.Detail = CheckFail, st.state+": "+st.lastError
		if !st.lastFailed.IsZero() {
			s.Detail += fmt.Sprintf(" (%s ago)", roundAgo(now.Sub(st.lastFailed)))
		}
		switch {
		case st.tokenRefused:
			s.Fix = "The platform refused the token: set " + envName(platform, "BOT_TOKEN") + " and restart. Retries are slowed to one every 30s–10m until then."
		case st.lastErr == errNoEvidence || st.lastErr == nil:
			s.Fix = "The connection is starting: run the Test again in a few seconds."
		default:
			s.Fix = "The platform's API fails or cannot be reached: check its API URL setting and the network path; the gateway keeps retrying (1s–1m)."
		}
	}
	return s
}

func roundAgo(d time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(time.Second)
}

// Drop reasons after which the operator has something to do; the others
// (a duplicate, a command, a bot's message) are the gateway working.
var actionableDrops = map[string]bool{chat.ReasonNotAllowed: true, chat.ReasonPairing: true, chat.ReasonFlood: true}

// checkLastMessage reads the receive log's newest entry.
func (g *Gateway) checkLastMessage(ctx context.Context, a chat.Adapter) CheckStep {
	s := CheckStep{Name: StepLastMessage}
	platform := a.Platform()
	last, ok, err := g.st.LastReceive(ctx, platform)
	switch {
	case err != nil:
		s.Result, s.Detail, s.Fix = CheckFail, "the receive log could not be read: "+err.Error(), "The database does not answer: see /readyz and the log."
	case !ok:
		s.Result, s.Detail = CheckSkip, "nothing received yet: write to the bot and run the Test again"
	case last.Outcome == chat.ReceiveHandedOn:
		s.Result, s.Detail = CheckPass, fmt.Sprintf("received %s from user %s: handed on to the agent (session %s)", last.ReceivedAt.UTC().Format(time.RFC3339), last.UserID, last.SessionID)
	default:
		s.Detail = fmt.Sprintf("received %s from user %s: dropped (%s)", last.ReceivedAt.UTC().Format(time.RFC3339), last.UserID, last.Reason)
		if last.Detail != "" {
			s.Detail += ": " + last.Detail
		}
		hint := dropHint(last.Reason, platform)
		if actionableDrops[last.Reason] {
			s.Result, s.Fix = CheckFail, hint
		} else {
			s.Result = CheckPass
			if hint != "" {
				s.Detail += ". " + hint
			}
		}
	}
	return s
}

// checkReply reads the platform's newest outbox row.
func (g *Gateway) checkReply(ctx context.Context, a chat.Adapter) CheckStep {
	s := CheckStep{Name: StepReply}
	rows, err := g.st.ListOutbox(ctx, store.OutboxFilter{Platform: a.Platform(), Limit: 1})
	if err != nil {
		s.Result, s.Detail, s.Fix = CheckFail, "the outbox could not be read: "+err.Error(), "The database does not answer: see /readyz and the log."
		return s
	}
	if len(rows) == 0 {
		s.Result, s.Detail = CheckSkip, "nothing sent yet"
		return s
	}
	r, now := rows[0], g.cfg.Now()
	what := fmt.Sprintf("the newest reply (%s, session %s, queued %s)", r.Kind, r.SessionID, r.Created.UTC().Format(time.RFC3339))
	switch r.State {
	case store.OutboxSent:
		s.Result, s.Detail = CheckPass, what+": delivered"
	case store.OutboxSending:
		s.Result, s.Detail = CheckPass, what+": being sent now"
	case store.OutboxPending:
		switch {
		case r.LastError != "":
			s.Result, s.Detail = CheckFail, fmt.Sprintf("%s: pending after %d failed attempt(s), next at %s: %s", what, r.Attempts, r.AvailableAt.UTC().Format(time.RFC3339), r.LastError)
			s.Fix = "The platform refuses or fails the send; it is retried (2s–5m) until " + itoa(int64(g.cfg.MaxAttempts)) + " attempts make it a dead letter. The error says why."
		case now.Sub(r.Created) > time.Minute:
			s.Result, s.Detail = CheckFail, fmt.Sprintf("%s: pending for %s and never tried", what, roundAgo(now.Sub(r.Created)))
			s.Fix = "No dispatcher sends it: see the lease step."
		default:
			s.Result, s.Detail = CheckPass, what+": waiting its turn to be sent"
		}
	case store.OutboxDead:
		s.Result, s.Detail = CheckFail, what+": a dead letter, not sent: "+r.LastError
		s.Fix = "It is not sent again. The error says why (a blocked bot, a chat that is gone, the platform failing every attempt); /v1/outbox?state=dead lists every dead letter."
	default:
		s.Result, s.Detail = CheckSkip, what+": "+r.State
	}
	return s
}
