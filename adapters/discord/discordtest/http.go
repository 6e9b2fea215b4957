package discordtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/gatehouse/gatehouse/adapters/discord/discordtest/cdn"
	"github.com/gatehouse/gatehouse/adapters/discord/discordtest/formbody"
	"github.com/gatehouse/gatehouse/adapters/discord/discordtest/ratelimit"
	"github.com/gatehouse/gatehouse/adapters/discord/discordtest/wire"
)

// ---- HTTP ----

func (f *DiscordFake) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/gw" || r.URL.Path == "/gw/" {
		f.serveGateway(w, r)
		return
	}
	if strings.HasPrefix(r.URL.Path, cdn.Prefix) {
		f.cdn.Serve(w, r, func(format string, args ...any) { f.mu.Lock(); f.refuse(format, args...); f.mu.Unlock() })
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/api/v9/")
	if !ok {
		f.mu.Lock()
		f.refuse("%s %s: not under /api/v9", r.Method, r.URL.Path)
		f.mu.Unlock()
		wire.JSON(w, http.StatusNotFound, map[string]any{"message": "404: Not Found", "code": 0})
		return
	}
	parts := strings.Split(strings.Trim(rest, "/"), "/")
	route := r.Method + " " + strings.Join(wire.RouteShape(parts), "/")
	f.mu.Lock()
	f.calls[route]++
	failing, revoked := f.failing, f.revoked
	f.mu.Unlock()
	if failing {
		badGateway(w)
		return
	}

	// Interaction callbacks are authorised by their token, not the bot's.
	if route == "POST interactions/:id/:token/callback" {
		if a := r.Header.Get("Authorization"); a != "" && a != "Bot "+f.token {
			f.unauthorized(w, r)
			return
		}
		f.callback(w, r, parts[1], parts[2])
		return
	}
	// Webhook calls of an interaction are authorised by its token too.
	if parts[0] == "webhooks" {
		f.serveWebhook(w, r, parts)
		return
	}
	if route == "GET gateway" {
		wire.JSON(w, http.StatusOK, map[string]any{"url": f.wsURL()})
		return
	}
	if r.Header.Get("Authorization") != "Bot "+f.token || revoked {
		f.unauthorized(w, r)
		return
	}
	switch route {
	case "GET gateway/bot":
		wire.JSON(w, http.StatusOK, map[string]any{
			"url": f.wsURL(), "shards": 1,
			"session_start_limit": map[string]any{"total": 1000, "remaining": 999, "reset_after": 14400000, "max_concurrency": 1},
		})
	case "GET users/@me":
		f.mu.Lock()
		u := f.userJSON(f.bot, true)
		f.mu.Unlock()
		wire.JSON(w, http.StatusOK, u)
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
		wire.JSON(w, http.StatusNotFound, map[string]any{"message": "404: Not Found", "code": 0})
	}
}

func (f *DiscordFake) wsURL() string {
	return "ws" + strings.TrimPrefix(f.srv.URL, "http") + "/gw"
}

func (f *DiscordFake) unauthorized(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.refuse("%s %s: wrong or missing Authorization (want \"Bot <token>\")", r.Method, r.URL.Path)
	f.mu.Unlock()
	wire.JSON(w, http.StatusUnauthorized, map[string]any{"message": "401: Unauthorized", "code": 0})
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
		wire.JSON(w, http.StatusBadRequest, map[string]any{"message": "The request body contains invalid JSON.", "code": 50109})
		return false
	}
	return true
}

// formRefused lists a body formbody refused, its reason after what
// ("modal: ", or "" for the request's own body), and answers Discord's
// 50035. f.mu held.
func (f *DiscordFake) formRefused(w http.ResponseWriter, r *http.Request, what string, e *formbody.Error) {
	f.refuse("%s %s: %s%s", r.Method, r.URL.Path, what, e.Reason())
	wire.FormError(w, e.Path, e.Code, e.Message)
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
	wire.JSON(w, http.StatusBadRequest, map[string]any{"message": "Cannot send an empty message", "code": 50006})
}

func (f *DiscordFake) unknownChannel(w http.ResponseWriter, r *http.Request) {
	f.refuse("%s %s: unknown channel", r.Method, r.URL.Path)
	wire.JSON(w, http.StatusNotFound, map[string]any{"message": "Unknown Channel", "code": 10003})
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
			wire.FormError(w, "message_reference", "MESSAGE_REFERENCE_UNKNOWN_MESSAGE", "Unknown message")
			return
		case exists:
			m.kind, m.refID = 19, ref.MessageID
		case ref.FailIfNotExists == nil || *ref.FailIfNotExists:
			f.refuse("%s %s: message_reference to unknown message %s", r.Method, r.URL.Path, ref.MessageID)
			wire.FormError(w, "message_reference", "MESSAGE_REFERENCE_UNKNOWN_MESSAGE", "Unknown message")
			return
		}
	}
	if req.AllowedMentions != nil {
		p := slices.Clone(req.AllowedMentions.Parse)
		m.allowed = &p
	}
	m.everyone = wire.Pings(content, m.allowed)
	ch.msgs = append(ch.msgs, m)
	f.emitMessage("MESSAGE_CREATE", m)
	wire.JSON(w, http.StatusOK, f.messageJSON(m))
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
		wire.JSON(w, http.StatusNotFound, map[string]any{"message": "Unknown Message", "code": 10008})
		return
	}
	if m.author != f.bot {
		f.refuse("%s %s: message is not the bot's", r.Method, r.URL.Path)
		wire.JSON(w, http.StatusForbidden, map[string]any{"message": "Cannot edit a message authored by another user", "code": 50005})
		return
	}
	if !f.rateLimit(w, "edit:"+channelID) {
		return
	}
	if !f.applyEdit(w, r, m, &req, rows) {
		return
	}
	wire.JSON(w, http.StatusOK, f.messageJSON(m))
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
		wire.JSON(w, http.StatusBadRequest, map[string]any{"message": "Cannot send an empty message", "code": 50006})
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

// rateLimit applies the limiter to bucket, writing the 429 and
// returning false when the request is over a limit. f.mu held.
func (f *DiscordFake) rateLimit(w http.ResponseWriter, bucket string) bool {
	retry, global, ok := f.limits.Allow(w.Header(), bucket, time.Now())
	if !ok {
		f.refusals.Throttle(bucket)
		wire.JSON(w, http.StatusTooManyRequests, ratelimit.Body(retry, global))
	}
	return ok
}

// callback answers POST /interactions/{id}/{token}/callback.
func (f *DiscordFake) callback(w http.ResponseWriter, r *http.Request, id, token string) {
	var req formbody.Callback
	if !f.readJSON(w, r, &req) {
		return
	}
	reqData, err := req.Message()
	if err != nil {
		f.mu.Lock()
		f.refuse("interaction callback %s: data: %v", id, err)
		f.mu.Unlock()
		wire.JSON(w, http.StatusBadRequest, map[string]any{"message": "The request body contains invalid JSON.", "code": 50109})
		return
	}
	unknown := func(why string) {
		f.refuse("interaction callback %s: %s", id, why)
		wire.JSON(w, http.StatusNotFound, map[string]any{"message": "Unknown interaction", "code": 10062})
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
		wire.JSON(w, http.StatusBadRequest, map[string]any{"message": "Interaction has already been acknowledged.", "code": 40060})
		return
	case time.Now().After(ix.deadline):
		unknown(fmt.Sprintf("answered %s after the press, over the %s deadline", time.Since(ix.created).Round(time.Millisecond), f.cfg.deadline))
		return
	}
	if req.Type == 9 { // MODAL
		if ix.modalSubmit {
			f.refuse("interaction callback %s: a modal cannot answer a modal submission", id)
			wire.FormError(w, "type", "INTERACTION_RESPONSE_TYPE_INVALID", "Interaction response type is invalid")
			return
		}
		modal, e := formbody.CheckModal(req.Data)
		if e != nil {
			f.formRefused(w, r, "modal: ", e)
			return
		}
		ix.Modal = modal
		ix.Type, ix.Answered, ix.After = req.Type, true, time.Since(ix.created)
		ix.finish()
		ix.settle()
		w.WriteHeader(http.StatusNoContent)
		return
	}
	var data formbody.Message
	if reqData != nil {
		data = *reqData
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
		if reqData == nil || (content == "" && len(rows) == 0 && len(data.Embeds) == 0) {
			f.refuse("interaction callback %s: type 4 with an empty message", id)
			wire.JSON(w, http.StatusBadRequest, map[string]any{"message": "Cannot send an empty message", "code": 50006})
			return
		}
		if data.Flags&^(64|4) != 0 {
			f.refuse("interaction callback %s: flags %d (only 64 ephemeral and 4 suppress embeds)", id, data.Flags)
			wire.FormError(w, "data.flags", "MESSAGE_FLAGS_INVALID", "Invalid flags")
			return
		}
		m := &discordMsg{id: f.snowflake(), channel: ix.channel, author: f.bot, content: content, rows: rows, created: time.Now()}
		m.show()
		if data.AllowedMentions != nil {
			p := slices.Clone(data.AllowedMentions.Parse)
			m.allowed = &p
		}
		if data.Flags&64 == 0 {
			m.everyone = wire.Pings(content, m.allowed)
			ix.channel.msgs = append(ix.channel.msgs, m)
			f.emitMessage("MESSAGE_CREATE", m)
		} else {
			// Only the user sees it; its buttons can be pressed (by them).
			m.viewer = ix.user
			f.ephemeral[m.id] = m
		}
		ix.reply = m
		ix.Content, ix.Flags = content, data.Flags
	case 5: // deferred: the user sees "thinking…" until the original is edited
		if data.Flags&^64 != 0 {
			f.refuse("interaction callback %s: flags %d (only 64 ephemeral)", id, data.Flags)
			wire.FormError(w, "data.flags", "MESSAGE_FLAGS_INVALID", "Invalid flags")
			return
		}
		m := &discordMsg{id: f.snowflake(), channel: ix.channel, author: f.bot, created: time.Now()}
		if data.Flags&64 != 0 {
			m.viewer = ix.user
			f.ephemeral[m.id] = m
		} else {
			ix.channel.msgs = append(ix.channel.msgs, m)
		}
		ix.reply, ix.Flags = m, data.Flags
	case 6, 7: // DEFERRED_UPDATE_MESSAGE, UPDATE_MESSAGE: a component's message
		if ix.msg == nil {
			f.refuse("interaction callback %s: response type %d is not valid for an application command (it has no message to update)", id, req.Type)
			wire.FormError(w, "type", "INTERACTION_RESPONSE_TYPE_INVALID", "Interaction response type is invalid")
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
		wire.FormError(w, "type", "INTERACTION_RESPONSE_TYPE_INVALID", "Interaction response type is invalid")
		return
	}
	ix.Type, ix.Answered, ix.After = req.Type, true, time.Since(ix.created)
	ix.finish()
	if req.Type != 5 && req.Type != 6 {
		ix.settle()
	}
	w.WriteHeader(http.StatusNoContent)
}
