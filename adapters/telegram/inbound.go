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

	"github.com/gatehouse/gatehouse/gateway/chat"
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

// poll long-polls getUpdates until ctx ends. The offset names the first
// update not yet handled; Telegram forgets everything below the offset of
// a call, so it moves only past updates the sink took, in order.
func (a *Adapter) poll(ctx context.Context, sink chat.Sink) {
	var offset int64
	wait := backoff{}
	defer func() {
		if offset != 0 {
			a.confirm(offset)
		}
	}()
	for ctx.Err() == nil {
		raws, err := a.getUpdates(ctx, offset, a.cfg.PollTimeout)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			a.log.Error("telegram: getUpdates failed", "err", err)
			var ae *apiError
			if errors.As(err, &ae) {
				wait.sleep(ctx, ae.RetryAfter)
				continue
			}
			wait.sleep(ctx, 0)
			continue
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
			wait.sleep(ctx, 0)
			continue
		}
		wait.reset()
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

// backoff waits longer after each failure: 100 ms doubling to 5 s.
type backoff struct{ d time.Duration }

func (b *backoff) reset() { b.d = 0 }

// sleep waits the next step, or atLeast when the server asked for more
// (a 429's retry_after), or until ctx ends.
func (b *backoff) sleep(ctx context.Context, atLeast time.Duration) {
	if b.d == 0 {
		b.d = 100 * time.Millisecond
	} else {
		b.d = min(2*b.d, 5*time.Second)
	}
	t := time.NewTimer(max(b.d, atLeast))
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
