package telegramtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gatehouse/gatehouse/adapters/internal/platformfake"
)

// ---- state ----

func (f *TelegramFake) user(handle string) *tgUser {
	u := f.users[handle]
	if u == nil {
		f.nextUser++
		u = &tgUser{id: f.nextUser, handle: handle}
		f.users[handle] = u
	}
	return u
}

func (f *TelegramFake) chat(handle string) *tgChat {
	c := f.chats[handle]
	if c != nil {
		return c
	}
	c = &tgChat{handle: handle, typ: "private", topics: map[int]bool{}, byID: map[int]*tgMessage{}}
	switch {
	case strings.HasPrefix(handle, "group"):
		c.typ = "supergroup"
	case strings.HasPrefix(handle, "forum"):
		c.typ, c.forum = "supergroup", true
	case strings.HasPrefix(handle, "channel"):
		c.typ = "channel"
	}
	if c.typ == "private" {
		c.id = f.user(handle).id
	} else {
		f.nextGroup++
		c.id = -f.nextGroup
	}
	f.chats[handle] = c
	f.chatsByID[c.id] = c
	return c
}

func (f *TelegramFake) chatJSON(c *tgChat) map[string]any {
	j := map[string]any{"id": c.id, "type": c.typ}
	if c.typ == "private" {
		j["first_name"] = firstName(c.handle)
		j["username"] = c.handle
	} else {
		j["title"] = c.handle
	}
	if c.forum {
		j["is_forum"] = true
	}
	return j
}

func (f *TelegramFake) userJSON(u *tgUser, bot bool) map[string]any {
	return map[string]any{"id": u.id, "is_bot": bot, "first_name": firstName(u.handle), "username": u.handle}
}

func botUserJSON() map[string]any {
	return map[string]any{"id": telegramBotID, "is_bot": true, "first_name": "Gatehouse", "username": "gatehouse_bot"}
}

func firstName(handle string) string {
	r, n := utf8.DecodeRuneInString(handle)
	return strings.ToUpper(string(r)) + handle[n:]
}

// userMessage makes a message from user in c, stored in the chat (so the
// bot can reply to it), and returns its JSON for the caller to finish.
func (f *TelegramFake) userMessage(c *tgChat, user string, bot bool, topic int) map[string]any {
	c.nextMsg++
	m := &tgMessage{date: time.Now().Unix(), isBot: bot}
	m.ID = c.nextMsg
	m.ThreadID = topic
	j := map[string]any{"message_id": m.ID, "date": m.date, "chat": f.chatJSON(c)}
	if c.typ == "channel" {
		j["sender_chat"] = f.chatJSON(c)
	} else {
		m.from = f.user(user)
		j["from"] = f.userJSON(m.from, bot)
	}
	if topic != 0 {
		j["message_thread_id"] = topic
		j["is_topic_message"] = true
	}
	c.msgs = append(c.msgs, m)
	c.byID[m.ID] = m
	return j
}

func (f *TelegramFake) queueMessage(c *tgChat, m map[string]any) string {
	kind := "message"
	if c.typ == "channel" {
		kind = "channel_post"
	}
	return strconv.FormatInt(f.queue(kind, map[string]any{kind: m}), 10)
}

// queue adds an update; f.mu is held.
func (f *TelegramFake) queue(kind string, update map[string]any) int64 {
	f.nextUpdate++
	id := f.nextUpdate
	update["update_id"] = id
	body, err := json.Marshal(update)
	if err != nil {
		f.t.Fatalf("telegram fake: update: %v", err)
	}
	u := &tgUpdate{id: id, kind: kind, body: body}
	f.updates = append(f.updates, u)
	f.updateByID[id] = u
	f.notify()
	return id
}

// notify wakes whoever waits for updates; f.mu is held.
func (f *TelegramFake) notify() {
	close(f.changed)
	f.changed = make(chan struct{})
}

// messageJSON is m as the Bot API returns it, with the replied message
// nested one level deep, as Telegram does.
func (f *TelegramFake) messageJSON(c *tgChat, m *tgMessage) map[string]any {
	j := f.messageCore(c, m)
	if m.ThreadID != 0 {
		j["message_thread_id"] = m.ThreadID
		j["is_topic_message"] = true
	}
	if r := c.byID[m.ReplyTo]; m.ReplyTo != 0 && r != nil {
		// The replied message in full, but for its own reply.
		j["reply_to_message"] = f.messageCore(c, r)
	}
	if len(m.Buttons) > 0 {
		j["reply_markup"] = map[string]any{"inline_keyboard": m.Buttons}
	}
	if m.Edited {
		j["edit_date"] = time.Now().Unix()
	}
	return j
}

// messageCore is the fields of m a nested reply_to_message carries too.
func (f *TelegramFake) messageCore(c *tgChat, m *tgMessage) map[string]any {
	j := map[string]any{"message_id": m.ID, "date": m.date, "chat": f.chatJSON(c), "text": m.Text}
	if m.fromBot {
		j["from"] = botUserJSON()
	} else if m.from != nil {
		j["from"] = f.userJSON(m.from, m.isBot)
	}
	if len(m.entities) > 0 {
		j["entities"] = m.entities
	}
	return j
}

// remember adds the message's buttons to what can be pressed on it.
func (m *tgMessage) remember() {
	for _, row := range m.Buttons {
		for _, b := range row {
			if b.Data == "" {
				continue
			}
			if m.pressable == nil {
				m.pressable = map[string]bool{}
			}
			m.pressable[b.Data] = true
		}
	}
}

func cloneButtons(rows [][]TelegramButton) [][]TelegramButton {
	if rows == nil {
		return nil
	}
	out := make([][]TelegramButton, len(rows))
	for i, r := range rows {
		out[i] = slices.Clone(r)
	}
	return out
}

// ---- the Bot API ----

func (f *TelegramFake) serve(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/file/bot") {
		f.mu.Lock()
		failing := f.failing
		f.mu.Unlock()
		if failing != 0 {
			f.fail(w, "file", failing)
			return
		}
		f.files.ServeHTTP(w, r)
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/bot")
	slash := strings.LastIndexByte(rest, '/')
	if !ok || slash < 0 {
		f.reply(w, "?", nil, &tgErr{code: http.StatusNotFound, desc: "Not Found"})
		return
	}
	token, method := rest[:slash], rest[slash+1:]
	f.mu.Lock()
	f.calls[strings.ToLower(method)]++
	failing, revoked := f.failing, f.revoked
	f.mu.Unlock()
	if failing != 0 {
		f.fail(w, method, failing)
		return
	}
	if token != f.Token || revoked {
		f.reply(w, method, nil, &tgErr{code: http.StatusUnauthorized, desc: "Unauthorized"})
		return
	}
	if r.Method != http.MethodPost && r.Method != http.MethodGet {
		f.reply(w, method, nil, &tgErr{code: http.StatusMethodNotAllowed, desc: "Method Not Allowed"})
		return
	}
	if e := checkJSON(r); e != nil {
		f.reply(w, method, nil, e)
		return
	}
	p, err := readTelegramParams(r)
	if err != nil {
		f.reply(w, method, nil, badRequest("%v", err))
		return
	}
	for k, v := range p {
		if !utf8.ValidString(v) {
			f.reply(w, method, nil, badRequest("strings must be encoded in UTF-8 (%s)", k))
			return
		}
	}
	var res any
	var e *tgErr
	// Method names are case-insensitive on Telegram.
	switch strings.ToLower(method) {
	case "getfile":
		var refusal string
		if res, refusal = f.files.GetFile(p["file_id"]); refusal != "" {
			e = badRequest("%s", refusal)
		}
	case "getme":
		res = botUserJSON()
	case "getupdates":
		res, e = f.getUpdates(r, p)
	case "sendmessage":
		res, e = f.sendMessage(p)
	case "editmessagetext":
		res, e = f.editMessage(p, true)
	case "editmessagereplymarkup":
		res, e = f.editMessage(p, false)
	case "answercallbackquery":
		res, e = f.answerCallbackQuery(p)
	case "setwebhook":
		res, e = f.setWebhook(p)
	case "deletewebhook":
		res, e = f.deleteWebhook(p)
	case "getwebhookinfo":
		res = f.webhookInfo()
	case "setmycommands":
		res, e = f.setMyCommands(p)
	case "getmycommands":
		res, e = f.getMyCommands(p)
	case "deletemycommands":
		res, e = f.deleteMyCommands(p)
	default:
		e = &tgErr{code: http.StatusNotFound, desc: "Not Found"}
	}
	f.reply(w, method, res, e)
}

// tgAnswer is the Bot API's envelope, its fields in Telegram's order:
// a refused token is answered exactly
// {"ok":false,"error_code":401,"description":"Unauthorized"}.
type tgAnswer struct {
	OK          bool           `json:"ok"`
	Result      any            `json:"result,omitempty"`
	ErrorCode   int            `json:"error_code,omitempty"`
	Description string         `json:"description,omitempty"`
	Parameters  map[string]any `json:"parameters,omitempty"`
}

func (f *TelegramFake) reply(w http.ResponseWriter, method string, res any, e *tgErr) {
	w.Header().Set("Content-Type", "application/json")
	if e == nil {
		// A result may be false or 0; only an error leaves it out.
		body, err := json.Marshal(struct {
			OK     bool `json:"ok"`
			Result any  `json:"result"`
		}{true, res})
		if err != nil {
			f.t.Errorf("telegram fake: %s: result: %v", method, err)
		}
		_, _ = w.Write(body)
		return
	}
	if line := fmt.Sprintf("%s: %d %s", method, e.code, e.desc); e.code == http.StatusTooManyRequests {
		f.refusals.Throttle(line)
	} else {
		f.refusals.Refusef("%s", line)
	}
	a := tgAnswer{ErrorCode: e.code, Description: e.desc}
	if e.retryAfter > 0 {
		a.Parameters = map[string]any{"retry_after": e.retryAfter}
	}
	body, _ := json.Marshal(a)
	w.WriteHeader(e.code)
	_, _ = w.Write(body)
}

// fail answers a call while FailAll is on: no answer at all, or the
// HTML page a proxy in front of the Bot API serves. Neither is a
// refusal the bot could have avoided, so Errors does not list them.
func (f *TelegramFake) fail(w http.ResponseWriter, method string, status int) {
	if status == FailConnection {
		hj, ok := w.(http.Hijacker)
		if !ok {
			f.t.Errorf("telegram fake: %s: cannot close the connection", method)
			return
		}
		conn, _, err := hj.Hijack()
		if err == nil {
			_ = conn.Close()
		}
		return
	}
	text := fmt.Sprintf("%d %s", status, http.StatusText(status))
	w.Header().Set("Content-Type", "text/html")
	w.WriteHeader(status)
	_, _ = fmt.Fprintf(w, "<html>\r\n<head><title>%s</title></head>\r\n<body>\r\n<center><h1>%s</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n", text, text)
}

// checkJSON refuses a JSON body that is not a JSON object as Telegram
// does, and leaves the body to be read again.
func checkJSON(r *http.Request) *tgErr {
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if ct != "application/json" {
		return nil
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 10<<20))
	if err != nil {
		return badRequest("can't parse JSON object")
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(body, &obj) != nil {
		return badRequest("can't parse JSON object")
	}
	return nil
}

// tgParams are a call's parameters, each as text: a JSON body's strings
// unquoted and its other values as JSON text, as Telegram reads a form.
type tgParams map[string]string

// readTelegramParams reads parameters the ways the Bot API takes them: a
// query string, and a multipart, url-encoded or JSON body.
func readTelegramParams(r *http.Request) (tgParams, error) {
	p, err := platformfake.ReadParams(r, platformfake.ParamOptions{MaxBody: 10 << 20, Multipart: true})
	return tgParams(p), err
}

func (p tgParams) int(k string) (int64, bool, *tgErr) {
	v, ok := p[k]
	if !ok || v == "" {
		return 0, false, nil
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil {
		return 0, true, badRequest("field %q must be of type Integer", k)
	}
	return n, true, nil
}

func (p tgParams) bool(k string) bool {
	v := strings.ToLower(strings.TrimSpace(p[k]))
	return v == "true" || v == "1"
}

// chatParam resolves chat_id to a known chat; f.mu is held.
func (f *TelegramFake) chatParam(p tgParams) (*tgChat, *tgErr) {
	v := strings.TrimSpace(p["chat_id"])
	if v == "" {
		return nil, badRequest("chat_id is empty")
	}
	if name, ok := strings.CutPrefix(v, "@"); ok {
		if c := f.chats[name]; c != nil && c.typ != "private" {
			return c, nil
		}
		return nil, badRequest("chat not found")
	}
	id, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return nil, badRequest("chat not found")
	}
	c := f.chatsByID[id]
	if c == nil {
		return nil, badRequest("chat not found")
	}
	return c, nil
}
