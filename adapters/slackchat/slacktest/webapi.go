package slacktest

import (
	"encoding/json"
	"fmt"
	"math"
	"mime"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/gatehouse/gatehouse/adapters/adaptertest"
	"github.com/gatehouse/gatehouse/adapters/internal/platformfake"
	"github.com/gatehouse/gatehouse/adapters/slackchat/slacktest/blockkit"
)

// ---- Web API ----

func (f *SlackFake) serveAPI(w http.ResponseWriter, r *http.Request) {
	method := strings.TrimPrefix(r.URL.Path, "/api/")
	params, token, err := slackParams(r)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[method] = append(f.calls[method], time.Now())
	if f.failLocked(w, method) {
		return
	}
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
			f.refusals.Throttle(c.handle)
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
func (f *SlackFake) contentLocked(w http.ResponseWriter, method string, p map[string]string) (string, []blockkit.Block, bool) {
	text := p["text"]
	blocks, problem := blockkit.ParseBlocks(p["blocks"])
	if problem != "" {
		f.apiErrorLocked(w, method, "invalid_blocks", problem)
		return "", nil, false
	}
	if code, detail := blockkit.CheckMessage(text, blocks); code != "" {
		f.apiErrorLocked(w, method, code, detail)
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
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	p, err := platformfake.ReadParams(r, platformfake.ParamOptions{MaxBody: 4 << 20})
	if err != nil {
		return nil, "", err
	}
	token := ""
	if ct != "application/json" {
		token = p["token"]
	}
	delete(p, "token")
	if auth, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		token = auth
	}
	return p, token, nil
}

var _ adaptertest.Fake = (*SlackFake)(nil)
