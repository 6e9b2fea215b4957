package telegramtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"time"
	"unicode/utf8"
)

// ---- sending ----

func (f *TelegramFake) sendMessage(p tgParams) (any, *tgErr) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, e := f.chatParam(p)
	if e != nil {
		return nil, e
	}
	text, entities, e := parseText(p)
	if e != nil {
		return nil, e
	}
	m := &tgMessage{fromBot: true, date: time.Now().Unix(), entities: entities}
	m.Text, m.Source, m.ParseMode = text, p["text"], p["parse_mode"]
	thread, _, e := p.int("message_thread_id")
	if e != nil {
		return nil, e
	}
	if thread != 0 {
		if !c.forum || !c.topics[int(thread)] {
			return nil, badRequest("message thread not found")
		}
		m.ThreadID = int(thread)
	}
	if e := f.replyTo(c, p, m); e != nil {
		return nil, e
	}
	if raw, ok := p["reply_markup"]; ok {
		if fr, ok, e := parseForceReply(raw); ok || e != nil {
			if e != nil {
				return nil, e
			}
			m.ForceReply, m.Placeholder = true, fr.InputFieldPlaceholder
		} else {
			rows, e := parseKeyboard(raw)
			if e != nil {
				return nil, e
			}
			m.Buttons = rows
		}
	}
	m.remember()
	m.LinkPreviewDisabled = p.bool("disable_web_page_preview")
	if raw, ok := p["link_preview_options"]; ok {
		var lp struct {
			IsDisabled bool `json:"is_disabled"`
		}
		if err := json.Unmarshal([]byte(raw), &lp); err != nil {
			return nil, badRequest("can't parse link preview options JSON object")
		}
		m.LinkPreviewDisabled = lp.IsDisabled
	}
	if f.opts.RateLimit {
		if e := f.throttle(c, time.Now()); e != nil {
			return nil, e
		}
	}
	c.nextMsg++
	m.ID = c.nextMsg
	c.msgs = append(c.msgs, m)
	c.byID[m.ID] = m
	return f.messageJSON(c, m), nil
}

// replyTo reads reply_parameters (or the older reply_to_message_id);
// f.mu is held.
func (f *TelegramFake) replyTo(c *tgChat, p tgParams, m *tgMessage) *tgErr {
	target, _, e := p.int("reply_to_message_id")
	if e != nil {
		return e
	}
	allowMissing := p.bool("allow_sending_without_reply")
	if raw, ok := p["reply_parameters"]; ok {
		var rp struct {
			MessageID                int64 `json:"message_id"`
			AllowSendingWithoutReply bool  `json:"allow_sending_without_reply"`
		}
		if err := json.Unmarshal([]byte(raw), &rp); err != nil {
			return badRequest("can't parse reply parameters JSON object")
		}
		target, allowMissing = rp.MessageID, rp.AllowSendingWithoutReply
	}
	if target == 0 {
		return nil
	}
	if c.byID[int(target)] == nil {
		if allowMissing {
			return nil
		}
		return badRequest("message to be replied not found")
	}
	m.ReplyTo = int(target)
	return nil
}

// throttle applies the rate limits to a send to c; f.mu is held.
func (f *TelegramFake) throttle(c *tgChat, now time.Time) *tgErr {
	rates := f.opts.Rates
	var wait time.Duration
	if !c.lastSend.IsZero() {
		if since := now.Sub(c.lastSend); since < rates.PerChat*9/10 {
			wait = max(wait, rates.PerChat-since)
		}
	}
	if c.typ != "private" {
		c.sends = trimBefore(c.sends, now.Add(-time.Minute))
		if len(c.sends) >= rates.GroupPerMinute {
			wait = max(wait, c.sends[len(c.sends)-rates.GroupPerMinute].Add(time.Minute).Sub(now))
		}
	}
	f.sendLog = trimBefore(f.sendLog, now.Add(-time.Second))
	if len(f.sendLog) >= rates.PerSecond {
		wait = max(wait, f.sendLog[len(f.sendLog)-rates.PerSecond].Add(time.Second).Sub(now))
	}
	if wait > 0 {
		secs := int((wait + time.Second - 1) / time.Second)
		return &tgErr{code: http.StatusTooManyRequests, desc: fmt.Sprintf("Too Many Requests: retry after %d", secs), retryAfter: secs}
	}
	c.lastSend = now
	c.sends = append(c.sends, now)
	f.sendLog = append(f.sendLog, now)
	return nil
}

func trimBefore(ts []time.Time, cut time.Time) []time.Time {
	i := 0
	for i < len(ts) && !ts[i].After(cut) {
		i++
	}
	return ts[i:]
}

func (f *TelegramFake) editMessage(p tgParams, withText bool) (any, *tgErr) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if p["inline_message_id"] != "" {
		return nil, badRequest("MESSAGE_ID_INVALID")
	}
	c, e := f.chatParam(p)
	if e != nil {
		return nil, e
	}
	id, ok, e := p.int("message_id")
	if e != nil {
		return nil, e
	}
	if !ok {
		return nil, badRequest("message identifier is not specified")
	}
	m := c.byID[int(id)]
	if m == nil {
		return nil, badRequest("message to edit not found")
	}
	if !m.fromBot {
		return nil, badRequest("message can't be edited")
	}
	text, source, mode, entities := m.Text, m.Source, m.ParseMode, m.entities
	if withText {
		text, entities, e = parseText(p)
		if e != nil {
			return nil, e
		}
		source, mode = p["text"], p["parse_mode"]
	}
	// Without reply_markup, an edit leaves no inline keyboard: Telegram
	// drops the buttons of a message whose text is edited without them.
	var rows [][]TelegramButton
	if raw, ok := p["reply_markup"]; ok {
		rows, e = parseKeyboard(raw)
		if e != nil {
			return nil, e
		}
	}
	if len(rows) == 0 {
		rows = nil
	}
	if text == m.Text && sameEntities(entities, m.entities) && sameButtons(rows, m.Buttons) {
		return nil, badRequest("message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message")
	}
	m.Text, m.Source, m.ParseMode, m.entities, m.Buttons, m.Edited = text, source, mode, entities, rows, true
	m.remember()
	if withText {
		if raw, ok := p["link_preview_options"]; ok {
			var lp struct {
				IsDisabled bool `json:"is_disabled"`
			}
			if json.Unmarshal([]byte(raw), &lp) == nil {
				m.LinkPreviewDisabled = lp.IsDisabled
			}
		}
	}
	return f.messageJSON(c, m), nil
}

func sameEntities(a, b []tgEntity) bool { return slices.Equal(a, b) }

func sameButtons(a, b [][]TelegramButton) bool {
	return slices.EqualFunc(a, b, func(x, y []TelegramButton) bool { return slices.Equal(x, y) })
}

func (f *TelegramFake) answerCallbackQuery(p tgParams) (any, *tgErr) {
	text := p["text"]
	if utf8.RuneCountInString(text) > 200 {
		return nil, badRequest("MESSAGE_TOO_LONG")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	q := f.queries[p["callback_query_id"]]
	if q == nil || q.answered || time.Since(q.created) > f.opts.QueryTTL {
		return nil, badRequest("query is too old and response timeout expired or query ID is invalid")
	}
	q.answered, q.answer = true, text
	close(q.done)
	return true, nil
}
