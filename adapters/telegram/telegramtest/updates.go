package telegramtest

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/gatehouse/gatehouse/adapters/internal/platformfake"
)

// ---- getUpdates ----

// allowedKind reports whether an update of kind goes to the bot under
// the allowed_updates it asked for (Telegram's default leaves out
// chat_member and reactions); f.mu is held.
func (f *TelegramFake) allowedKind(kind string) bool {
	if f.allowed == nil {
		return kind != "chat_member" && kind != "message_reaction" && kind != "message_reaction_count"
	}
	return slices.Contains(f.allowed, kind)
}

func (f *TelegramFake) setAllowed(p tgParams) *tgErr {
	raw, ok := p["allowed_updates"]
	if !ok {
		return nil
	}
	var list []string
	if err := json.Unmarshal([]byte(raw), &list); err != nil {
		return badRequest("can't parse allowed updates")
	}
	if len(list) == 0 {
		f.allowed = nil
	} else {
		f.allowed = list
	}
	return nil
}

// confirm forgets updates below offset, as getUpdates does; f.mu is held.
func (f *TelegramFake) confirm(offset int64) {
	if offset <= 0 {
		return
	}
	for _, u := range f.updates[f.firstOpen:] {
		if u.confirmed || u.id >= offset {
			continue
		}
		if u.redeliver && !u.delivered {
			continue
		}
		u.confirmed = true
	}
	f.advance()
}

// advance moves firstOpen past confirmed updates; f.mu is held.
func (f *TelegramFake) advance() {
	for f.firstOpen < len(f.updates) && f.updates[f.firstOpen].confirmed {
		f.firstOpen++
	}
}

// pending are the updates getUpdates would return; f.mu is held. Updates
// of kinds the bot did not ask for are dropped, as Telegram does.
func (f *TelegramFake) pending(offset int64, limit int) []*tgUpdate {
	var out []*tgUpdate
	for _, u := range f.updates[f.firstOpen:] {
		if len(out) == limit {
			break
		}
		if u.confirmed {
			continue
		}
		if !f.allowedKind(u.kind) {
			u.confirmed = true
			continue
		}
		if u.id >= offset || (u.redeliver && !u.delivered) {
			out = append(out, u)
		}
	}
	f.advance()
	return out
}

func (f *TelegramFake) getUpdates(r *http.Request, p tgParams) (any, *tgErr) {
	offset, _, e := p.int("offset")
	if e != nil {
		return nil, e
	}
	limit, ok, e := p.int("limit")
	if e != nil {
		return nil, e
	}
	if !ok || limit <= 0 || limit > 100 {
		limit = 100
	}
	timeout, _, e := p.int("timeout")
	if e != nil {
		return nil, e
	}
	f.mu.Lock()
	if e := f.setAllowed(p); e != nil {
		f.mu.Unlock()
		return nil, e
	}
	if f.hookURL != "" {
		f.mu.Unlock()
		return nil, &tgErr{code: http.StatusConflict, desc: "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first"}
	}
	if f.pollKick != nil {
		close(f.pollKick)
	}
	kick := make(chan struct{})
	f.pollKick = kick
	defer func() {
		f.mu.Lock()
		if f.pollKick == kick {
			f.pollKick = nil
		}
		f.mu.Unlock()
	}()
	// Telegram holds the request up to timeout seconds while there is
	// nothing to return; a fake that answered [] at once would make a
	// client spin.
	deadline := time.NewTimer(time.Duration(max(timeout, 0)) * time.Second)
	defer deadline.Stop()
	for {
		f.confirm(offset)
		ups := f.pending(offset, int(limit))
		if len(ups) > 0 || timeout <= 0 || f.emptyAtOnce {
			out := make([]json.RawMessage, 0, len(ups))
			for _, u := range ups {
				u.delivered = true
				out = append(out, u.body)
			}
			f.mu.Unlock()
			return out, nil
		}
		changed := f.changed
		f.mu.Unlock()
		select {
		case <-changed:
		case <-deadline.C:
			f.mu.Lock()
			timeout = 0
			continue
		case <-kick:
			// A client that gave up on this request is not a second
			// poller: give its cancellation a moment to arrive.
			select {
			case <-r.Context().Done():
				return []json.RawMessage{}, nil
			case <-time.After(200 * time.Millisecond):
			}
			return nil, &tgErr{code: http.StatusConflict, desc: "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running"}
		case <-r.Context().Done():
			return []json.RawMessage{}, nil
		case <-f.closed:
			return []json.RawMessage{}, nil
		}
		f.mu.Lock()
	}
}

// ---- webhooks ----

func (f *TelegramFake) setWebhook(p tgParams) (any, *tgErr) {
	raw := strings.TrimSpace(p["url"])
	f.mu.Lock()
	defer f.mu.Unlock()
	if raw == "" {
		// An empty URL removes the webhook.
		f.hookURL, f.hookSecret = "", ""
		return true, nil
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return nil, badRequest("bad webhook: invalid webhook URL specified")
	}
	loopback := false
	if ip := net.ParseIP(u.Hostname()); ip != nil && ip.IsLoopback() {
		loopback = true
	}
	if u.Scheme != "https" && !(u.Scheme == "http" && loopback) {
		return nil, badRequest("bad webhook: An HTTPS URL must be provided for webhook")
	}
	secret := p["secret_token"]
	if secret != "" && !validSecret(secret) {
		return nil, badRequest("bad webhook: secret token contains unallowed characters")
	}
	if e := f.setAllowed(p); e != nil {
		return nil, e
	}
	if p.bool("drop_pending_updates") {
		f.dropPending()
	}
	f.hookURL, f.hookSecret = raw, secret
	f.notify()
	return true, nil
}

func validSecret(s string) bool {
	if len(s) > 256 {
		return false
	}
	for _, r := range s {
		if r != '_' && r != '-' && (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') && (r < '0' || r > '9') {
			return false
		}
	}
	return true
}

func (f *TelegramFake) deleteWebhook(p tgParams) (any, *tgErr) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hookURL, f.hookSecret = "", ""
	if p.bool("drop_pending_updates") {
		f.dropPending()
	}
	return true, nil
}

// dropPending forgets every update not yet acknowledged; f.mu is held.
func (f *TelegramFake) dropPending() {
	for _, u := range f.updates[f.firstOpen:] {
		u.confirmed = true
	}
	f.advance()
}

// webhookInfo is getWebhookInfo's result: the fields Telegram always
// sends, and those it sends when they have a value.
func (f *TelegramFake) webhookInfo() any {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, u := range f.updates[f.firstOpen:] {
		if !u.confirmed {
			n++
		}
	}
	info := map[string]any{"url": f.hookURL, "has_custom_certificate": false, "pending_update_count": n}
	if f.hookURL != "" {
		info["max_connections"] = 40
		info["ip_address"] = "127.0.0.1"
		if f.allowed != nil {
			info["allowed_updates"] = f.allowed
		}
	}
	if f.hookErrDate != 0 {
		info["last_error_date"] = f.hookErrDate
		info["last_error_message"] = f.hookErrMsg
	}
	return info
}

// deliveryError is last_error_message for a delivery that got status
// (0: no answer), in Telegram's words.
func deliveryError(status int) string {
	if status == 0 {
		return "Connection refused"
	}
	return fmt.Sprintf("Wrong response from the webhook: %d %s", status, http.StatusText(status))
}

// deliverWebhooks posts updates, oldest first, to the webhook while one
// is set, each until it is answered 2xx.
func (f *TelegramFake) deliverWebhooks(ctx context.Context) {
	defer f.delivery.Done()
	client := &http.Client{Timeout: 10 * time.Second}
	for {
		f.mu.Lock()
		hook, secret := f.hookURL, f.hookSecret
		var next *tgUpdate
		if hook != "" {
			for _, u := range f.updates[f.firstOpen:] {
				if u.confirmed {
					continue
				}
				if !f.allowedKind(u.kind) {
					u.confirmed = true
					continue
				}
				next = u
				break
			}
			f.advance()
		}
		changed := f.changed
		f.mu.Unlock()
		if next == nil {
			select {
			case <-changed:
				continue
			case <-ctx.Done():
				return
			}
		}
		header := http.Header{"Content-Type": {"application/json"}}
		if secret != "" {
			header.Set("X-Telegram-Bot-Api-Secret-Token", secret)
		}
		status, _ := platformfake.Post(ctx, client, hook, next.body, header, true)
		if ctx.Err() != nil {
			return
		}
		f.mu.Lock()
		next.statuses = append(next.statuses, status)
		next.delivered = true
		ok := status >= 200 && status < 300
		if ok {
			next.confirmed = true
			f.advance()
		} else {
			f.hookErrDate, f.hookErrMsg = time.Now().Unix(), deliveryError(status)
		}
		f.mu.Unlock()
		if !ok {
			t := time.NewTimer(f.opts.RedeliverDelay)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return
			}
		}
	}
}
