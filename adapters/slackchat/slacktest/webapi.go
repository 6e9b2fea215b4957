package slacktest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"mime"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gatehouse/gatehouse/adapters/adaptertest"
)

// ---- Web API ----

func (f *SlackFake) serveAPI(w http.ResponseWriter, r *http.Request) {
	method := strings.TrimPrefix(r.URL.Path, "/api/")
	params, token, err := slackParams(r)
	f.mu.Lock()
	defer f.mu.Unlock()
	if err != nil {
		f.apiErrorLocked(w, method, "invalid_form_data", err.Error())
		return
	}
	if method == "apps.connections.open" {
		f.connectionsOpenLocked(w, token)
		return
	}
	switch {
	case token == "":
		f.apiErrorLocked(w, method, "not_authed", "no token")
		return
	case token == f.AppToken:
		f.apiErrorLocked(w, method, "not_allowed_token_type", "app-level token")
		return
	case token != f.BotToken:
		f.apiErrorLocked(w, method, "invalid_auth", "wrong token")
		return
	}
	switch method {
	case "auth.test":
		slackWriteJSON(w, http.StatusOK, map[string]any{
			"ok": true, "url": "https://fake-team.slack.com/", "team": "Fake Team", "user": "gatehouse",
			"team_id": f.TeamID, "user_id": f.BotUserID, "bot_id": f.BotID, "is_enterprise_install": false,
		})
	case "chat.postMessage":
		f.postMessageLocked(w, params)
	case "chat.update":
		f.updateLocked(w, params)
	case "chat.postEphemeral":
		f.postEphemeralLocked(w, params)
	case "views.open":
		f.viewsOpenLocked(w, params)
	default:
		f.apiErrorLocked(w, method, "unknown_method", "")
	}
}

func (f *SlackFake) connectionsOpenLocked(w http.ResponseWriter, token string) {
	switch {
	case token == "":
		f.apiErrorLocked(w, "apps.connections.open", "not_authed", "no token")
		return
	case token == f.BotToken:
		f.apiErrorLocked(w, "apps.connections.open", "not_allowed_token_type", "bot token")
		return
	case token != f.AppToken:
		f.apiErrorLocked(w, "apps.connections.open", "invalid_auth", "wrong app token")
		return
	}
	f.seq++
	ticket := fmt.Sprintf("fake-ticket-%d", f.seq)
	f.tickets[ticket] = true
	u := "ws" + strings.TrimPrefix(f.URL, "http") + "/link?ticket=" + ticket + "&app_id=" + f.AppID
	slackWriteJSON(w, http.StatusOK, map[string]any{"ok": true, "url": u})
}

var slackTSRe = regexp.MustCompile(`^\d+\.\d+$`)

func (f *SlackFake) postMessageLocked(w http.ResponseWriter, p map[string]string) {
	const method = "chat.postMessage"
	c := f.chatsByID[p["channel"]]
	if c == nil {
		f.apiErrorLocked(w, method, "channel_not_found", p["channel"])
		return
	}
	if f.opts.perChannel > 0 {
		now := time.Now()
		if last, ok := f.lastPost[c.id]; ok && now.Sub(last) < f.opts.perChannel {
			secs := int(math.Ceil((f.opts.perChannel - now.Sub(last)).Seconds()))
			w.Header().Set("Retry-After", strconv.Itoa(max(secs, 1)))
			f.throttled = append(f.throttled, c.handle)
			slackWriteJSON(w, http.StatusTooManyRequests, map[string]any{"ok": false, "error": "ratelimited"})
			return
		}
		f.lastPost[c.id] = now
	}
	text, blocks, ok := f.contentLocked(w, method, p)
	if !ok {
		return
	}
	thread := p["thread_ts"]
	if thread != "" {
		if !slackTSRe.MatchString(thread) {
			f.apiErrorLocked(w, method, "invalid_thread_ts", thread)
			return
		}
		switch parent := c.byTS[thread]; {
		case parent == nil:
			// Slack posts a reply to a message it cannot find into the
			// channel itself.
			thread = ""
		case parent.threadTS != "":
			thread = parent.threadTS
		}
	}
	m := &slackMsg{ts: f.tsLocked(), threadTS: thread, text: text, user: f.BotUserID, botID: f.BotID, ours: true, blocks: blocks}
	m.show(blocks)
	c.msgs = append(c.msgs, m)
	c.byTS[m.ts] = m
	message := map[string]any{"type": "message", "ts": m.ts, "text": m.text, "user": m.user, "bot_id": m.botID, "app_id": f.AppID}
	if thread != "" {
		message["thread_ts"] = thread
	}
	slackWriteJSON(w, http.StatusOK, map[string]any{"ok": true, "channel": c.id, "ts": m.ts, "message": message})
	if f.opts.echoBot {
		ev := map[string]any{"type": "message", "user": f.BotUserID, "bot_id": f.BotID, "app_id": f.AppID, "text": text, "ts": m.ts}
		if thread != "" {
			ev["thread_ts"] = thread
		}
		d := f.eventLocked(c, ev)
		if !f.closed {
			// deliver takes the lock: after this request is answered.
			f.wg.Add(1)
			go func() {
				defer f.wg.Done()
				f.deliver(d, "")
			}()
		}
	}
}

func (f *SlackFake) updateLocked(w http.ResponseWriter, p map[string]string) {
	const method = "chat.update"
	c := f.chatsByID[p["channel"]]
	if c == nil {
		f.apiErrorLocked(w, method, "channel_not_found", p["channel"])
		return
	}
	m := c.byTS[p["ts"]]
	if m == nil {
		f.apiErrorLocked(w, method, "message_not_found", p["ts"])
		return
	}
	if !m.ours {
		f.apiErrorLocked(w, method, "cant_update_message", p["ts"])
		return
	}
	text, blocks, ok := f.contentLocked(w, method, p)
	if !ok {
		return
	}
	m.text = text
	// Slack keeps a message's blocks when chat.update leaves them out.
	if _, sent := p["blocks"]; sent {
		m.blocks = blocks
		m.show(blocks)
	}
	m.edited = true
	for _, wt := range f.waiters {
		if wt.channel == c.id && wt.ts == m.ts {
			select {
			case wt.ch <- text:
			default:
			}
		}
	}
	slackWriteJSON(w, http.StatusOK, map[string]any{"ok": true, "channel": c.id, "ts": m.ts, "text": text})
}

func (f *SlackFake) postEphemeralLocked(w http.ResponseWriter, p map[string]string) {
	const method = "chat.postEphemeral"
	c := f.chatsByID[p["channel"]]
	if c == nil {
		f.apiErrorLocked(w, method, "channel_not_found", p["channel"])
		return
	}
	uid := p["user"]
	if _, ok := f.handles[uid]; !ok {
		f.apiErrorLocked(w, method, "user_not_in_channel", uid)
		return
	}
	text, _, ok := f.contentLocked(w, method, p)
	if !ok {
		return
	}
	if thread := p["thread_ts"]; thread != "" && !slackTSRe.MatchString(thread) {
		f.apiErrorLocked(w, method, "invalid_thread_ts", thread)
		return
	}
	f.ephemerals = append(f.ephemerals, slackEphemeral{channel: c.id, user: uid, threadTS: p["thread_ts"], text: text})
	for _, wt := range f.waiters {
		if wt.channel == c.id && wt.user == uid {
			select {
			case wt.ch <- text:
			default:
			}
		}
	}
	slackWriteJSON(w, http.StatusOK, map[string]any{"ok": true, "message_ts": f.tsLocked()})
}

// contentLocked checks a message's text and blocks as Slack does: one of
// them is required, text is at most 40,000 characters, blocks must be
// valid Block Kit.
func (f *SlackFake) contentLocked(w http.ResponseWriter, method string, p map[string]string) (string, []slackBlock, bool) {
	text := p["text"]
	blocks, problem := slackParseBlocks(p["blocks"])
	if problem != "" {
		f.apiErrorLocked(w, method, "invalid_blocks", problem)
		return "", nil, false
	}
	if strings.TrimSpace(text) == "" && len(blocks) == 0 {
		f.apiErrorLocked(w, method, "no_text", "")
		return "", nil, false
	}
	if utf8.RuneCountInString(text) > 40000 {
		f.apiErrorLocked(w, method, "msg_too_long", strconv.Itoa(utf8.RuneCountInString(text))+" characters")
		return "", nil, false
	}
	return text, blocks, true
}

func (f *SlackFake) apiErrorLocked(w http.ResponseWriter, method, code, detail string) {
	f.refusalLocked("%s: %s (%s)", method, code, detail)
	body := map[string]any{"ok": false, "error": code}
	if detail != "" {
		body["response_metadata"] = map[string]any{"messages": []string{"[ERROR] " + detail}}
	}
	// Slack answers refusals with HTTP 200 and "ok": false.
	slackWriteJSON(w, http.StatusOK, body)
}

func slackWriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// slackParams reads a Web API call's arguments the ways Slack takes them:
// a form (token as a field) or JSON (token only in Authorization).
func slackParams(r *http.Request) (map[string]string, string, error) {
	p := map[string]string{}
	for k, v := range r.URL.Query() {
		p[k] = v[0]
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 4<<20))
	if err != nil {
		return nil, "", err
	}
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	token := ""
	switch {
	case ct == "application/x-www-form-urlencoded":
		form, err := url.ParseQuery(string(body))
		if err != nil {
			return nil, "", err
		}
		for k, v := range form {
			p[k] = v[0]
		}
		token = p["token"]
	case ct == "application/json":
		if len(bytes.TrimSpace(body)) > 0 && string(bytes.TrimSpace(body)) != "null" {
			var m map[string]any
			if err := json.Unmarshal(body, &m); err != nil {
				return nil, "", fmt.Errorf("invalid JSON body: %w", err)
			}
			for k, v := range m {
				if s, ok := v.(string); ok {
					p[k] = s
				} else {
					b, _ := json.Marshal(v)
					p[k] = string(b)
				}
			}
		}
	case len(body) > 0:
		return nil, "", fmt.Errorf("unsupported content type %q", ct)
	default:
		token = p["token"]
	}
	delete(p, "token")
	if auth, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		token = auth
	}
	return p, token, nil
}

// slackParseBlocks checks Block Kit the way Slack refuses it with
// invalid_blocks, and returns the blocks ("" problem) or what is wrong.
func slackParseBlocks(raw string) ([]slackBlock, string) {
	if raw == "" {
		return nil, ""
	}
	var list []json.RawMessage
	if err := json.Unmarshal([]byte(raw), &list); err != nil {
		return nil, "blocks must be a JSON array"
	}
	if len(list) > 50 {
		return nil, fmt.Sprintf("%d blocks, at most 50", len(list))
	}
	var out []slackBlock
	ids := map[string]bool{}
	for i, rb := range list {
		var b struct {
			Type     string            `json:"type"`
			BlockID  string            `json:"block_id"`
			Text     json.RawMessage   `json:"text"`
			Fields   []json.RawMessage `json:"fields"`
			Elements []json.RawMessage `json:"elements"`
		}
		if err := json.Unmarshal(rb, &b); err != nil {
			return nil, fmt.Sprintf("block %d: %v", i, err)
		}
		if b.BlockID != "" {
			if len(b.BlockID) > 255 || ids[b.BlockID] {
				return nil, fmt.Sprintf("block %d: block_id %q too long or not unique", i, b.BlockID)
			}
			ids[b.BlockID] = true
		}
		blk := slackBlock{Type: b.Type, BlockID: b.BlockID, raw: rb}
		switch b.Type {
		case "section":
			if b.Text == nil && len(b.Fields) == 0 {
				return nil, fmt.Sprintf("block %d: section without text or fields", i)
			}
			if b.Text != nil {
				t, problem := slackCheckText(b.Text, 3000, "mrkdwn", "plain_text")
				if problem != "" {
					return nil, fmt.Sprintf("block %d: section text: %s", i, problem)
				}
				blk.Text = t
			}
			if len(b.Fields) > 10 {
				return nil, fmt.Sprintf("block %d: more than 10 fields", i)
			}
			for j, fr := range b.Fields {
				if _, problem := slackCheckText(fr, 2000, "mrkdwn", "plain_text"); problem != "" {
					return nil, fmt.Sprintf("block %d: field %d: %s", i, j, problem)
				}
			}
		case "actions":
			if len(b.Elements) == 0 || len(b.Elements) > 25 {
				return nil, fmt.Sprintf("block %d: actions need 1 to 25 elements, not %d", i, len(b.Elements))
			}
			actionIDs := map[string]bool{}
			for j, er := range b.Elements {
				var e slackButton
				if err := json.Unmarshal(er, &e); err != nil {
					return nil, fmt.Sprintf("block %d: element %d: %v", i, j, err)
				}
				if e.ActionID != "" {
					if len(e.ActionID) > 255 || actionIDs[e.ActionID] {
						return nil, fmt.Sprintf("block %d: element %d: action_id %q too long or not unique in its block", i, j, e.ActionID)
					}
					actionIDs[e.ActionID] = true
				}
				if e.Type == "button" {
					var be struct {
						Text json.RawMessage `json:"text"`
					}
					_ = json.Unmarshal(er, &be)
					if be.Text == nil {
						return nil, fmt.Sprintf("block %d: button %d without text", i, j)
					}
					if _, problem := slackCheckText(be.Text, 75, "plain_text"); problem != "" {
						return nil, fmt.Sprintf("block %d: button %d text: %s", i, j, problem)
					}
					if utf8.RuneCountInString(e.Value) > 2000 {
						return nil, fmt.Sprintf("block %d: button %d value over 2000 characters", i, j)
					}
					if e.Style != "" && e.Style != "primary" && e.Style != "danger" {
						return nil, fmt.Sprintf("block %d: button %d style %q", i, j, e.Style)
					}
				}
				blk.Buttons = append(blk.Buttons, e)
			}
		case "header":
			if _, problem := slackCheckText(b.Text, 150, "plain_text"); problem != "" {
				return nil, fmt.Sprintf("block %d: header text: %s", i, problem)
			}
		case "context":
			if len(b.Elements) == 0 || len(b.Elements) > 10 {
				return nil, fmt.Sprintf("block %d: context needs 1 to 10 elements", i)
			}
		case "divider", "image", "rich_text", "markdown", "file", "video", "input":
		default:
			return nil, fmt.Sprintf("block %d: unknown block type %q", i, b.Type)
		}
		out = append(out, blk)
	}
	return out, ""
}

// slackCheckText checks a text composition object.
func slackCheckText(raw json.RawMessage, maxLen int, types ...string) (*slackText, string) {
	if raw == nil {
		return nil, "missing"
	}
	var t slackText
	if err := json.Unmarshal(raw, &t); err != nil {
		return nil, err.Error()
	}
	typeOK := false
	for _, ty := range types {
		typeOK = typeOK || t.Type == ty
	}
	n := utf8.RuneCountInString(t.Text)
	switch {
	case !typeOK:
		return nil, fmt.Sprintf("type %q, want one of %v", t.Type, types)
	case t.Type == "mrkdwn" && t.Emoji != nil:
		return nil, "emoji is not allowed on mrkdwn"
	case n == 0:
		return nil, "empty text"
	case n > maxLen:
		return nil, fmt.Sprintf("%d characters, at most %d", n, maxLen)
	}
	return &t, ""
}

func rawBlocks(blocks []slackBlock) []json.RawMessage {
	out := []json.RawMessage{}
	for _, b := range blocks {
		out = append(out, b.raw)
	}
	return out
}

var _ adaptertest.Fake = (*SlackFake)(nil)
