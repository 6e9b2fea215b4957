package telegram_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/adapters/adaptertest"
	"github.com/gatehouse/gatehouse/adapters/telegram"
	"github.com/gatehouse/gatehouse/adapters/telegram/telegramtest"
	"github.com/gatehouse/gatehouse/gateway/chat"
	"github.com/gatehouse/gatehouse/internal/testing/stacktest"
)

// sink records what the adapter hands over. Receive, Press and Command
// can be made to fail (failReceive, failPress, failCommand) or Receive to
// wait (hold).
type sink struct {
	adaptertest.HealthLog
	mu           sync.Mutex
	inbound      []gh.Inbound
	presses      []gh.Press
	commands     []command
	calls        chan string // update ids, one per Receive/Press/Command call
	hold         chan struct{}
	failReceive  func(gh.Inbound) error
	failPress    func(gh.Press) error
	failCommand  func(gh.Inbound) error
	pressResult  chat.PressResult
	commandReply func(name string, in gh.Inbound) chat.CommandReply
}

// command is one Command call the sink took.
type command struct {
	name string
	in   gh.Inbound
}

func newSink() *sink { return &sink{calls: make(chan string, 1000)} }

func (s *sink) Receive(ctx context.Context, in gh.Inbound) (chat.ReceiveResult, error) {
	s.calls <- in.UpdateID
	if s.hold != nil {
		select {
		case <-s.hold:
		case <-ctx.Done():
			return chat.ReceiveResult{}, ctx.Err()
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failReceive != nil {
		if err := s.failReceive(in); err != nil {
			return chat.ReceiveResult{}, err
		}
	}
	s.inbound = append(s.inbound, in)
	return chat.ReceiveResult{Outcome: chat.ReceiveHandedOn}, nil
}

func (s *sink) Press(ctx context.Context, p gh.Press) (chat.PressResult, error) {
	s.calls <- p.UpdateID
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failPress != nil {
		if err := s.failPress(p); err != nil {
			return chat.PressResult{}, err
		}
	}
	s.presses = append(s.presses, p)
	return s.pressResult, nil
}

// Command records a command like Receive records a message, and answers
// it with commandReply (by default an answer naming the command and what
// followed it, with no buttons).
func (s *sink) Command(ctx context.Context, name string, in gh.Inbound) (chat.CommandReply, error) {
	s.calls <- in.UpdateID
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failCommand != nil {
		if err := s.failCommand(in); err != nil {
			return chat.CommandReply{}, err
		}
	}
	s.commands = append(s.commands, command{name: name, in: in})
	if s.commandReply != nil {
		return s.commandReply(name, in), nil
	}
	return chat.CommandReply{Text: "/" + name + " with " + strconv.Quote(in.Text)}, nil
}

// commanded waits for the Command call of update id.
func (s *sink) commanded(t *testing.T, id string) command {
	t.Helper()
	var got command
	adaptertest.Eventually(t, "command "+id+" handed over", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, c := range s.commands {
			if c.in.UpdateID == id {
				got = c
				return true
			}
		}
		return false
	})
	return got
}

// received waits for the committed Inbound of update id.
func (s *sink) received(t *testing.T, id string) gh.Inbound {
	t.Helper()
	var got gh.Inbound
	adaptertest.Eventually(t, "update "+id+" received", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, in := range s.inbound {
			if in.UpdateID == id {
				got = in
				return true
			}
		}
		return false
	})
	return got
}

func (s *sink) pressList() []gh.Press {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.presses)
}

// nextCall waits for the next Receive or Press call.
func (s *sink) nextCall(t *testing.T) string {
	t.Helper()
	select {
	case id := <-s.calls:
		return id
	case <-time.After(10 * time.Second):
		t.Fatal("the sink was not called")
		return ""
	}
}

func noFakeErrors(t *testing.T, f *telegramtest.TelegramFake) {
	t.Helper()
	if errs := f.Errors(); len(errs) > 0 {
		t.Fatalf("the fake refused requests: %q", errs)
	}
}

func TestTextMessageIsAcknowledgedOnlyAfterReceive(t *testing.T) {
	a, f := telegramtest.NewTelegramAdapter(t, telegramtest.TelegramOptions{})
	s := newSink()
	s.hold = make(chan struct{})
	adaptertest.Connect(t, a, s, 5*time.Second)

	up := f.Say("alice", "alice", "hello <there> & all", false)
	if got := s.nextCall(t); got != up {
		t.Fatalf("Receive got update %s, want %s", got, up)
	}
	// Receive has the update but has not returned: Telegram must not have
	// been told. An adapter that acknowledged on fetch (the library's own
	// loop) would move the offset with its next call, at once.
	time.Sleep(300 * time.Millisecond)
	if f.Acked(up) {
		t.Fatal("the update was acknowledged while Receive was still committing it")
	}
	close(s.hold)
	in := s.received(t, up)
	adaptertest.Eventually(t, "the update acknowledged after Receive returned", func() bool { return f.Acked(up) })

	want := gh.Inbound{
		Platform: gh.PlatformTelegram, UpdateID: up, ChatID: f.ChatID("alice"), ChatType: gh.ChatDM,
		UserID: f.UserID("alice"), UserName: "alice", MessageID: "1", Text: "hello <there> & all",
	}
	if in.ReceivedAt.IsZero() {
		t.Error("ReceivedAt is not set")
	}
	in.ReceivedAt = time.Time{}
	if !reflect.DeepEqual(in, want) {
		t.Fatalf("inbound\n got %+v\nwant %+v", in, want)
	}
	noFakeErrors(t, f)
}

func TestFailedReceiveIsFetchedAgainBeforeLaterUpdates(t *testing.T) {
	a, f := telegramtest.NewTelegramAdapter(t, telegramtest.TelegramOptions{})
	s := newSink()
	failed := false
	s.failReceive = func(in gh.Inbound) error {
		if in.Text == "first" && !failed {
			failed = true
			return errors.New("database is down")
		}
		return nil
	}
	first := f.Say("alice", "alice", "first", false)
	second := f.Say("alice", "alice", "second", false)
	adaptertest.Connect(t, a, s, 5*time.Second)

	calls := []string{s.nextCall(t), s.nextCall(t), s.nextCall(t)}
	if want := []string{first, first, second}; !slices.Equal(calls, want) {
		t.Fatalf("Receive calls %v, want %v: a failed update comes again, and nothing after it overtakes it", calls, want)
	}
	s.received(t, second)
	adaptertest.Eventually(t, "both acknowledged", func() bool { return f.Acked(first) && f.Acked(second) })
	noFakeErrors(t, f)
}

func TestWebhookAnswers200OnlyAfterReceive(t *testing.T) {
	a, f := telegramtest.NewTelegramAdapter(t, telegramtest.TelegramOptions{Webhook: true})
	s := newSink()
	failed := false
	s.failReceive = func(gh.Inbound) error {
		if !failed {
			failed = true
			return errors.New("database is down")
		}
		return nil
	}
	adaptertest.Connect(t, a, s, 5*time.Second)
	up := f.Say("alice", "alice", "by webhook", false)
	in := s.received(t, up)
	if in.Text != "by webhook" || in.UserID != f.UserID("alice") {
		t.Fatalf("inbound %+v", in)
	}
	adaptertest.Eventually(t, "the webhook delivery acknowledged", func() bool { return f.Acked(up) })
	if st := f.WebhookStatuses(up); !slices.Equal(st, []int{500, 200}) {
		t.Fatalf("webhook answers %v, want [500 200]: a failed commit is a 500 so Telegram delivers it again", st)
	}
	noFakeErrors(t, f)
}

func TestWebhookRefusesWrongSecret(t *testing.T) {
	a, err := telegram.New(telegram.Config{Token: telegramtest.TelegramToken, APIURL: "http://127.0.0.1:1", WebhookSecret: "right-secret"})
	if err != nil {
		t.Fatal(err)
	}
	s := newSink()
	srv := httptest.NewServer(a.Handler(s))
	defer srv.Close()
	body := `{"update_id":42,"message":{"message_id":1,"date":1700000000,"chat":{"id":7,"type":"private"},"from":{"id":7,"is_bot":false,"first_name":"Al"},"text":"hi"}}`
	post := func(secret string) int {
		req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(body))
		if secret != "" {
			req.Header.Set("X-Telegram-Bot-Api-Secret-Token", secret)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, secret := range []string{"", "wrong-secret", "right-secre", "right-secret-"} {
		if code := post(secret); code != http.StatusUnauthorized {
			t.Fatalf("secret %q: %d, want 401", secret, code)
		}
	}
	if len(s.calls) != 0 {
		t.Fatal("an update with a wrong secret reached the sink")
	}
	if code := post("right-secret"); code != http.StatusOK {
		t.Fatalf("right secret: %d, want 200", code)
	}
	if in := s.received(t, "42"); in.Text != "hi" {
		t.Fatalf("inbound %+v", in)
	}
	resp, err := http.Post(srv.URL, "application/json", strings.NewReader("not json"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("garbage without a secret: %d, want 401 before anything is read", resp.StatusCode)
	}
}

func TestHandlerIsNilWhenPolling(t *testing.T) {
	a, _ := telegramtest.NewTelegramAdapter(t, telegramtest.TelegramOptions{})
	if h := a.Handler(newSink()); h != nil {
		t.Fatal("a polling adapter serves no webhook")
	}
}

func TestBotAndGroupAndTopicAndChannel(t *testing.T) {
	a, f := telegramtest.NewTelegramAdapter(t, telegramtest.TelegramOptions{})
	s := newSink()
	adaptertest.Connect(t, a, s, 5*time.Second)

	bot := s.received(t, f.Say("group-ops", "otherbot", "beep", true))
	if !bot.IsBot || bot.ChatType != gh.ChatGroup || !strings.HasPrefix(bot.ChatID, "-100") || bot.UserName != "otherbot" {
		t.Fatalf("a bot's message in a group: %+v", bot)
	}
	topic := s.received(t, f.SayInTopic("forum-dev", 7, "alice", "in a topic"))
	if topic.ThreadID != "7" || topic.ChatType != gh.ChatGroup || topic.Text != "in a topic" {
		t.Fatalf("a forum topic message: %+v", topic)
	}
	post := s.received(t, f.Say("channel-news", "", "hear ye", false))
	if post.ChatType != gh.ChatChannel || post.Text != "hear ye" || post.UserID != post.ChatID {
		t.Fatalf("a channel post speaks as the channel: %+v", post)
	}
	noFakeErrors(t, f)
}

func TestUnsupportedUpdatesAreNamed(t *testing.T) {
	a, f := telegramtest.NewTelegramAdapter(t, telegramtest.TelegramOptions{})
	s := newSink()
	adaptertest.Connect(t, a, s, 5*time.Second)

	sticker := s.received(t, f.SayUnsupported("alice", "alice"))
	if sticker.Unsupported != "sticker" || sticker.Text != "" || sticker.UserID != f.UserID("alice") {
		t.Fatalf("sticker: %+v", sticker)
	}
	edit := f.Message("alice", "alice")
	edit["text"], edit["edit_date"] = "changed my mind", time.Now().Unix()
	edited := s.received(t, f.Inject(map[string]any{"edited_message": edit}))
	if edited.Unsupported != "edited_message" || edited.Text != "" {
		t.Fatalf("edit: %+v", edited)
	}
	photo := f.Message("alice", "alice")
	photo["photo"] = []map[string]any{{"file_id": "p", "file_unique_id": "p", "width": 90, "height": 90}}
	bare := s.received(t, f.Inject(map[string]any{"message": photo}))
	if bare.Unsupported != "photo" {
		t.Fatalf("photo without caption: %+v", bare)
	}
	photo = f.Message("alice", "alice")
	photo["photo"] = []map[string]any{{"file_id": "p", "file_unique_id": "p", "width": 90, "height": 90}}
	photo["caption"] = "look at this"
	captioned := s.received(t, f.Inject(map[string]any{"message": photo}))
	if captioned.Unsupported != "" || captioned.Text != "look at this" {
		t.Fatalf("a caption is the user's words: %+v", captioned)
	}
	join := f.Message("group-ops", "alice")
	join["new_chat_members"] = []map[string]any{{"id": 5, "is_bot": false, "first_name": "Newbie"}}
	joined := s.received(t, f.Inject(map[string]any{"message": join}))
	if joined.Unsupported != "member_joined" || joined.ChatType != gh.ChatGroup {
		t.Fatalf("join: %+v", joined)
	}
	noFakeErrors(t, f)
}

// sendCard sends an approval card for gate g to chat and returns its id.
func sendCard(t *testing.T, a chat.Adapter, addr gh.Address, g string) string {
	t.Helper()
	card := &chat.Card{GateID: g, Text: a.Format("Run **post_note**? <script>"), Buttons: []chat.Button{
		{Label: "Approve", Data: chat.ButtonData(g, chat.ChoiceApprove), Style: "primary"},
		{Label: "Deny", Data: chat.ButtonData(g, chat.ChoiceDeny), Style: "danger"},
	}}
	id, err := a.Send(context.Background(), chat.Outgoing{Address: addr, Card: card})
	if err != nil {
		t.Fatalf("send card: %v", err)
	}
	return id
}

func TestPressReachesSinkAndPresserSeesResult(t *testing.T) {
	a, f := telegramtest.NewTelegramAdapter(t, telegramtest.TelegramOptions{})
	s := newSink()
	s.pressResult = chat.PressResult{Won: true, Text: "Approved."}
	adaptertest.Connect(t, a, s, 5*time.Second)
	in := s.received(t, f.Say("group-ops", "alice", "post it", false))
	addr := gh.Address{Platform: gh.PlatformTelegram, ChatID: in.ChatID, ChatType: in.ChatType}

	id := sendCard(t, a, addr, "gate-123")
	msgs := f.Messages("group-ops")
	if len(msgs) != 1 || msgs[0].ID != id || msgs[0].Text != "Run post_note? <script>" {
		t.Fatalf("the card as Telegram shows it: %+v", msgs)
	}
	var choices []string
	for _, data := range msgs[0].Buttons {
		gate, choice, ok := chat.ParseButtonData(data)
		if !ok || gate != "gate-123" {
			t.Fatalf("button data %q does not round-trip", data)
		}
		choices = append(choices, choice)
	}
	if !slices.Equal(choices, []string{chat.ChoiceApprove, chat.ChoiceDeny}) {
		t.Fatalf("buttons %v", choices)
	}

	reply, err := f.Press("group-ops", id, chat.ButtonData("gate-123", chat.ChoiceApprove), "bob")
	if err != nil || reply != "Approved." {
		t.Fatalf("the presser sees %q (%v), want the press result", reply, err)
	}
	p := s.pressList()
	if len(p) != 1 {
		t.Fatalf("presses %+v", p)
	}
	want := gh.Press{Platform: gh.PlatformTelegram, UpdateID: p[0].UpdateID, GateID: "gate-123", Choice: chat.ChoiceApprove,
		UserID: f.UserID("bob"), UserName: "bob", ChatID: in.ChatID, MessageID: id}
	if p[0] != want || p[0].UpdateID == "" {
		t.Fatalf("press\n got %+v\nwant %+v", p[0], want)
	}
	noFakeErrors(t, f)
}

func TestPressOnAButtonNotOursIsAnsweredAndIgnored(t *testing.T) {
	a, f := telegramtest.NewTelegramAdapter(t, telegramtest.TelegramOptions{})
	s := newSink()
	adaptertest.Connect(t, a, s, 5*time.Second)
	in := s.received(t, f.Say("alice", "alice", "hi", false))
	id := sendCard(t, a, gh.Address{ChatID: in.ChatID}, "g1")

	reply, err := f.PressAny("alice", id, "someone-else:42", "alice")
	if err != nil || reply != "This button is not from Gatehouse." {
		t.Fatalf("foreign data: %q %v", reply, err)
	}
	if p := s.pressList(); len(p) != 0 {
		t.Fatalf("a foreign press reached the gateway: %+v", p)
	}
	noFakeErrors(t, f)
}

func TestFailedPressComesAgainAndIsAnsweredOnce(t *testing.T) {
	a, f := telegramtest.NewTelegramAdapter(t, telegramtest.TelegramOptions{})
	s := newSink()
	long := strings.Repeat("é", 250)
	s.pressResult = chat.PressResult{Text: long}
	failed := false
	s.failPress = func(gh.Press) error {
		if !failed {
			failed = true
			return errors.New("database is down")
		}
		return nil
	}
	adaptertest.Connect(t, a, s, 5*time.Second)
	in := s.received(t, f.Say("alice", "alice", "hi", false))
	id := sendCard(t, a, gh.Address{ChatID: in.ChatID}, "g1")

	reply, err := f.Press("alice", id, chat.ButtonData("g1", chat.ChoiceDeny), "alice")
	if err != nil {
		t.Fatal(err)
	}
	// Telegram shows at most 200 characters and refuses longer answers.
	if reply != long[:len("é")*200] || utf8.RuneCountInString(reply) != 200 {
		t.Fatalf("answer of %d characters", utf8.RuneCountInString(reply))
	}
	if p := s.pressList(); len(p) != 1 || p[0].Choice != chat.ChoiceDeny {
		t.Fatalf("presses %+v", p)
	}
	noFakeErrors(t, f)
}

func TestSendInTopicAsReplyWithoutPreview(t *testing.T) {
	a, f := telegramtest.NewTelegramAdapter(t, telegramtest.TelegramOptions{})
	s := newSink()
	adaptertest.Connect(t, a, s, 5*time.Second)
	in := s.received(t, f.SayInTopic("forum-dev", 9, "alice", "see https://example.com"))
	addr := gh.Address{Platform: gh.PlatformTelegram, ChatID: in.ChatID, ThreadID: in.ThreadID, ChatType: in.ChatType, ReplyTo: in.MessageID}

	text := "Done: **3 files**, see `a<b>.go` & https://example.com"
	id, err := a.Send(context.Background(), chat.Outgoing{Address: addr, Text: a.Format(text)})
	if err != nil {
		t.Fatal(err)
	}
	msgs := f.TelegramMessages("forum-dev")
	if len(msgs) != 1 || fmt.Sprint(msgs[0].ID) != id {
		t.Fatalf("messages %+v, id %s", msgs, id)
	}
	m := msgs[0]
	if m.Text != "Done: 3 files, see a<b>.go & https://example.com" {
		t.Fatalf("shown as %q", m.Text)
	}
	if m.ThreadID != 9 || fmt.Sprint(m.ReplyTo) != in.MessageID || !m.LinkPreviewDisabled || m.ParseMode != "HTML" || m.Buttons != nil {
		t.Fatalf("sent as %+v", m)
	}
	if len(f.Messages("forum-other")) != 0 {
		t.Fatal("a message in another chat")
	}

	// A reply to a message that is gone is sent anyway, without the reply.
	addr.ReplyTo = "999"
	if _, err := a.Send(context.Background(), chat.Outgoing{Address: addr, Text: "still here"}); err != nil {
		t.Fatalf("reply to a deleted message: %v", err)
	}
	noFakeErrors(t, f)
}

func TestEditCardRemovesButtons(t *testing.T) {
	a, f := telegramtest.NewTelegramAdapter(t, telegramtest.TelegramOptions{})
	s := newSink()
	adaptertest.Connect(t, a, s, 5*time.Second)
	in := s.received(t, f.Say("alice", "alice", "hi", false))
	addr := gh.Address{Platform: gh.PlatformTelegram, ChatID: in.ChatID}
	id := sendCard(t, a, addr, "g1")

	outcome := chat.Card{GateID: "g1", Text: a.Format("Approved by alice (telegram).")}
	if err := a.EditCard(context.Background(), addr, id, outcome); err != nil {
		t.Fatal(err)
	}
	m := f.Messages("alice")
	if len(m) != 1 || m[0].ID != id || len(m[0].Buttons) != 0 || !m[0].Edited || m[0].Text != "Approved by alice (telegram)." {
		t.Fatalf("edited card %+v", m)
	}
	// The dispatcher retries an edit whose answer it lost: same result.
	if err := a.EditCard(context.Background(), addr, id, outcome); err != nil {
		t.Fatalf("an edit repeated: %v", err)
	}
	err := a.EditCard(context.Background(), addr, "999", outcome)
	if se, ok := chat.AsSendError(err); !ok || se.Status != 400 || !se.Permanent {
		t.Fatalf("editing a message that does not exist: %v", err)
	}
}

func TestSendRefusals(t *testing.T) {
	a, f := telegramtest.NewTelegramAdapter(t, telegramtest.TelegramOptions{RateLimit: true})
	s := newSink()
	adaptertest.Connect(t, a, s, 5*time.Second)
	in := s.received(t, f.Say("alice", "alice", "hi", false))
	addr := gh.Address{Platform: gh.PlatformTelegram, ChatID: in.ChatID}
	ctx := context.Background()

	if _, err := a.Send(ctx, chat.Outgoing{Address: addr, Text: "one"}); err != nil {
		t.Fatal(err)
	}
	_, err := a.Send(ctx, chat.Outgoing{Address: addr, Text: "two, too soon"})
	se, ok := chat.AsSendError(err)
	if !ok || se.Status != http.StatusTooManyRequests || se.RetryAfter != time.Second || se.Permanent {
		t.Fatalf("a second message within a second: %v", err)
	}
	if len(f.Throttled()) != 1 {
		t.Fatalf("throttled %q", f.Throttled())
	}

	for name, tc := range map[string]struct {
		addr gh.Address
		text string
	}{
		"unknown chat":        {gh.Address{ChatID: "424242"}, "hello"},
		"unescaped markup":    {gh.Address{ChatID: f.ChatID("group-a")}, "if a < b then"},
		"too long":            {gh.Address{ChatID: f.ChatID("group-b")}, strings.Repeat("x", 4097)},
		"not a chat id":       {gh.Address{ChatID: "room"}, "hello"},
		"topic that is not":   {gh.Address{ChatID: f.ChatID("group-c"), ThreadID: "5"}, "hello"},
		"empty after parsing": {gh.Address{ChatID: f.ChatID("group-d")}, "<b> </b>"},
	} {
		_, err := a.Send(ctx, chat.Outgoing{Address: tc.addr, Text: tc.text})
		se, ok := chat.AsSendError(err)
		if !ok || se.Status != http.StatusBadRequest || !se.Permanent {
			t.Errorf("%s: %v, want a permanent 400", name, err)
		}
	}
	if len(f.Errors()) == 0 {
		t.Fatal("the fake recorded none of its refusals")
	}

	bad, err := telegram.New(telegram.Config{Token: "1:wrong", APIURL: f.URL})
	if err != nil {
		t.Fatal(err)
	}
	_, err = bad.Send(ctx, chat.Outgoing{Address: addr, Text: "hello"})
	if se, ok := chat.AsSendError(err); !ok || se.Status != http.StatusUnauthorized || !se.Permanent {
		t.Fatalf("wrong token: %v", err)
	}
	if strings.Contains(err.Error(), "1:wrong") {
		t.Fatalf("the token leaks into the error: %v", err)
	}
}

func TestSendTransportErrorIsNotASendError(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	a, err := telegram.New(telegram.Config{Token: telegramtest.TelegramToken, APIURL: url})
	if err != nil {
		t.Fatal(err)
	}
	_, err = a.Send(context.Background(), chat.Outgoing{Address: gh.Address{ChatID: "1"}, Text: "hi"})
	if err == nil {
		t.Fatal("sent to a closed server")
	}
	if _, ok := chat.AsSendError(err); ok {
		t.Fatalf("a transport error is returned as it is, not as a platform refusal: %v", err)
	}
	if strings.Contains(err.Error(), telegramtest.TelegramToken) {
		t.Fatalf("the token leaks into the error: %v", err)
	}
}

func TestFormat(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain", "plain"},
		{"a < b && c > d", "a &lt; b &amp;&amp; c &gt; d"},
		{"<b>not bold</b>", "&lt;b&gt;not bold&lt;/b&gt;"},
		{"&lt; stays text", "&amp;lt; stays text"},
		{"**bold** and **more**", "<b>bold</b> and <b>more</b>"},
		{"**<i>**", "<b>&lt;i&gt;</b>"},
		{"an **unclosed bold", "an **unclosed bold"},
		{"****", "****"},
		{"use `x < y` here", "use <code>x &lt; y</code> here"},
		{"`**not bold**`", "<code>**not bold**</code>"},
		{"a ` lone backtick", "a ` lone backtick"},
		{"```go\nif a < b {}\n```", "<pre>if a &lt; b {}\n</pre>"},
		{"```\nx\n", "```\nx\n"},
		{"bold **across\nlines**", "bold **across\nlines**"},
		{"bad \xff byte", "bad \uFFFD byte"},
	} {
		if got := telegram.Format(tc.in); got != tc.want {
			t.Errorf("Format(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestFormattedTextShowsAsWritten(t *testing.T) {
	// Whatever a model writes, once formatted Telegram parses it, and
	// text without Markdown markers shows exactly as written.
	for _, s := range []string{"a<b>c</b>", "<<>>&&;;", "&#60;", "x</>y", "<a href='x'>y</a>", "tab\there"} {
		got, err := telegramtest.TelegramHTMLText(telegram.Format(s))
		if err != nil || got != s {
			t.Errorf("%q shows as %q (%v)", s, got, err)
		}
	}
}

func FuzzFormat(f *testing.F) {
	for _, s := range []string{"", "a < b", "**b**", "`c`", "```go\nx\n```", "<b>&amp;</b>", "**`x`**", "``` ``` `"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := telegram.Format(s)
		shown, err := telegramtest.TelegramHTMLText(out)
		if err != nil {
			t.Fatalf("Format(%q) = %q, which Telegram refuses: %v", s, out, err)
		}
		if utf8.ValidString(s) && !strings.ContainsAny(s, "`*") && shown != s {
			t.Fatalf("Format(%q) shows as %q", s, shown)
		}
		if utf8.RuneCountInString(shown) > utf8.RuneCountInString(s) {
			t.Fatalf("Format(%q) shows more characters than it was given: %q", s, shown)
		}
	})
}

func TestLimits(t *testing.T) {
	a, _ := telegramtest.NewTelegramAdapter(t, telegramtest.TelegramOptions{})
	want := chat.Limits{MaxText: 4096, PerChat: time.Second, GroupPerMinute: 20, PerSecond: 30}
	if got := a.Limits(); got != want {
		t.Fatalf("limits %+v", got)
	}
	if a.Platform() != gh.PlatformTelegram {
		t.Fatal(a.Platform())
	}
}

func TestNewRefusesBadConfig(t *testing.T) {
	for name, cfg := range map[string]telegram.Config{
		"no token":         {},
		"token with slash": {Token: "1:a/b"},
		"bad secret":       {Token: "1:a", WebhookSecret: "has spaces"},
		"url, no secret":   {Token: "1:a", WebhookURL: "https://example.com/hook"},
	} {
		if _, err := telegram.New(cfg); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestConnectStopsPromptlyInBothModes(t *testing.T) {
	for _, webhook := range []bool{false, true} {
		a, _ := telegramtest.NewTelegramAdapter(t, telegramtest.TelegramOptions{Webhook: webhook, PollTimeout: 30 * time.Second})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- a.Connect(ctx, newSink()) }()
		time.Sleep(100 * time.Millisecond) // let a long poll start
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("webhook=%v: %v", webhook, err)
			}
		case <-time.After(3 * time.Second):
			t.Fatalf("webhook=%v: Connect held a 30s poll after cancel", webhook)
		}
	}
}

func TestSuite(t *testing.T) {
	t.Run("polling", func(t *testing.T) { adaptertest.Run(t, stacktest.Stack, telegramtest.TelegramFactory) })
	t.Run("webhook", func(t *testing.T) { adaptertest.Run(t, stacktest.Stack, telegramtest.TelegramWebhookFactory) })
}

// A webhook body may come from anyone who finds the URL: a body that is
// not an update is refused without reaching the sink.
func TestWebhookRefusesNonUpdates(t *testing.T) {
	a, err := telegram.New(telegram.Config{Token: telegramtest.TelegramToken, WebhookSecret: "s"})
	if err != nil {
		t.Fatal(err)
	}
	s := newSink()
	h := a.Handler(s)
	for _, body := range []string{"", "[]", `{"message":{"text":"no id"}}`, "{"} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, "/", bytes.NewBufferString(body))
		req.Header.Set("X-Telegram-Bot-Api-Secret-Token", "s")
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusBadRequest {
			t.Errorf("body %q: %d, want 400", body, rec.Code)
		}
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("GET: %d", rec.Code)
	}
	if len(s.calls) != 0 {
		t.Fatal("the sink was called")
	}
}
