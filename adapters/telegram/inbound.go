package telegram

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/gateway/chat"
	"github.com/gatehouse/gatehouse/internal/backoff"
)

// Handler serves Telegram's webhook in webhook mode, and is nil in
// polling mode. It answers 401 to a wrong secret, 400 to a body that is no
// update, 500 when the sink failed (Telegram then delivers the update
// again) and 200 once the sink has the update.
func (a *Adapter) Handler(sink chat.Sink) http.Handler {
	if !a.webhookMode() {
		return nil
	}
	want := sha256.Sum256([]byte(a.cfg.WebhookSecret))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		// Comparing digests keeps the comparison constant-time in the
		// secret's length too.
		got := sha256.Sum256([]byte(r.Header.Get(secretHeader)))
		if subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxWebhookBody))
		if err != nil {
			http.Error(w, "unreadable body", http.StatusBadRequest)
			return
		}
		ev, err := parseUpdate(body, a.now().UTC())
		if err != nil {
			a.log.Warn("telegram: webhook body is not an update", "err", err)
			http.Error(w, "not an update", http.StatusBadRequest)
			return
		}
		if err := a.handle(r.Context(), sink, ev); err != nil {
			a.log.Error("telegram: webhook update not committed; Telegram will deliver it again", "update", ev.updateID, "err", err)
			http.Error(w, "not committed", http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
}

// The adapter's retry loops' floors and ceilings (docs/operations.md
// names them).
var (
	// emptyPollPolicy spaces polls that came back early and empty. Real
	// Telegram holds a poll until an update comes or the timeout runs
	// out; an emulator, a self-hosted Bot API server under some
	// conditions or a proxy that cuts long polls answers [] at once, and
	// without a pause the loop would spin (thousands of calls a second).
	emptyPollPolicy = backoff.Policy{Floor: 250 * time.Millisecond, Ceiling: 5 * time.Second}
	// pollErrorPolicy spaces polls after a failed one (the network, a
	// 5xx, a 409 from a second poller), and retries of updates the sink
	// did not take.
	pollErrorPolicy = backoff.Policy{Floor: 500 * time.Millisecond, Ceiling: 15 * time.Second}
	// refusedPolicy spaces polls once Telegram refused the token: no
	// retry helps until an operator fixes it. No jitter, so that the
	// floor is a promise: never more than one poll in 30 s.
	refusedPolicy = backoff.Policy{Floor: 30 * time.Second, Ceiling: 10 * time.Minute, Jitter: -1}
	// registerPolicy spaces retries of the calls Connect makes once
	// (setWebhook, setMyCommands).
	registerPolicy = backoff.Policy{Floor: 250 * time.Millisecond, Ceiling: 30 * time.Second}
)

// poll long-polls getUpdates until ctx ends. The offset names the first
// update not yet handled; Telegram forgets everything below the offset of
// a call, so it moves only past updates the sink took, in order.
//
// Every call's outcome goes to sink.Health: nil when Telegram answered
// with updates (or none), the error when it did not, a refused token
// marked so. That is the platform's state in /v1/adapters.
func (a *Adapter) poll(ctx context.Context, sink chat.Sink) {
	var offset int64
	empty, failing, refused, stuck := emptyPollPolicy.New(), pollErrorPolicy.New(), refusedPolicy.New(), pollErrorPolicy.New()
	defer func() {
		if offset != 0 {
			a.confirm(offset)
		}
	}()
	// held is how long a poll must have been held for its emptiness to
	// be Telegram's (nothing came) rather than a server that does not
	// hold polls.
	held := a.cfg.PollTimeout / 2
	var lastCause string
	for ctx.Err() == nil {
		start := time.Now()
		raws, err := a.getUpdates(ctx, offset, a.cfg.PollTimeout)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			err = classify(err)
			sink.Health(ctx, gh.PlatformTelegram, err)
			var d time.Duration
			if chat.IsTokenRefused(err) {
				d = refused.Next()
			} else {
				refused.Reset()
				d = failing.Next()
			}
			var ae *apiError
			if errors.As(err, &ae) {
				d = max(d, ae.RetryAfter)
			}
			// The first failure of a kind is an error; its repeats are
			// in the platform's state, and would only flood the log.
			if cause := err.Error(); cause != lastCause {
				lastCause = cause
				a.log.Error("telegram: getUpdates failed", "err", err, "retry_in", d, "token_refused", chat.IsTokenRefused(err))
			} else {
				a.log.Debug("telegram: getUpdates failed again", "err", err, "retry_in", d)
			}
			backoff.Sleep(ctx, d)
			continue
		}
		sink.Health(ctx, gh.PlatformTelegram, nil)
		failing.Reset()
		refused.Reset()
		if lastCause != "" {
			a.log.Info("telegram: getUpdates answers again")
			lastCause = ""
		}
		failed, before := false, offset
		for _, raw := range raws {
			ev, err := parseUpdate(raw, a.now().UTC())
			if err != nil {
				// Telegram always sends update_id; an element without one
				// cannot be confirmed alone and confirms itself once a
				// later update is handled.
				a.log.Warn("telegram: getUpdates returned something that is not an update", "err", err)
				continue
			}
			if err := a.handle(ctx, sink, ev); err != nil {
				if ctx.Err() == nil {
					a.log.Error("telegram: update not committed; fetching it again", "update", ev.updateID, "err", err)
				}
				failed = true
				break
			}
			offset = max(offset, ev.updateID+1)
		}
		// A failed update, or a batch with nothing that moved the offset
		// (which Telegram does not send), is fetched again after a pause
		// rather than in a tight loop.
		if failed || (len(raws) > 0 && offset == before) {
			backoff.Sleep(ctx, stuck.Next())
			continue
		}
		stuck.Reset()
		if len(raws) == 0 && time.Since(start) < held {
			backoff.Sleep(ctx, empty.Next())
			continue
		}
		empty.Reset()
	}
}

// confirm tells Telegram, as Connect ends, that everything below offset
// is handled, so a successor does not get it again. It is a courtesy (a
// redelivery is deduplicated by the gateway), so it is quick and quiet.
func (a *Adapter) confirm(offset int64) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if _, err := a.getUpdates(ctx, offset, 0); err != nil {
		a.log.Debug("telegram: final offset not confirmed", "err", err)
	}
}

// apiResponse is the Bot API's envelope.
type apiResponse struct {
	OK          bool            `json:"ok"`
	Result      json.RawMessage `json:"result"`
	ErrorCode   int             `json:"error_code"`
	Description string          `json:"description"`
	Parameters  struct {
		RetryAfter int `json:"retry_after"`
	} `json:"parameters"`
}

// getUpdates is one getUpdates call, made here rather than by the library
// (whose method is unexported and whose loop acknowledges too early). It
// returns the updates undecoded, so each is parsed on its own.
func (a *Adapter) getUpdates(ctx context.Context, offset int64, timeout time.Duration) ([]json.RawMessage, error) {
	params := map[string]any{
		"offset":          offset,
		"limit":           100,
		"timeout":         int(timeout / time.Second),
		"allowed_updates": allowedUpdates,
	}
	body, err := json.Marshal(params)
	if err != nil {
		return nil, fmt.Errorf("telegram: getUpdates: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout+30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.cfg.APIURL+"/bot"+a.cfg.Token+"/getUpdates", bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("telegram: getUpdates: %w", a.redact(err))
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := a.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("telegram: getUpdates: %w", a.redact(err))
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("telegram: getUpdates: read: %w", err)
	}
	var r apiResponse
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("telegram: getUpdates: HTTP %d, not the Bot API: %w", resp.StatusCode, err)
	}
	if !r.OK {
		return nil, &apiError{Method: "getUpdates", Code: r.ErrorCode, Description: r.Description,
			RetryAfter: time.Duration(r.Parameters.RetryAfter) * time.Second}
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(r.Result, &raws); err != nil {
		return nil, fmt.Errorf("telegram: getUpdates: result is not a list: %w", err)
	}
	return raws, nil
}

// redact keeps the token out of an error that quotes the URL.
func (a *Adapter) redact(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		ue.URL = strings.ReplaceAll(ue.URL, a.cfg.Token, "***")
	}
	return err
}

// apiError is a Bot API refusal of a call the adapter makes itself.
type apiError struct {
	Method      string
	Code        int
	Description string
	RetryAfter  time.Duration
}

func (e *apiError) Error() string {
	s := fmt.Sprintf("telegram: %s: %d %s", e.Method, e.Code, e.Description)
	if e.Code == http.StatusConflict {
		s += " (another instance is polling with this token, or a webhook is set: remove it or configure a webhook secret)"
	}
	return s
}
