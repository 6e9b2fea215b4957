package slacktest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/gorilla/websocket"

	"github.com/gatehouse/gatehouse/adapters/internal/platformfake"
)

// ---- delivery ----

// deliver sends one attempt of d: over the newest socket (queued until
// one is open), or as a signed POST in Events API mode.
func (f *SlackFake) deliver(d *slackDelivery, reason string) {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return
	}
	attempt := d.sends
	d.sends++
	if f.eventsURL != "" {
		// One channel's events go one after another, so a suite sees them
		// in the order they were said; channels and presses run side by
		// side.
		key := d.chat
		if d.kind == "interactive" {
			key = "press:" + d.id
		}
		q := f.postQueues[key]
		if q == nil {
			q = &slackPostQueue{}
			f.postQueues[key] = q
		}
		q.jobs = append(q.jobs, slackPostJob{d, f.eventsURL, attempt, reason})
		if !q.running {
			q.running = true
			f.wg.Add(1)
			go f.drain(key, q)
		}
		f.mu.Unlock()
		return
	}
	f.seq++
	env := &slackEnvelope{id: fmt.Sprintf("%08x-fake-4000-8000-%012d", f.seq, f.seq), d: d}
	f.envelopes[env.id] = env
	msg, _ := json.Marshal(map[string]any{
		"envelope_id":              env.id,
		"type":                     d.kind,
		"payload":                  json.RawMessage(d.payload),
		"accepts_response_payload": d.kind == "interactive" || d.kind == "slash_commands",
		"retry_attempt":            attempt,
		"retry_reason":             reason,
	})
	c := f.liveConnLocked()
	if c == nil {
		f.queue = append(f.queue, slackQueued{env, msg})
		f.mu.Unlock()
		return
	}
	f.mu.Unlock()
	f.sendEnvelope(c, slackQueued{env, msg})
}

func (f *SlackFake) liveConnLocked() *slackConn {
	for i := len(f.conns) - 1; i >= 0; i-- {
		if !f.conns[i].draining {
			return f.conns[i]
		}
	}
	return nil
}

func (f *SlackFake) sendEnvelope(c *slackConn, q slackQueued) {
	if err := c.WriteText(q.msg); err != nil {
		// The socket is going away: the next one gets it.
		f.mu.Lock()
		f.queue = append(f.queue, q)
		f.mu.Unlock()
		return
	}
	if q.env.d.kind == "events_api" {
		f.armResend(q.env.d, f.opts.ackTimeout, "timeout")
	}
}

// armResend resends d after wait unless it has been acknowledged by then
// or has used up its retries.
func (f *SlackFake) armResend(d *slackDelivery, wait time.Duration, reason string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return
	}
	if d.timer != nil {
		d.timer.Stop()
	}
	d.timer = time.AfterFunc(wait, func() {
		f.mu.Lock()
		again := !f.closed && !d.acked && d.sends <= f.opts.maxRetries
		f.mu.Unlock()
		if again {
			f.deliver(d, reason)
		}
	})
}

func (f *SlackFake) ackLocked(d *slackDelivery) {
	if !d.acked {
		d.acked = true
		close(d.ackCh)
	}
	if d.timer != nil {
		d.timer.Stop()
	}
}

type slackPostQueue struct {
	jobs    []slackPostJob
	running bool
}

type slackPostJob struct {
	d       *slackDelivery
	target  string
	attempt int
	reason  string
}

// drain posts q's jobs in order until it is empty.
func (f *SlackFake) drain(key string, q *slackPostQueue) {
	defer f.wg.Done()
	for {
		f.mu.Lock()
		if len(q.jobs) == 0 || f.closed {
			q.running = false
			delete(f.postQueues, key)
			f.mu.Unlock()
			return
		}
		j := q.jobs[0]
		q.jobs = q.jobs[1:]
		f.mu.Unlock()
		f.post(j.d, j.target, j.attempt, j.reason)
	}
}

// post delivers d to the Events API handler, signed, and records the
// answer; anything but 200 within the ack timeout is retried later.
func (f *SlackFake) post(d *slackDelivery, target string, attempt int, reason string) {
	body, ct := d.payload, "application/json"
	if d.kind == "interactive" {
		body, ct = []byte("payload="+url.QueryEscape(string(d.payload))), "application/x-www-form-urlencoded"
	}
	ctx, cancel := context.WithTimeout(f.ctx, f.opts.ackTimeout)
	defer cancel()
	header := f.signed(ct, body)
	if attempt > 0 {
		header.Set("X-Slack-Retry-Num", strconv.Itoa(attempt))
		header.Set("X-Slack-Retry-Reason", reason)
	}
	// An interaction's answer comes after the 200: do not wait for the
	// handler to finish.
	status, err := platformfake.Post(ctx, http.DefaultClient, target, body, header, d.kind != "interactive")
	if err != nil {
		f.t.Logf("slack fake: %v", err)
		return
	}
	f.mu.Lock()
	d.statuses = append(d.statuses, status)
	if status == http.StatusOK {
		f.ackLocked(d)
	}
	f.mu.Unlock()
	if status != http.StatusOK && d.kind == "events_api" {
		next := "http_error"
		if status == 0 {
			next = "http_timeout"
		}
		f.armResend(d, f.opts.retryDelay, next)
	}
}

// ---- Socket Mode ----

func (f *SlackFake) serveLink(w http.ResponseWriter, r *http.Request) {
	ticket := r.URL.Query().Get("ticket")
	f.mu.Lock()
	f.sockets = append(f.sockets, time.Now())
	if f.failLocked(w, "") {
		f.mu.Unlock()
		return
	}
	valid := f.tickets[ticket]
	delete(f.tickets, ticket)
	if !valid {
		f.refusalLocked("socket: connection with an unknown or used ticket %q", ticket)
	}
	f.mu.Unlock()
	if !valid {
		http.Error(w, "invalid ticket", http.StatusUnauthorized)
		return
	}
	// slack-go sends Origin: https://api.slack.com.
	ws, err := platformfake.Upgrade(w, r)
	if err != nil {
		return
	}
	c := &slackConn{WSConn: platformfake.WSConn{WS: ws}, done: make(chan struct{})}
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		_ = ws.Close()
		return
	}
	n := len(f.conns) + 1
	f.wg.Add(2)
	f.mu.Unlock()
	hello, _ := json.Marshal(map[string]any{
		"type": "hello", "num_connections": n,
		"debug_info":      map[string]any{"host": "fake-applink", "build_number": 1, "approximate_connection_time": 18060},
		"connection_info": map[string]any{"app_id": f.AppID},
	})
	if err := c.WriteText(hello); err != nil {
		f.wg.Add(-2)
		_ = ws.Close()
		return
	}
	// Deliveries start only after hello, as on Slack.
	f.mu.Lock()
	if f.dropSockets {
		// A socket that fails at once: the hello, then nothing.
		f.mu.Unlock()
		f.wg.Add(-2)
		_ = ws.Close()
		return
	}
	f.conns = append(f.conns, c)
	queued := f.queue
	f.queue = nil
	closed := f.closed
	f.mu.Unlock()
	if closed {
		_ = ws.Close()
	}
	go f.ping(c)
	for _, q := range queued {
		f.sendEnvelope(c, q)
	}
	f.readAcks(c)
}

func (f *SlackFake) ping(c *slackConn) {
	defer f.wg.Done()
	t := time.NewTicker(f.opts.pingEvery)
	defer t.Stop()
	for {
		select {
		case <-c.done:
			return
		case <-t.C:
			_ = c.WS.WriteControl(websocket.PingMessage, []byte("fake-ping"), time.Now().Add(time.Second))
		}
	}
}

// readAcks reads what the app sends back: acknowledgements.
func (f *SlackFake) readAcks(c *slackConn) {
	defer f.wg.Done()
	defer func() {
		close(c.done)
		_ = c.WS.Close()
		f.mu.Lock()
		for i, x := range f.conns {
			if x == c {
				f.conns = append(f.conns[:i], f.conns[i+1:]...)
				break
			}
		}
		f.mu.Unlock()
	}()
	for {
		_, data, err := c.WS.ReadMessage()
		if err != nil {
			return
		}
		var ack struct {
			EnvelopeID string          `json:"envelope_id"`
			Payload    json.RawMessage `json:"payload"`
		}
		f.mu.Lock()
		env := (*slackEnvelope)(nil)
		if json.Unmarshal(data, &ack) == nil {
			env = f.envelopes[ack.EnvelopeID]
		}
		switch {
		case env == nil:
			f.refusalLocked("socket: message that acknowledges no envelope: %s", data)
		case env.acked:
			f.refusalLocked("socket: envelope %s (%s) acknowledged twice", env.id, env.d.id)
		case len(data) >= maxSocketResponse:
			// Slack drops a response of 20 KB or more without a word.
			f.refusalLocked("socket: response to envelope %s (%s) is %d bytes, at most %d", env.id, env.d.id, len(data), maxSocketResponse-1)
		default:
			env.acked = true
			if env.d.kind == "slash_commands" {
				env.d.response = ack.Payload
			}
			f.ackLocked(env.d)
		}
		f.mu.Unlock()
	}
}

// signed are the headers of a request Slack sends to the app: body's
// content type and its signature.
func (f *SlackFake) signed(contentType string, body []byte) http.Header {
	ts := time.Now().Unix()
	return http.Header{
		"Content-Type":              {contentType},
		"User-Agent":                {"Slackbot 1.0 (+https://api.slack.com/robots)"},
		"X-Slack-Request-Timestamp": {strconv.FormatInt(ts, 10)},
		"X-Slack-Signature":         {SlackSignature(f.SigningSecret, ts, body)},
	}
}
