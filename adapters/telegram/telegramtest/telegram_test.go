package telegramtest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/gatehouse/gatehouse/adapters/telegram/telegramtest"
)

// tgResp is the Bot API envelope.
type tgResp struct {
	OK          bool            `json:"ok"`
	Result      json.RawMessage `json:"result"`
	ErrorCode   int             `json:"error_code"`
	Description string          `json:"description"`
	Parameters  struct {
		RetryAfter int `json:"retry_after"`
	} `json:"parameters"`
}

// call makes a Bot API call with a JSON body, as any client may.
func call(t *testing.T, f *telegramtest.TelegramFake, token, method string, params map[string]any) (int, tgResp) {
	t.Helper()
	body, _ := json.Marshal(params)
	resp, err := http.Post(f.URL+"/bot"+token+"/"+method, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r tgResp
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatalf("%s: answer is not the Bot API's shape: %v", method, err)
	}
	if r.OK != (resp.StatusCode == 200) || (!r.OK && r.ErrorCode != resp.StatusCode) {
		t.Fatalf("%s: HTTP %d with %+v", method, resp.StatusCode, r)
	}
	return resp.StatusCode, r
}

func updateIDs(t *testing.T, r tgResp) []string {
	t.Helper()
	var ups []struct {
		ID int64 `json:"update_id"`
	}
	if err := json.Unmarshal(r.Result, &ups); err != nil {
		t.Fatalf("getUpdates result %s: %v", r.Result, err)
	}
	var ids []string
	for _, u := range ups {
		ids = append(ids, strconv.FormatInt(u.ID, 10))
	}
	return ids
}

func newBot(t *testing.T, f *telegramtest.TelegramFake, opts ...bot.Option) *bot.Bot {
	t.Helper()
	b, err := bot.New(f.Token, append([]bot.Option{bot.WithServerURL(f.URL), bot.WithErrorsHandler(func(error) {})}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestTelegramFakeRefusesWrongTokenAndUnknownMethod(t *testing.T) {
	f := telegramtest.NewTelegram(t, telegramtest.TelegramOptions{})
	if code, r := call(t, f, "1:wrong", "getMe", nil); code != 401 || r.Description != "Unauthorized" {
		t.Fatalf("wrong token: %d %+v", code, r)
	}
	if code, _ := call(t, f, f.Token, "sendSomething", nil); code != 404 {
		t.Fatalf("unknown method: %d", code)
	}
	if errs := f.Errors(); len(errs) != 2 {
		t.Fatalf("refusals recorded: %q", errs)
	}
	// The library's getMe: a multipart content type and an empty body.
	newBot(t, f)
}

func TestTelegramFakeLongPollAndOffsets(t *testing.T) {
	f := telegramtest.NewTelegram(t, telegramtest.TelegramOptions{})

	// Nothing to return: the request is held for the timeout, not
	// answered with [] at once (which would make a client spin).
	start := time.Now()
	_, r := call(t, f, f.Token, "getUpdates", map[string]any{"timeout": 1})
	if held := time.Since(start); held < 900*time.Millisecond || len(updateIDs(t, r)) != 0 {
		t.Fatalf("empty poll held %s, returned %s", held, r.Result)
	}

	// An update arriving during a held poll ends it.
	got := make(chan []string, 1)
	go func() {
		_, r := call(t, f, f.Token, "getUpdates", map[string]any{"timeout": 10})
		got <- updateIDs(t, r)
	}()
	time.Sleep(50 * time.Millisecond)
	a := f.Say("alice", "alice", "one", false)
	select {
	case ids := <-got:
		if len(ids) != 1 || ids[0] != a {
			t.Fatalf("poll returned %v, want [%s]", ids, a)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a held poll did not return the update that arrived")
	}
	b := f.Say("alice", "alice", "two", false)

	// Fetched is not acknowledged: the offset does that.
	_, r = call(t, f, f.Token, "getUpdates", map[string]any{})
	if ids := updateIDs(t, r); len(ids) != 2 || f.Acked(a) {
		t.Fatalf("without an offset: %v, acked %v", ids, f.Acked(a))
	}
	aID, _ := strconv.ParseInt(a, 10, 64)
	_, r = call(t, f, f.Token, "getUpdates", map[string]any{"offset": aID + 1})
	if ids := updateIDs(t, r); len(ids) != 1 || ids[0] != b || !f.Acked(a) || f.Acked(b) {
		t.Fatalf("offset past a: %v, acked a=%v b=%v", ids, f.Acked(a), f.Acked(b))
	}

	// Redeliver brings back an acknowledged update whatever the offset.
	f.Redeliver(a)
	if f.Acked(a) {
		t.Fatal("a redelivered update is pending again")
	}
	_, r = call(t, f, f.Token, "getUpdates", map[string]any{"offset": aID + 1})
	if ids := updateIDs(t, r); len(ids) != 2 || ids[0] != a {
		t.Fatalf("after Redeliver: %v", ids)
	}
	call(t, f, f.Token, "getUpdates", map[string]any{"offset": aID + 2})
	if !f.Acked(a) || !f.Acked(b) {
		t.Fatal("the next offset acknowledges the redelivery")
	}
	if errs := f.Errors(); len(errs) != 0 {
		t.Fatalf("refusals: %q", errs)
	}
}

func TestTelegramFakeOnePollerAtATime(t *testing.T) {
	f := telegramtest.NewTelegram(t, telegramtest.TelegramOptions{})
	first := make(chan int, 1)
	go func() {
		code, _ := call(t, f, f.Token, "getUpdates", map[string]any{"timeout": 5})
		first <- code
	}()
	time.Sleep(100 * time.Millisecond)
	call(t, f, f.Token, "getUpdates", map[string]any{"timeout": 0})
	if code := <-first; code != http.StatusConflict {
		t.Fatalf("the older of two pollers got %d, want 409", code)
	}
	call(t, f, f.Token, "setWebhook", map[string]any{"url": "https://example.com/hook"})
	if code, r := call(t, f, f.Token, "getUpdates", nil); code != http.StatusConflict || !strings.Contains(r.Description, "webhook is active") {
		t.Fatalf("getUpdates with a webhook set: %d %+v", code, r)
	}
	if code, _ := call(t, f, f.Token, "setWebhook", map[string]any{"url": "http://example.com/hook"}); code != 400 {
		t.Fatal("a plain http webhook off loopback is refused")
	}
}

func TestTelegramFakeSendIsStrict(t *testing.T) {
	f := telegramtest.NewTelegram(t, telegramtest.TelegramOptions{})
	b := newBot(t, f, bot.WithSkipGetMe())
	ctx := context.Background()
	chat, _ := strconv.ParseInt(f.ChatID("group-x"), 10, 64)
	send := func(p *bot.SendMessageParams) string {
		t.Helper()
		if p.ChatID == nil {
			p.ChatID = chat
		}
		_, err := b.SendMessage(ctx, p)
		if err == nil {
			return ""
		}
		return err.Error()
	}
	button := func(data string) models.ReplyMarkup {
		return map[string]any{"inline_keyboard": [][]map[string]any{{{"text": "Go", "callback_data": data}}}}
	}
	for name, tc := range map[string]struct {
		p    *bot.SendMessageParams
		want string
	}{
		"unknown chat":      {&bot.SendMessageParams{ChatID: 77, Text: "x"}, "chat not found"},
		"empty text":        {&bot.SendMessageParams{Text: "  \n"}, "message text is empty"},
		"too long":          {&bot.SendMessageParams{Text: strings.Repeat("я", 4097)}, "message is too long"},
		"unescaped <":       {&bot.SendMessageParams{Text: "a < b", ParseMode: models.ParseModeHTML}, "can't parse entities: Unsupported start tag \"\""},
		"unknown tag":       {&bot.SendMessageParams{Text: "<script>x</script>", ParseMode: models.ParseModeHTML}, "Unsupported start tag \"script\""},
		"unclosed tag":      {&bot.SendMessageParams{Text: "<b>x", ParseMode: models.ParseModeHTML}, "Can't find end tag corresponding to start tag \"b\""},
		"crossed tags":      {&bot.SendMessageParams{Text: "<b><i>x</b></i>", ParseMode: models.ParseModeHTML}, "Unmatched end tag"},
		"unknown topic":     {&bot.SendMessageParams{Text: "x", MessageThreadID: 3}, "message thread not found"},
		"data over 64":      {&bot.SendMessageParams{Text: "x", ReplyMarkup: button(strings.Repeat("d", 65))}, "BUTTON_DATA_INVALID"},
		"button, no action": {&bot.SendMessageParams{Text: "x", ReplyMarkup: map[string]any{"inline_keyboard": [][]map[string]any{{{"text": "Go"}}}}}, "Text buttons are unallowed"},
		"missing reply":     {&bot.SendMessageParams{Text: "x", ReplyParameters: &models.ReplyParameters{MessageID: 99}}, "message to be replied not found"},
		// The library's own button type always carries copy_text: why the
		// adapter writes its keyboard itself.
		"library button": {&bot.SendMessageParams{Text: "x", ReplyMarkup: models.InlineKeyboardMarkup{InlineKeyboard: [][]models.InlineKeyboardButton{{{Text: "Go", CallbackData: "d"}}}}}, "BUTTON_COPY_TEXT_INVALID"},
	} {
		if got := send(tc.p); !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want %q", name, got, tc.want)
		}
	}
	if n := len(f.Errors()); n != 12 {
		t.Fatalf("%d refusals recorded, want 12: %q", n, f.Errors())
	}
	if got := send(&bot.SendMessageParams{Text: "<b>fine</b> &amp; <a href=\"https://x.org\">dandy</a>", ParseMode: models.ParseModeHTML, ReplyMarkup: button("gh:a:g")}); got != "" {
		t.Fatal(got)
	}
	m := f.Messages("group-x")
	if len(m) != 1 || m[0].Text != "fine & dandy" || len(m[0].Buttons) != 1 || m[0].Buttons[0] != "gh:a:g" {
		t.Fatalf("held as %+v", m)
	}
}

func TestTelegramFakeEditsAndAnswers(t *testing.T) {
	f := telegramtest.NewTelegram(t, telegramtest.TelegramOptions{AnswerWait: 2 * time.Second})
	b := newBot(t, f, bot.WithSkipGetMe())
	ctx := context.Background()
	chat, _ := strconv.ParseInt(f.ChatID("group-x"), 10, 64)
	kb := map[string]any{"inline_keyboard": [][]map[string]any{{{"text": "Go", "callback_data": "go"}}}}
	msg, err := b.SendMessage(ctx, &bot.SendMessageParams{ChatID: chat, Text: "card", ReplyMarkup: kb})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.EditMessageText(ctx, &bot.EditMessageTextParams{ChatID: chat, MessageID: msg.ID, Text: "card", ReplyMarkup: kb}); err == nil ||
		!strings.Contains(err.Error(), "message is not modified") {
		t.Fatalf("an edit that changes nothing: %v", err)
	}
	if _, err := b.EditMessageText(ctx, &bot.EditMessageTextParams{ChatID: chat, MessageID: 99, Text: "x"}); err == nil ||
		!strings.Contains(err.Error(), "message to edit not found") {
		t.Fatalf("editing nothing: %v", err)
	}
	// Editing the text without reply_markup drops the keyboard.
	if _, err := b.EditMessageText(ctx, &bot.EditMessageTextParams{ChatID: chat, MessageID: msg.ID, Text: "decided"}); err != nil {
		t.Fatal(err)
	}
	if m := f.Messages("group-x"); m[0].Text != "decided" || len(m[0].Buttons) != 0 || !m[0].Edited {
		t.Fatalf("after the edit: %+v", m)
	}

	// A press: answered once; a second answer is refused.
	queries := make(chan string, 1)
	go func() {
		for range 5 {
			_, r := call(t, f, f.Token, "getUpdates", map[string]any{"timeout": 1})
			var ups []models.Update
			_ = json.Unmarshal(r.Result, &ups)
			for _, u := range ups {
				if u.CallbackQuery != nil {
					queries <- u.CallbackQuery.ID
					return
				}
			}
		}
	}()
	answered := make(chan string, 1)
	go func() {
		reply, _ := f.Press("group-x", strconv.Itoa(msg.ID), "go", "alice")
		answered <- reply
	}()
	var q string
	select {
	case q = <-queries:
	case <-time.After(5 * time.Second):
		t.Fatal("the press never reached getUpdates")
	}
	if ok, err := b.AnswerCallbackQuery(ctx, &bot.AnswerCallbackQueryParams{CallbackQueryID: q, Text: "Done."}); !ok || err != nil {
		t.Fatalf("first answer: %v", err)
	}
	if reply := <-answered; reply != "Done." {
		t.Fatalf("the presser saw %q", reply)
	}
	if _, err := b.AnswerCallbackQuery(ctx, &bot.AnswerCallbackQueryParams{CallbackQueryID: q}); err == nil || !strings.Contains(err.Error(), "query is too old") {
		t.Fatalf("second answer: %v", err)
	}
	if _, err := b.AnswerCallbackQuery(ctx, &bot.AnswerCallbackQueryParams{CallbackQueryID: "nope"}); err == nil {
		t.Fatal("an unknown query answered")
	}
	if _, err := f.Press("group-x", strconv.Itoa(msg.ID), "never-there", "alice"); err == nil {
		t.Fatal("pressed a button the message never had")
	}
}

func TestTelegramFakeRateLimits(t *testing.T) {
	f := telegramtest.NewTelegram(t, telegramtest.TelegramOptions{RateLimit: true,
		Rates: telegramtest.TelegramRates{PerChat: time.Millisecond, GroupPerMinute: 2, PerSecond: 3}})
	send := func(chat string) tgResp {
		_, r := call(t, f, f.Token, "sendMessage", map[string]any{"chat_id": f.ChatID(chat), "text": "x"})
		return r
	}
	send("group-a")
	time.Sleep(5 * time.Millisecond)
	send("group-a")
	time.Sleep(5 * time.Millisecond)
	if r := send("group-a"); r.ErrorCode != 429 || r.Parameters.RetryAfter < 50 || r.Parameters.RetryAfter > 60 {
		t.Fatalf("a third send to a group in a minute: %+v", r)
	}
	if r := send("bob"); !r.OK {
		t.Fatalf("another chat is not that group: %+v", r)
	}
	if r := send("carol"); r.ErrorCode != 429 || r.Parameters.RetryAfter != 1 || !strings.Contains(r.Description, "retry after 1") {
		t.Fatalf("a fourth send in a second: %+v", r)
	}
	if len(f.Throttled()) != 2 || len(f.Errors()) != 0 {
		t.Fatalf("throttled %q, errors %q", f.Throttled(), f.Errors())
	}
}

func TestTelegramHTMLText(t *testing.T) {
	for in, want := range map[string]string{
		"&lt;b&gt; &amp; &quot;":                          `<b> & "`,
		"&nbsp; & &unknown; AT&T":                         "&nbsp; & &unknown; AT&T",
		"&#65;&#x42;":                                     "AB",
		"<b>x</b><i><u>y</u></i>":                         "xy",
		"<span class=\"tg-spoiler\">s</span>":             "s",
		"<pre><code class=\"language-go\">x</code></pre>": "x",
		"a > b":        "a > b",
		"<B>upper</B>": "upper",
	} {
		got, err := telegramtest.TelegramHTMLText(in)
		if err != nil || got != want {
			t.Errorf("%q: %q %v, want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"<", "<b", "</b>", "<span>x</span>", "<a href='x>y</a>", "x <3"} {
		if _, err := telegramtest.TelegramHTMLText(in); err == nil {
			t.Errorf("%q parsed", in)
		}
	}
}

// ForceReply markup is taken on sendMessage (force_reply true, a
// placeholder of 1-64 characters) and never on an edit; a user's Reply
// carries the replied message, its sender included, in reply_to_message.
func TestTelegramFakeForceReplyAndReplies(t *testing.T) {
	f := telegramtest.NewTelegram(t, telegramtest.TelegramOptions{})
	chat := f.ChatID("alice")
	send := func(markup map[string]any) (int, tgResp) {
		return call(t, f, f.Token, "sendMessage", map[string]any{"chat_id": chat, "text": "Why?", "reply_markup": markup})
	}
	for name, bad := range map[string]map[string]any{
		"force_reply false":  {"force_reply": false},
		"a long placeholder": {"force_reply": true, "input_field_placeholder": strings.Repeat("p", 65)},
	} {
		if code, _ := send(bad); code != 400 {
			t.Errorf("%s: %d, want 400", name, code)
		}
	}
	code, r := send(map[string]any{"force_reply": true, "input_field_placeholder": "Why deny it?"})
	if code != 200 {
		t.Fatalf("sendMessage with ForceReply: %d %+v", code, r)
	}
	var sent struct {
		ID int `json:"message_id"`
	}
	_ = json.Unmarshal(r.Result, &sent)
	if m := f.TelegramMessages("alice"); len(m) != 1 || !m[0].ForceReply || m[0].Placeholder != "Why deny it?" || len(m[0].Buttons) != 0 {
		t.Fatalf("the prompt as held: %+v", m)
	}
	if code, _ := call(t, f, f.Token, "editMessageText", map[string]any{"chat_id": chat, "message_id": sent.ID, "text": "x",
		"reply_markup": map[string]any{"force_reply": true}}); code != 400 {
		t.Errorf("an edit with ForceReply: %d, want 400", code)
	}
	upd, err := f.Reply("alice", strconv.Itoa(sent.ID), "alice", "not today")
	if err != nil {
		t.Fatal(err)
	}
	_, r = call(t, f, f.Token, "getUpdates", map[string]any{"timeout": 0})
	var ups []struct {
		ID      int64 `json:"update_id"`
		Message struct {
			Text  string `json:"text"`
			Reply struct {
				ID   int    `json:"message_id"`
				Text string `json:"text"`
				From struct {
					ID    int64 `json:"id"`
					IsBot bool  `json:"is_bot"`
				} `json:"from"`
			} `json:"reply_to_message"`
		} `json:"message"`
	}
	_ = json.Unmarshal(r.Result, &ups)
	if len(ups) != 1 || strconv.FormatInt(ups[0].ID, 10) != upd || ups[0].Message.Text != "not today" || ups[0].Message.Reply.ID != sent.ID ||
		ups[0].Message.Reply.Text != "Why?" || !ups[0].Message.Reply.From.IsBot || !strings.HasPrefix(f.Token, strconv.FormatInt(ups[0].Message.Reply.From.ID, 10)+":") {
		t.Fatalf("the reply update: %s", r.Result)
	}
}
