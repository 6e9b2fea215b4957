package slackchat_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/adapters/adaptertest"
	"github.com/gatehouse/gatehouse/adapters/slackchat"
	"github.com/gatehouse/gatehouse/adapters/slackchat/slacktest"
	"github.com/gatehouse/gatehouse/gateway/chat"
	"github.com/gatehouse/gatehouse/internal/testing/stacktest"
)

// recorder is a Sink that remembers what it was given and answers as the
// test says.
type recorder struct {
	adaptertest.HealthLog
	mu       sync.Mutex
	failures int // Receive calls still to fail
	// before runs inside Receive, after the update is on in and before
	// Receive returns (to look at the platform while it commits).
	before  func(gh.Inbound)
	press   func(gh.Press) (chat.PressResult, error)
	command func(name string, in gh.Inbound) (chat.CommandReply, error)
	in      chan gh.Inbound
	presses chan gh.Press
	// commands are the chat commands given to Command.
	commands chan recordedCommand
}

type recordedCommand struct {
	name string
	in   gh.Inbound
}

func newRecorder() *recorder {
	return &recorder{in: make(chan gh.Inbound, 100), presses: make(chan gh.Press, 100), commands: make(chan recordedCommand, 100)}
}

func (r *recorder) Receive(ctx context.Context, in gh.Inbound) (chat.ReceiveResult, error) {
	r.mu.Lock()
	before := r.before
	fail := r.failures > 0
	if fail {
		r.failures--
	}
	r.mu.Unlock()
	r.in <- in
	if before != nil {
		before(in)
	}
	if fail {
		return chat.ReceiveResult{}, errors.New("database is down")
	}
	return chat.ReceiveResult{Outcome: chat.ReceiveHandedOn}, nil
}

func (r *recorder) Press(ctx context.Context, p gh.Press) (chat.PressResult, error) {
	r.presses <- p
	r.mu.Lock()
	press := r.press
	r.mu.Unlock()
	if press == nil {
		return chat.PressResult{Text: "Noted."}, nil
	}
	return press(p)
}

// Command records the command and answers as the test says; by default
// as the gateway does: /grants with an empty list, anything else with
// "knows /grants only".
func (r *recorder) Command(ctx context.Context, name string, in gh.Inbound) (chat.CommandReply, error) {
	r.commands <- recordedCommand{name, in}
	r.mu.Lock()
	command := r.command
	r.mu.Unlock()
	if command != nil {
		return command(name, in)
	}
	if name != chat.CommandGrants {
		return chat.CommandReply{Text: "Gatehouse knows /" + chat.CommandGrants + " only."}, nil
	}
	return chat.CommandReply{Text: "No grants are active in this chat."}, nil
}

func (r *recorder) setCommand(fn func(name string, in gh.Inbound) (chat.CommandReply, error)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.command = fn
}

func (r *recorder) nextCommand(t *testing.T) recordedCommand {
	t.Helper()
	select {
	case c := <-r.commands:
		return c
	case <-time.After(10 * time.Second):
		t.Fatal("no command reached Command")
		return recordedCommand{}
	}
}

func (r *recorder) setBefore(fn func(gh.Inbound)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.before = fn
}

func (r *recorder) setPress(fn func(gh.Press) (chat.PressResult, error)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.press = fn
}

func (r *recorder) next(t *testing.T) gh.Inbound {
	t.Helper()
	select {
	case in := <-r.in:
		return in
	case <-time.After(10 * time.Second):
		t.Fatal("no update reached Receive")
		return gh.Inbound{}
	}
}

func (r *recorder) nextPress(t *testing.T) gh.Press {
	t.Helper()
	select {
	case p := <-r.presses:
		return p
	case <-time.After(10 * time.Second):
		t.Fatal("no press reached Press")
		return gh.Press{}
	}
}

var fixedNow = time.Date(2031, 3, 4, 5, 6, 7, 0, time.UTC)

// socketPair starts a fake Slack and a Socket Mode adapter connected to
// it; Connect runs until the test ends and must then return nil.
func socketPair(t *testing.T, s chat.Sink, opts ...slacktest.SlackOption) (*slackchat.Adapter, *slacktest.SlackFake) {
	t.Helper()
	f := slacktest.NewSlack(t, opts...)
	cfg := f.SocketConfig()
	cfg.Now = func() time.Time { return fixedNow }
	a, err := slackchat.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	adaptertest.Connect(t, a, s, 10*time.Second)
	return a, f
}

func noErrors(t *testing.T, f *slacktest.SlackFake) {
	t.Helper()
	if errs := f.Errors(); len(errs) > 0 {
		t.Fatalf("fake Slack refused requests: %q", errs)
	}
}

func TestChannelMessageReachesReceiveAndIsAckedOnlyAfter(t *testing.T) {
	rec := newRecorder()
	_, f := socketPair(t, rec)
	release := make(chan struct{})
	var ackedDuring []bool
	rec.setBefore(func(in gh.Inbound) {
		ackedDuring = append(ackedDuring, f.Acked(in.UpdateID))
		<-release
	})

	upd := f.Say("room", "alice", "hello <there> & welcome", false)
	in := rec.next(t) // Receive is running and holds until released
	if f.Acked(upd) {
		t.Fatal("the event was acknowledged before Receive returned")
	}
	close(release)
	adaptertest.Eventually(t, "the event acknowledged", func() bool { return f.Acked(upd) })
	if ackedDuring[0] {
		t.Fatal("acknowledged while Receive was committing")
	}

	want := gh.Inbound{
		Platform:   gh.PlatformSlack,
		UpdateID:   upd,
		ChatID:     f.ChatID("room"),
		ThreadID:   in.MessageID, // a top-level channel message starts a thread
		ChatType:   gh.ChatChannel,
		UserID:     f.UserID("alice"),
		UserName:   f.UserID("alice"),
		MessageID:  in.MessageID,
		Text:       "hello <there> & welcome",
		ReceivedAt: fixedNow,
	}
	if !reflect.DeepEqual(in, want) {
		t.Fatalf("inbound\n got %+v\nwant %+v", in, want)
	}
	if in.MessageID == "" || !strings.Contains(in.MessageID, ".") {
		t.Fatalf("the message id is Slack's ts, got %q", in.MessageID)
	}
	if n := f.Deliveries(upd); n != 1 {
		t.Fatalf("an acknowledged event was sent %d times", n)
	}
	noErrors(t, f)
}

func TestThreadsAndChatTypes(t *testing.T) {
	rec := newRecorder()
	a, f := socketPair(t, rec)

	f.Say("dm-alice", "alice", "just us", false)
	dm := rec.next(t)
	if dm.ChatType != gh.ChatDM || dm.ThreadID != "" || !strings.HasPrefix(dm.ChatID, "D") {
		t.Fatalf("a direct message is one session without threads: %+v", dm)
	}

	f.Say("room", "alice", "start", false)
	top := rec.next(t)
	f.SayInThread("room", top.MessageID, "alice", "and more", false)
	reply := rec.next(t)
	if reply.ThreadID != top.ThreadID || reply.ThreadID != top.MessageID {
		t.Fatalf("a reply in the thread belongs to its session: top %+v reply %+v", top, reply)
	}
	if reply.MessageID == top.MessageID {
		t.Fatal("a reply has its own ts")
	}

	f.Say("mpim-team", "alice", "all of us", false)
	if g := rec.next(t); g.ChatType != gh.ChatGroup || g.ThreadID != g.MessageID {
		t.Fatalf("a group DM message: %+v", g)
	}

	// The answer goes into the thread the message started.
	id, err := a.Send(context.Background(), chat.Outgoing{
		Address: gh.Address{Platform: gh.PlatformSlack, ChatID: top.ChatID, ThreadID: top.ThreadID},
		Text:    "in the thread",
	})
	if err != nil {
		t.Fatal(err)
	}
	posts := f.Posts("room")
	if len(posts) != 1 || posts[0].TS != id || posts[0].ThreadTS != top.MessageID || posts[0].Text != "in the thread" {
		t.Fatalf("the reply is in the thread under id %s: %+v", id, posts)
	}
	noErrors(t, f)
}

func TestReceiveErrorLeavesEventUnackedAndSlackResends(t *testing.T) {
	rec := newRecorder()
	rec.failures = 1
	// A short ack timeout keeps the test quick; Slack's is 3 s.
	_, f := socketPair(t, rec, slacktest.SlackAckTimeout(300*time.Millisecond))

	upd := f.Say("room", "alice", "commit me", false)
	first := rec.next(t)
	if f.Acked(upd) {
		t.Fatal("an event whose commit failed was acknowledged")
	}
	second := rec.next(t) // the resend
	if first.UpdateID != upd || second.UpdateID != upd {
		t.Fatalf("a resend keeps the event_id: %q then %q, want %q", first.UpdateID, second.UpdateID, upd)
	}
	adaptertest.Eventually(t, "the resent event acknowledged", func() bool { return f.Acked(upd) })
	if n := f.Deliveries(upd); n != 2 {
		t.Fatalf("sent %d times, want 2 (original and one resend)", n)
	}
	noErrors(t, f)
}

func TestRedeliveryRepeatsTheUpdateID(t *testing.T) {
	rec := newRecorder()
	_, f := socketPair(t, rec)
	upd := f.Say("room", "alice", "once", false)
	rec.next(t)
	adaptertest.Eventually(t, "ack", func() bool { return f.Acked(upd) })
	f.Redeliver(upd)
	if again := rec.next(t); again.UpdateID != upd || again.Text != "once" {
		t.Fatalf("redelivery: %+v", again)
	}
	noErrors(t, f)
}

func TestBotMessagesAreMarked(t *testing.T) {
	rec := newRecorder()
	a, f := socketPair(t, rec, slacktest.SlackEchoBotMessages())

	upd := f.Say("room", "otherbot", "beep", true)
	in := rec.next(t)
	if !in.IsBot || in.Text != "beep" || in.UpdateID != upd {
		t.Fatalf("another bot's message: %+v", in)
	}
	adaptertest.Eventually(t, "ack of the bot message", func() bool { return f.Acked(upd) })

	// Slack echoes what our bot posts: it must come back as a bot's,
	// or the gateway would answer itself.
	if _, err := a.Send(context.Background(), chat.Outgoing{
		Address: gh.Address{ChatID: f.ChatID("room")}, Text: "my own words",
	}); err != nil {
		t.Fatal(err)
	}
	echo := rec.next(t)
	if !echo.IsBot || echo.UserID != f.BotUserID || echo.Text != "my own words" {
		t.Fatalf("our own message echoed: %+v", echo)
	}
	noErrors(t, f)
}

func TestUnsupportedUpdates(t *testing.T) {
	rec := newRecorder()
	_, f := socketPair(t, rec)

	f.SayUnsupported("room", "alice")
	if in := rec.next(t); in.Unsupported != "file_share" || in.Text != "" || in.UserID != f.UserID("alice") {
		t.Fatalf("a file without words: %+v", in)
	}
	edit := f.SayEvent("room", map[string]any{
		"type": "message", "subtype": "message_changed", "hidden": true,
		"message": map[string]any{"type": "message", "user": f.UserID("alice"), "text": "edited", "ts": "1.000001"},
	})
	if in := rec.next(t); in.Unsupported != "message_changed" || in.UpdateID != edit || in.Text != "" {
		t.Fatalf("an edit: %+v", in)
	}
	// An app_mention repeats a message event under another event_id:
	// it is acknowledged and not handed on.
	mention := f.SayEvent("room", map[string]any{"type": "app_mention", "user": f.UserID("alice"), "text": "<@U0FAKEBOT1> hi"})
	adaptertest.Eventually(t, "the mention acknowledged", func() bool { return f.Acked(mention) })
	// An inner event slack-go does not know is read by the adapter
	// itself and acknowledged rather than left to be resent.
	odd := f.SayEvent("room", map[string]any{"type": "brand_new_event_type", "user": f.UserID("alice")})
	adaptertest.Eventually(t, "the unknown event acknowledged", func() bool { return f.Acked(odd) })
	select {
	case in := <-rec.in:
		t.Fatalf("handed on something that is no message: %+v", in)
	default:
	}
	noErrors(t, f)
}

func card(gateID string) *chat.Card {
	return &chat.Card{
		GateID: gateID,
		Text:   "*post_note* wants to run:\n`{\"text\":\"The report is ready.\"}`",
		Buttons: []chat.Button{
			{Label: "Approve", Data: chat.ButtonData(gateID, chat.ChoiceApprove), Style: "primary"},
			{Label: "Deny", Data: chat.ButtonData(gateID, chat.ChoiceDeny), Style: "danger"},
		},
	}
}

func TestCardButtonsRoundTripAndEditRemovesThem(t *testing.T) {
	rec := newRecorder()
	a, f := socketPair(t, rec)
	ctx := context.Background()
	addr := gh.Address{Platform: gh.PlatformSlack, ChatID: f.ChatID("room")}

	c := card("g-123")
	id, err := a.Send(ctx, chat.Outgoing{Address: addr, Text: c.Text, Card: c})
	if err != nil {
		t.Fatal(err)
	}
	msgs := f.Messages("room")
	if len(msgs) != 1 || msgs[0].ID != id || len(msgs[0].Buttons) != 2 {
		t.Fatalf("card: %+v", msgs)
	}
	choices := map[string]bool{}
	for _, data := range msgs[0].Buttons {
		gate, choice, ok := chat.ParseButtonData(data)
		if !ok || gate != "g-123" {
			t.Fatalf("button data %q does not round-trip", data)
		}
		choices[choice] = true
	}
	if !choices[chat.ChoiceApprove] || !choices[chat.ChoiceDeny] {
		t.Fatalf("choices: %v", choices)
	}
	post := f.Posts("room")[0]
	if post.Buttons[0].ActionID != "gh_approve" || post.Buttons[0].Style != "primary" ||
		post.Buttons[1].ActionID != "gh_deny" || post.Buttons[1].Style != "danger" || post.Buttons[0].Label != "Approve" {
		t.Fatalf("buttons: %+v", post.Buttons)
	}
	if len(post.Sections) != 1 || post.Sections[0] != c.Text {
		t.Fatalf("the card's text is its section: %+v", post.Sections)
	}

	if err := a.EditCard(ctx, addr, id, chat.Card{GateID: "g-123", Text: "Approved by alice."}); err != nil {
		t.Fatal(err)
	}
	msgs = f.Messages("room")
	if len(msgs[0].Buttons) != 0 || msgs[0].Text != "Approved by alice." || !msgs[0].Edited {
		t.Fatalf("an edited card has its outcome and no buttons: %+v", msgs[0])
	}
	if p := f.Posts("room")[0]; len(p.Sections) != 1 || p.Sections[0] != "Approved by alice." {
		t.Fatalf("the card's section shows the outcome: %+v", p)
	}

	// A card of a message that is not there.
	err = a.EditCard(ctx, addr, "1.999999", chat.Card{Text: "x"})
	if se, ok := chat.AsSendError(err); !ok || !se.Permanent || se.Status != 404 {
		t.Fatalf("editing a missing message: %v", err)
	}
	if errs := f.Errors(); len(errs) != 1 || !strings.Contains(errs[0], "message_not_found") {
		t.Fatalf("the fake refused it as Slack does: %q", errs)
	}
}

func TestLongCardAndManyOptionsStayValidBlockKit(t *testing.T) {
	rec := newRecorder()
	a, f := socketPair(t, rec)
	long := strings.Repeat("word & ", 600) // 4200 characters before escaping
	text := slackchat.Format(long)
	c := &chat.Card{GateID: "g-9", Text: text}
	for i := range 30 {
		c.Buttons = append(c.Buttons, chat.Button{
			Label: strings.Repeat("very long option label ", 5), // over 75
			Data:  chat.ButtonData("g-9", fmt.Sprintf("%s%d", chat.ChoiceOption, i)),
		})
	}
	if _, err := a.Send(context.Background(), chat.Outgoing{Address: gh.Address{ChatID: f.ChatID("room")}, Text: text, Card: c}); err != nil {
		t.Fatal(err)
	}
	noErrors(t, f)
	p := f.Posts("room")[0]
	if got := strings.Join(p.Sections, ""); got != text {
		t.Fatalf("the sections together hold the whole text (%d of %d bytes)", len(got), len(text))
	}
	for _, s := range p.Sections {
		if strings.HasPrefix(s, "amp;") {
			t.Fatalf("a section split an escape: %q", s[:10])
		}
	}
	if len(p.Buttons) != 30 || p.Buttons[29].ActionID != "gh_opt_29" {
		t.Fatalf("all 30 options are buttons: %d", len(p.Buttons))
	}
}

func TestPressReachesPressAndThePresserHearsTheAnswer(t *testing.T) {
	rec := newRecorder()
	a, f := socketPair(t, rec)
	ctx := context.Background()
	f.Say("room", "alice", "post it", false)
	in := rec.next(t)
	addr := gh.Address{Platform: gh.PlatformSlack, ChatID: in.ChatID, ThreadID: in.ThreadID}
	c := card("g-1")
	id, err := a.Send(ctx, chat.Outgoing{Address: addr, Text: c.Text, Card: c})
	if err != nil {
		t.Fatal(err)
	}

	// A press that decides nothing: the presser alone is told why.
	rec.setPress(func(p gh.Press) (chat.PressResult, error) {
		return chat.PressResult{Text: "You are not allowed to decide this."}, nil
	})
	reply, err := f.Press("room", id, c.Buttons[0].Data, "mallory")
	if err != nil || reply != "You are not allowed to decide this." {
		t.Fatalf("stranger's press: %q, %v", reply, err)
	}
	p := rec.nextPress(t)
	want := gh.Press{Platform: gh.PlatformSlack, UpdateID: p.UpdateID, GateID: "g-1", Choice: chat.ChoiceApprove,
		UserID: f.UserID("mallory"), UserName: "mallory", ChatID: in.ChatID, ThreadID: in.ThreadID, MessageID: id}
	if p != want || p.UpdateID == "" {
		t.Fatalf("press\n got %+v\nwant %+v", p, want)
	}
	if got := f.Ephemerals("room", "mallory"); len(got) != 1 {
		t.Fatalf("ephemerals to mallory: %q", got)
	}
	if len(f.Messages("room")[0].Buttons) != 2 {
		t.Fatal("a press that decided nothing left the card alone")
	}

	// The deciding press rewrites the card for everyone.
	rec.setPress(func(p gh.Press) (chat.PressResult, error) {
		return chat.PressResult{Won: true, Text: "Approved.", Card: chat.Card{GateID: "g-1", Text: "Approved by alice."}}, nil
	})
	reply, err = f.Press("room", id, c.Buttons[0].Data, "alice")
	if err != nil || reply != "Approved by alice." {
		t.Fatalf("deciding press: %q, %v", reply, err)
	}
	if m := f.Messages("room")[0]; len(m.Buttons) != 0 || m.Text != "Approved by alice." {
		t.Fatalf("the decided card: %+v", m)
	}
	noErrors(t, f)

	// A press the gateway could not record is not silently swallowed.
	id2, err := a.Send(ctx, chat.Outgoing{Address: addr, Text: "again", Card: card("g-2")})
	if err != nil {
		t.Fatal(err)
	}
	rec.setPress(func(p gh.Press) (chat.PressResult, error) { return chat.PressResult{}, errors.New("db down") })
	reply, err = f.Press("room", id2, chat.ButtonData("g-2", chat.ChoiceDeny), "alice")
	if err != nil || !strings.Contains(reply, "could not be recorded") {
		t.Fatalf("failed press: %q, %v", reply, err)
	}
	noErrors(t, f)
}

func TestPressOfAButtonThatIsNotOursIsIgnored(t *testing.T) {
	rec := newRecorder()
	a, f := socketPair(t, rec, slacktest.SlackAckTimeout(time.Second))
	id, err := a.Send(context.Background(), chat.Outgoing{
		Address: gh.Address{ChatID: f.ChatID("room")}, Text: "foreign",
		Card: &chat.Card{Text: "foreign", Buttons: []chat.Button{{Label: "Go", Data: "other-app:go"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Press("room", id, "other-app:go", "alice"); err == nil {
		t.Fatal("a press of a foreign button got an answer")
	}
	select {
	case p := <-rec.presses:
		t.Fatalf("a foreign button reached Press: %+v", p)
	default:
	}
	// Acknowledged all the same, so Slack shows no error: the only
	// complaint is that nobody answered.
	for _, e := range f.Errors() {
		if !strings.Contains(e, "no answer") {
			t.Fatalf("unexpected refusal: %s", e)
		}
	}
}

func TestSendErrors(t *testing.T) {
	rec := newRecorder()
	a, f := socketPair(t, rec)
	ctx := context.Background()

	_, err := a.Send(ctx, chat.Outgoing{Address: gh.Address{ChatID: "C404"}, Text: "hello?"})
	se, ok := chat.AsSendError(err)
	if !ok || se.Status != 404 || !se.Permanent {
		t.Fatalf("unknown channel: %v", err)
	}

	cfg := f.SocketConfig()
	cfg.BotToken = "xoxb-wrong"
	bad, err := slackchat.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = bad.Send(ctx, chat.Outgoing{Address: gh.Address{ChatID: f.ChatID("room")}, Text: "hi"})
	if se, ok := chat.AsSendError(err); !ok || se.Status != 401 || !se.Permanent {
		t.Fatalf("wrong token: %v", err)
	}
	errs := f.Errors()
	if len(errs) != 2 || !strings.Contains(errs[0], "channel_not_found") || !strings.Contains(errs[1], "invalid_auth") {
		t.Fatalf("fake refusals: %q", errs)
	}
}

func TestRateLimitBecomesSendErrorWithRetryAfter(t *testing.T) {
	rec := newRecorder()
	a, f := socketPair(t, rec, slacktest.SlackRateLimit(time.Second))
	ctx := context.Background()
	out := chat.Outgoing{Address: gh.Address{ChatID: f.ChatID("room")}, Text: "one"}
	if _, err := a.Send(ctx, out); err != nil {
		t.Fatal(err)
	}
	out.Text = "two"
	_, err := a.Send(ctx, out)
	se, ok := chat.AsSendError(err)
	if !ok || se.Status != 429 || se.RetryAfter != time.Second || se.Permanent {
		t.Fatalf("second message within a second: %v", err)
	}
	if len(f.Throttled()) != 1 || len(f.Messages("room")) != 1 {
		t.Fatalf("slack-go must not retry on its own: throttled %q, messages %d", f.Throttled(), len(f.Messages("room")))
	}
	// Another channel has its own pace.
	if _, err := a.Send(ctx, chat.Outgoing{Address: gh.Address{ChatID: f.ChatID("other")}, Text: "elsewhere"}); err != nil {
		t.Fatal(err)
	}
	noErrors(t, f)
}

func TestSocketReconnectsWhenSlackAsks(t *testing.T) {
	rec := newRecorder()
	_, f := socketPair(t, rec)
	adaptertest.Eventually(t, "a connection", func() bool { return f.Connections() == 1 })
	f.Disconnect()
	upd := f.Say("room", "alice", "still there?", false)
	if in := rec.next(t); in.UpdateID != upd {
		t.Fatalf("after a refresh: %+v", in)
	}
	adaptertest.Eventually(t, "ack after reconnect", func() bool { return f.Acked(upd) })
	noErrors(t, f)
}

func TestConnectRefusesWrongAppToken(t *testing.T) {
	f := slacktest.NewSlack(t)
	cfg := f.SocketConfig()
	cfg.AppToken = "xapp-wrong"
	a, err := slackchat.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.Connect(ctx, newRecorder()); err == nil || ctx.Err() != nil {
		t.Fatalf("Connect with a refused app token: %v (ctx %v)", err, ctx.Err())
	}
	if errs := f.Errors(); len(errs) == 0 || !strings.Contains(errs[0], "invalid_auth") {
		t.Fatalf("refusals: %q", errs)
	}
}

func TestNewChecksConfig(t *testing.T) {
	if _, err := slackchat.New(slackchat.Config{AppToken: "xapp-1"}); err == nil {
		t.Fatal("no bot token")
	}
	if _, err := slackchat.New(slackchat.Config{BotToken: "xoxb-1"}); err == nil {
		t.Fatal("neither Socket Mode nor Events API")
	}
	a, err := slackchat.New(slackchat.Config{BotToken: "xoxb-1", AppToken: "xapp-1", SigningSecret: "s"})
	if err != nil || a.Handler(newRecorder()) != nil {
		t.Fatalf("Socket Mode wins and has no handler: %v", err)
	}
	if l := a.Limits(); l.MaxText != 4000 || l.PerChat != time.Second {
		t.Fatalf("limits: %+v", l)
	}
}

func TestFormatEscapesMarkup(t *testing.T) {
	for in, want := range map[string]string{
		"<!channel> look":            "&lt;!channel&gt; look",
		"<@U123> and <http://x|y>":   "&lt;@U123&gt; and &lt;http://x|y&gt;",
		"fish & chips &amp; more":    "fish &amp; chips &amp;amp; more",
		"this is **bold** and *not*": "this is *bold* and *not*",
		"a ** b":                     "a ** b",
	} {
		if got := slackchat.Format(in); got != want {
			t.Errorf("Format(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestSharedSuite runs the whole gateway against the fake Slack, in both
// modes.
func TestSharedSuite(t *testing.T) {
	t.Run("socket", func(t *testing.T) { adaptertest.Run(t, stacktest.Stack, slacktest.SlackFactory) })
	t.Run("events", func(t *testing.T) { adaptertest.Run(t, stacktest.Stack, slacktest.SlackEventsFactory) })
}

func TestConnectLeavesNoGoroutinesBehind(t *testing.T) {
	before := runtime.NumGoroutine()
	func() {
		f := slacktest.NewSlack(t)
		defer f.Close()
		cfg := f.SocketConfig()
		client := &http.Client{Transport: &http.Transport{}}
		defer client.CloseIdleConnections()
		cfg.HTTPClient = client
		a, err := slackchat.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		rec := newRecorder()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- a.Connect(ctx, rec) }()
		f.Say("room", "alice", "hi", false)
		rec.next(t)
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}()
	http.DefaultClient.CloseIdleConnections()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines before, %d after:\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(20 * time.Millisecond)
	}
}
