package discordtest

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gatehouse/gatehouse/adapters/discord/discordtest/formbody"
)

// ---- HTTP ----

func (f *DiscordFake) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/gw" || r.URL.Path == "/gw/" {
		f.serveGateway(w, r)
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/api/v9/")
	if !ok {
		f.mu.Lock()
		f.refuse("%s %s: not under /api/v9", r.Method, r.URL.Path)
		f.mu.Unlock()
		discordJSON(w, http.StatusNotFound, map[string]any{"message": "404: Not Found", "code": 0})
		return
	}
	parts := strings.Split(strings.Trim(rest, "/"), "/")
	route := r.Method + " " + strings.Join(discordRouteShape(parts), "/")

	// Interaction callbacks are authorised by their token, not the bot's.
	if route == "POST interactions/:id/:token/callback" {
		if a := r.Header.Get("Authorization"); a != "" && a != "Bot "+f.token {
			f.unauthorized(w, r)
			return
		}
		f.callback(w, r, parts[1], parts[2])
		return
	}
	if route == "GET gateway" {
		discordJSON(w, http.StatusOK, map[string]any{"url": f.wsURL()})
		return
	}
	if r.Header.Get("Authorization") != "Bot "+f.token {
		f.unauthorized(w, r)
		return
	}
	switch route {
	case "GET gateway/bot":
		discordJSON(w, http.StatusOK, map[string]any{
			"url": f.wsURL(), "shards": 1,
			"session_start_limit": map[string]any{"total": 1000, "remaining": 999, "reset_after": 14400000, "max_concurrency": 1},
		})
	case "GET users/@me":
		f.mu.Lock()
		u := f.userJSON(f.bot, true)
		f.mu.Unlock()
		discordJSON(w, http.StatusOK, u)
	case "POST channels/:id/messages":
		f.createMessage(w, r, parts[1])
	case "PATCH channels/:id/messages/:id":
		f.editMessage(w, r, parts[1], parts[3])
	case "PUT applications/:id/commands":
		f.putCommands(w, r, parts[1])
	case "GET applications/:id/commands":
		f.getCommands(w, r, parts[1])
	default:
		f.mu.Lock()
		f.refuse("%s %s: no such route", r.Method, r.URL.Path)
		f.mu.Unlock()
		discordJSON(w, http.StatusNotFound, map[string]any{"message": "404: Not Found", "code": 0})
	}
}

// discordRouteShape replaces ids in a path with ":id" (and the token
// of an interaction callback with ":token") to match routes.
func discordRouteShape(parts []string) []string {
	out := slices.Clone(parts)
	for i, p := range out {
		switch {
		case len(parts) == 4 && parts[0] == "interactions" && i == 2:
			out[i] = ":token"
		case p != "" && strings.Trim(p, "0123456789") == "":
			out[i] = ":id"
		case len(parts) == 4 && parts[0] == "interactions" && i == 1:
			out[i] = ":id"
		}
	}
	return out
}

func (f *DiscordFake) wsURL() string {
	return "ws" + strings.TrimPrefix(f.srv.URL, "http") + "/gw"
}

func (f *DiscordFake) unauthorized(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.refuse("%s %s: wrong or missing Authorization (want \"Bot <token>\")", r.Method, r.URL.Path)
	f.mu.Unlock()
	discordJSON(w, http.StatusUnauthorized, map[string]any{"message": "401: Unauthorized", "code": 0})
}

func discordJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// discordFormError is Discord's 50035 "Invalid Form Body" with the
// offending field's path ("components.0.components.1.custom_id").
func discordFormError(w http.ResponseWriter, path, code, message string) {
	var leaf any = map[string]any{"_errors": []any{map[string]any{"code": code, "message": message}}}
	keys := strings.Split(path, ".")
	for i := len(keys) - 1; i >= 0; i-- {
		leaf = map[string]any{keys[i]: leaf}
	}
	discordJSON(w, http.StatusBadRequest, map[string]any{"message": "Invalid Form Body", "code": 50035, "errors": leaf})
}

func (f *DiscordFake) readJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err == nil && !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		err = fmt.Errorf("content type %q", r.Header.Get("Content-Type"))
	}
	if err == nil {
		err = json.Unmarshal(body, v)
	}
	if err != nil {
		f.mu.Lock()
		f.refuse("%s %s: body is not JSON: %v", r.Method, r.URL.Path, err)
		f.mu.Unlock()
		discordJSON(w, http.StatusBadRequest, map[string]any{"message": "The request body contains invalid JSON.", "code": 50109})
		return false
	}
	return true
}

// formRefused lists a body formbody refused, its reason after what
// ("modal: ", or "" for the request's own body), and answers Discord's
// 50035. f.mu held.
func (f *DiscordFake) formRefused(w http.ResponseWriter, r *http.Request, what string, e *formbody.Error) {
	f.refuse("%s %s: %s%s", r.Method, r.URL.Path, what, e.Reason())
	discordFormError(w, e.Path, e.Code, e.Message)
}

// checkBody validates content, mentions and components common to
// creates, edits and interaction responses, writing the 400 when they are
// refused. f.mu held.
func (f *DiscordFake) checkBody(w http.ResponseWriter, r *http.Request, req *formbody.Message) ([][]discordButton, bool) {
	rows, e := formbody.Body(req)
	if e != nil {
		f.formRefused(w, r, "", e)
		return nil, false
	}
	return rows, true
}

func (f *DiscordFake) emptyMessage(w http.ResponseWriter, r *http.Request) {
	f.refuse("%s %s: empty message (no content, components or embeds)", r.Method, r.URL.Path)
	discordJSON(w, http.StatusBadRequest, map[string]any{"message": "Cannot send an empty message", "code": 50006})
}

func (f *DiscordFake) unknownChannel(w http.ResponseWriter, r *http.Request) {
	f.refuse("%s %s: unknown channel", r.Method, r.URL.Path)
	discordJSON(w, http.StatusNotFound, map[string]any{"message": "Unknown Channel", "code": 10003})
}

// pings reports whether content notifies everyone, given allowed_mentions.
func discordPings(content string, allowed *[]string) bool {
	if !strings.Contains(content, "@everyone") && !strings.Contains(content, "@here") {
		return false
	}
	return allowed == nil || slices.Contains(*allowed, "everyone")
}

func (f *DiscordFake) createMessage(w http.ResponseWriter, r *http.Request, channelID string) {
	var req formbody.Message
	if !f.readJSON(w, r, &req) {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	rows, ok := f.checkBody(w, r, &req)
	if !ok {
		return
	}
	content := ""
	if req.Content != nil {
		content = *req.Content
	}
	if content == "" && len(rows) == 0 && len(req.Embeds) == 0 && len(req.StickerIDs) == 0 {
		f.emptyMessage(w, r)
		return
	}
	ch, ok := f.channelsByID[channelID]
	if !ok {
		f.unknownChannel(w, r)
		return
	}
	if !f.rateLimit(w, "create:"+channelID) {
		return
	}
	m := &discordMsg{id: f.snowflake(), channel: ch, author: f.bot, content: content, rows: rows, created: time.Now()}
	m.show()
	if ref := req.MessageReference; ref != nil {
		exists := false
		for _, old := range ch.msgs {
			exists = exists || old.id == ref.MessageID
		}
		switch {
		case ref.ChannelID != "" && ref.ChannelID != channelID:
			f.refuse("%s %s: message_reference.channel_id %s is not this channel", r.Method, r.URL.Path, ref.ChannelID)
			discordFormError(w, "message_reference", "MESSAGE_REFERENCE_UNKNOWN_MESSAGE", "Unknown message")
			return
		case exists:
			m.kind, m.refID = 19, ref.MessageID
		case ref.FailIfNotExists == nil || *ref.FailIfNotExists:
			f.refuse("%s %s: message_reference to unknown message %s", r.Method, r.URL.Path, ref.MessageID)
			discordFormError(w, "message_reference", "MESSAGE_REFERENCE_UNKNOWN_MESSAGE", "Unknown message")
			return
		}
	}
	if req.AllowedMentions != nil {
		p := slices.Clone(req.AllowedMentions.Parse)
		m.allowed = &p
	}
	m.everyone = discordPings(content, m.allowed)
	ch.msgs = append(ch.msgs, m)
	f.emitMessage("MESSAGE_CREATE", m)
	discordJSON(w, http.StatusOK, f.messageJSON(m))
}

func (f *DiscordFake) editMessage(w http.ResponseWriter, r *http.Request, channelID, msgID string) {
	var req formbody.Message
	if !f.readJSON(w, r, &req) {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	rows, ok := f.checkBody(w, r, &req)
	if !ok {
		return
	}
	ch, ok := f.channelsByID[channelID]
	if !ok {
		f.unknownChannel(w, r)
		return
	}
	var m *discordMsg
	for _, old := range ch.msgs {
		if old.id == msgID {
			m = old
		}
	}
	if m == nil {
		f.refuse("%s %s: unknown message", r.Method, r.URL.Path)
		discordJSON(w, http.StatusNotFound, map[string]any{"message": "Unknown Message", "code": 10008})
		return
	}
	if m.author != f.bot {
		f.refuse("%s %s: message is not the bot's", r.Method, r.URL.Path)
		discordJSON(w, http.StatusForbidden, map[string]any{"message": "Cannot edit a message authored by another user", "code": 50005})
		return
	}
	if !f.rateLimit(w, "edit:"+channelID) {
		return
	}
	if !f.applyEdit(w, r, m, &req, rows) {
		return
	}
	discordJSON(w, http.StatusOK, f.messageJSON(m))
}

// applyEdit changes the fields an edit carries (absent or null fields
// stay) and dispatches MESSAGE_UPDATE. f.mu held.
func (f *DiscordFake) applyEdit(w http.ResponseWriter, r *http.Request, m *discordMsg, req *formbody.Message, rows [][]discordButton) bool {
	content, newRows := m.content, m.rows
	if req.Content != nil {
		content = *req.Content
	}
	if req.Components != nil {
		newRows = rows
	}
	if content == "" && len(newRows) == 0 {
		f.refuse("%s %s: edit would leave an empty message", r.Method, r.URL.Path)
		discordJSON(w, http.StatusBadRequest, map[string]any{"message": "Cannot send an empty message", "code": 50006})
		return false
	}
	now := time.Now()
	m.content, m.rows, m.edited = content, newRows, &now
	m.show()
	if m.viewer == nil { // an ephemeral message's edit is the user's alone
		f.emitMessage("MESSAGE_UPDATE", m)
	}
	return true
}

// rateLimit applies the global and the bucket's limits (and a forced
// 429), setting X-RateLimit-* headers. It writes the 429 and returns
// false when the request is over a limit. f.mu held.
func (f *DiscordFake) rateLimit(w http.ResponseWriter, bucket string) bool {
	now := time.Now()
	h := w.Header()
	tooMany := func(retry time.Duration, global bool) bool {
		f.refusals.Throttle(bucket)
		secs := math.Ceil(retry.Seconds()*1000) / 1000
		h.Set("Retry-After", strconv.Itoa(int(math.Ceil(retry.Seconds()))))
		h.Set("X-RateLimit-Reset-After", strconv.FormatFloat(secs, 'f', 3, 64))
		h.Set("X-RateLimit-Reset", strconv.FormatFloat(float64(now.Add(retry).UnixMilli())/1000, 'f', 3, 64))
		if global {
			h.Set("X-RateLimit-Global", "true")
			h.Set("X-RateLimit-Scope", "global")
		} else {
			h.Set("X-RateLimit-Scope", "user")
			h.Set("X-RateLimit-Remaining", "0")
		}
		discordJSON(w, http.StatusTooManyRequests, map[string]any{"message": "You are being rate limited.", "retry_after": secs, "global": global})
		return false
	}
	if f.force429 > 0 {
		d := f.force429
		f.force429 = 0
		h.Set("X-RateLimit-Bucket", discordBucketHash(bucket))
		h.Set("X-RateLimit-Limit", "5")
		return tooMany(d, false)
	}
	if n := f.cfg.globalPerSecond; n > 0 {
		if now.Sub(f.global.start) >= time.Second {
			f.global = discordBucket{start: now}
		}
		if f.global.count >= n {
			return tooMany(f.global.start.Add(time.Second).Sub(now), true)
		}
		f.global.count++
	}
	n := f.cfg.perChannel
	if n <= 0 {
		return true
	}
	b, ok := f.buckets[bucket]
	if !ok || now.Sub(b.start) >= f.cfg.window {
		b = &discordBucket{start: now}
		f.buckets[bucket] = b
	}
	reset := b.start.Add(f.cfg.window)
	h.Set("X-RateLimit-Bucket", discordBucketHash(bucket))
	h.Set("X-RateLimit-Limit", strconv.Itoa(n))
	if b.count >= n {
		return tooMany(reset.Sub(now), false)
	}
	b.count++
	h.Set("X-RateLimit-Remaining", strconv.Itoa(n-b.count))
	h.Set("X-RateLimit-Reset", strconv.FormatFloat(float64(reset.UnixMilli())/1000, 'f', 3, 64))
	h.Set("X-RateLimit-Reset-After", strconv.FormatFloat(reset.Sub(now).Seconds(), 'f', 3, 64))
	return true
}

func discordBucketHash(bucket string) string {
	h := fnv.New64a()
	_, _ = h.Write([]byte(strings.SplitN(bucket, ":", 2)[0]))
	return strconv.FormatUint(h.Sum64(), 16)
}

// callback answers POST /interactions/{id}/{token}/callback.
func (f *DiscordFake) callback(w http.ResponseWriter, r *http.Request, id, token string) {
	var raw struct {
		Type int             `json:"type"`
		Data json.RawMessage `json:"data"`
	}
	if !f.readJSON(w, r, &raw) {
		return
	}
	var req struct {
		Type int
		Data *formbody.Message
	}
	req.Type = raw.Type
	if raw.Type != 9 && len(raw.Data) > 0 && string(raw.Data) != "null" {
		req.Data = &formbody.Message{}
		if err := json.Unmarshal(raw.Data, req.Data); err != nil {
			f.mu.Lock()
			f.refuse("interaction callback %s: data: %v", id, err)
			f.mu.Unlock()
			discordJSON(w, http.StatusBadRequest, map[string]any{"message": "The request body contains invalid JSON.", "code": 50109})
			return
		}
	}
	unknown := func(why string) {
		f.refuse("interaction callback %s: %s", id, why)
		discordJSON(w, http.StatusNotFound, map[string]any{"message": "Unknown interaction", "code": 10062})
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	ix, ok := f.interactions[id]
	switch {
	case !ok || ix.token != token:
		unknown("no such interaction or wrong token")
		return
	case ix.Answered:
		f.refuse("interaction callback %s: answered twice", id)
		discordJSON(w, http.StatusBadRequest, map[string]any{"message": "Interaction has already been acknowledged.", "code": 40060})
		return
	case time.Now().After(ix.deadline):
		unknown(fmt.Sprintf("answered %s after the press, over the %s deadline", time.Since(ix.created).Round(time.Millisecond), f.cfg.deadline))
		return
	}
	if req.Type == 9 { // MODAL
		if ix.modalSubmit {
			f.refuse("interaction callback %s: a modal cannot answer a modal submission", id)
			discordFormError(w, "type", "INTERACTION_RESPONSE_TYPE_INVALID", "Interaction response type is invalid")
			return
		}
		modal, e := formbody.CheckModal(raw.Data)
		if e != nil {
			f.formRefused(w, r, "modal: ", e)
			return
		}
		ix.Modal = modal
		ix.Type, ix.Answered, ix.After = req.Type, true, time.Since(ix.created)
		ix.finish()
		w.WriteHeader(http.StatusNoContent)
		return
	}
	var data formbody.Message
	if req.Data != nil {
		data = *req.Data
	}
	rows, ok := f.checkBody(w, r, &data)
	if !ok {
		return
	}
	content := ""
	if data.Content != nil {
		content = *data.Content
	}
	switch req.Type {
	case 4: // CHANNEL_MESSAGE_WITH_SOURCE
		if req.Data == nil || (content == "" && len(rows) == 0 && len(data.Embeds) == 0) {
			f.refuse("interaction callback %s: type 4 with an empty message", id)
			discordJSON(w, http.StatusBadRequest, map[string]any{"message": "Cannot send an empty message", "code": 50006})
			return
		}
		if data.Flags&^(64|4) != 0 {
			f.refuse("interaction callback %s: flags %d (only 64 ephemeral and 4 suppress embeds)", id, data.Flags)
			discordFormError(w, "data.flags", "MESSAGE_FLAGS_INVALID", "Invalid flags")
			return
		}
		m := &discordMsg{id: f.snowflake(), channel: ix.channel, author: f.bot, content: content, rows: rows, created: time.Now()}
		m.show()
		if data.AllowedMentions != nil {
			p := slices.Clone(data.AllowedMentions.Parse)
			m.allowed = &p
		}
		if data.Flags&64 == 0 {
			m.everyone = discordPings(content, m.allowed)
			ix.channel.msgs = append(ix.channel.msgs, m)
			f.emitMessage("MESSAGE_CREATE", m)
		} else {
			// Only the user sees it; its buttons can be pressed (by them).
			m.viewer = ix.user
			f.ephemeral[m.id] = m
		}
		ix.reply = m
		ix.Content, ix.Flags = content, data.Flags
	case 5: // deferred: the user sees "thinking…"
	case 6, 7: // DEFERRED_UPDATE_MESSAGE, UPDATE_MESSAGE: a component's message
		if ix.msg == nil {
			f.refuse("interaction callback %s: response type %d is not valid for an application command (it has no message to update)", id, req.Type)
			discordFormError(w, "type", "INTERACTION_RESPONSE_TYPE_INVALID", "Interaction response type is invalid")
			return
		}
		if req.Type == 6 {
			break
		}
		if !f.applyEdit(w, r, ix.msg, &data, rows) {
			return
		}
		ix.Content = ix.msg.content
	default:
		f.refuse("interaction callback %s: response type %d is not valid for a component interaction", id, req.Type)
		discordFormError(w, "type", "INTERACTION_RESPONSE_TYPE_INVALID", "Interaction response type is invalid")
		return
	}
	ix.Type, ix.Answered, ix.After = req.Type, true, time.Since(ix.created)
	ix.finish()
	w.WriteHeader(http.StatusNoContent)
}
