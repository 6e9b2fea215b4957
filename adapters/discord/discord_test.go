package discord_test

import (
	"context"
	"errors"
	"log/slog"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/adapters/adaptertest"
	"github.com/gatehouse/gatehouse/adapters/discord"
	"github.com/gatehouse/gatehouse/adapters/discord/discordtest"
	"github.com/gatehouse/gatehouse/gateway/chat"
	"github.com/gatehouse/gatehouse/internal/testing/stacktest"
)

// recSink records what the adapter hands on. receive, press and
// command, when set, decide the answers.
type recSink struct {
	adaptertest.HealthLog
	mu       sync.Mutex
	inbound  []gh.Inbound
	presses  []gh.Press
	commands []sinkCommand
	receive  func(n int, in gh.Inbound) error // n counts calls with this UpdateID, from 1
	press    func(ctx context.Context, p gh.Press) (chat.PressResult, error)
	command  func(ctx context.Context, name string, in gh.Inbound) (chat.CommandReply, error)
	attempts map[string]int
}

// sinkCommand is one Command call.
type sinkCommand struct {
	name string
	in   gh.Inbound
}

func (s *recSink) Receive(ctx context.Context, in gh.Inbound) (chat.ReceiveResult, error) {
	s.mu.Lock()
	if s.attempts == nil {
		s.attempts = map[string]int{}
	}
	s.attempts[in.UpdateID]++
	n := s.attempts[in.UpdateID]
	s.inbound = append(s.inbound, in)
	fn := s.receive
	s.mu.Unlock()
	if fn != nil {
		if err := fn(n, in); err != nil {
			return chat.ReceiveResult{}, err
		}
	}
	return chat.ReceiveResult{Outcome: chat.ReceiveHandedOn}, nil
}

func (s *recSink) Press(ctx context.Context, p gh.Press) (chat.PressResult, error) {
	s.mu.Lock()
	s.presses = append(s.presses, p)
	fn := s.press
	s.mu.Unlock()
	if fn == nil {
		return chat.PressResult{Text: "Noted by the test."}, nil
	}
	return fn(ctx, p)
}

func (s *recSink) Command(ctx context.Context, name string, in gh.Inbound) (chat.CommandReply, error) {
	s.mu.Lock()
	s.commands = append(s.commands, sinkCommand{name, in})
	fn := s.command
	s.mu.Unlock()
	if fn == nil {
		return chat.CommandReply{Text: "/" + name + " noted by the test."}, nil
	}
	return fn(ctx, name, in)
}

func (s *recSink) commanded() []sinkCommand {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.commands)
}

// calls returns the Receive calls for one update id.
func (s *recSink) calls(updateID string) []gh.Inbound {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []gh.Inbound
	for _, in := range s.inbound {
		if in.UpdateID == updateID {
			out = append(out, in)
		}
	}
	return out
}

func (s *recSink) pressed() []gh.Press {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.presses)
}

type env struct {
	a    *discord.Adapter
	f    *discordtest.DiscordFake
	sink *recSink
}

// start makes a fake and an adapter, runs Connect until the test ends
// (checking it returns nil) and waits for the gateway to be READY.
func start(t *testing.T, cfg discord.Config, opts ...discordtest.DiscordOption) *env {
	t.Helper()
	f := discordtest.NewDiscord(t, opts...)
	cfg.APIURL = f.URL()
	if cfg.Token == "" {
		cfg.Token = f.Token()
	}
	cfg.Logger = slog.New(slog.NewTextHandler(discordtest.NewDiscordLogWriter(t), nil))
	a, err := discord.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{a: a, f: f, sink: &recSink{}}
	adaptertest.Connect(t, a, e.sink, 15*time.Second)
	adaptertest.Eventually(t, "the gateway session", f.Connected)
	return e
}

func noErrors(t *testing.T, f *discordtest.DiscordFake) {
	t.Helper()
	if errs := f.Errors(); len(errs) > 0 {
		t.Errorf("the fake refused requests Discord would refuse:\n%s", strings.Join(errs, "\n"))
	}
}

func addr(f *discordtest.DiscordFake, chat string) gh.Address {
	return gh.Address{Platform: gh.PlatformDiscord, ChatID: f.ChannelID(chat)}
}

func TestMessageReachesReceive(t *testing.T) {
	t.Parallel()
	e := start(t, discord.Config{})
	before := time.Now()
	id := e.f.Say("room", "alice", "hello **there**", false)
	dm := e.f.Say("dm-bob", "bob", "psst", false)
	adaptertest.Eventually(t, "both messages", func() bool { return len(e.sink.calls(id)) == 1 && len(e.sink.calls(dm)) == 1 })

	in := e.sink.calls(id)[0]
	want := gh.Inbound{
		Platform: gh.PlatformDiscord, UpdateID: id, ChatID: e.f.ChannelID("room"), ChatType: gh.ChatGroup,
		UserID: e.f.UserID("alice"), UserName: "alice", MessageID: id, Text: "hello **there**",
	}
	got := in
	got.ReceivedAt = time.Time{}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("inbound = %+v\nwant      %+v", got, want)
	}
	if in.ReceivedAt.Before(before) {
		t.Errorf("ReceivedAt %v is before the message was said", in.ReceivedAt)
	}
	if d := e.sink.calls(dm)[0]; d.ChatType != gh.ChatDM || d.ChatID != e.f.ChannelID("dm-bob") || d.Text != "psst" {
		t.Errorf("DM inbound = %+v, want chat type dm in the DM channel", d)
	}
	// The gateway's only acknowledgement: a heartbeat covering the event.
	adaptertest.Eventually(t, "the heartbeat to cover the message", func() bool { return e.f.Acked(id) })
	noErrors(t, e.f)
}

func TestMessagesKeepTheirOrder(t *testing.T) {
	t.Parallel()
	e := start(t, discord.Config{})
	var ids []string
	for _, text := range []string{"one", "two", "three", "four", "five"} {
		ids = append(ids, e.f.Say("room", "alice", text, false))
	}
	adaptertest.Eventually(t, "all messages", func() bool { return len(e.sink.calls(ids[4])) == 1 })
	e.sink.mu.Lock()
	var order []string
	for _, in := range e.sink.inbound {
		order = append(order, in.Text)
	}
	e.sink.mu.Unlock()
	if want := []string{"one", "two", "three", "four", "five"}; !slices.Equal(order, want) {
		t.Errorf("Receive saw %q, want %q", order, want)
	}
}

// Discord never redelivers an event the client read, so the adapter
// hands a message on again itself until Receive takes it.
func TestReceiveErrorIsRetried(t *testing.T) {
	t.Parallel()
	e := start(t, discord.Config{ReceiveAttempts: 3, ReceiveBackoff: 10 * time.Millisecond})
	e.sink.receive = func(n int, in gh.Inbound) error {
		if in.Text == "flaky" && n < 3 {
			return errors.New("database is busy")
		}
		if in.Text == "doomed" {
			return errors.New("database is down")
		}
		return nil
	}
	flaky := e.f.Say("room", "alice", "flaky", false)
	adaptertest.Eventually(t, "the third attempt", func() bool { return len(e.sink.calls(flaky)) == 3 })

	doomed := e.f.Say("room", "alice", "doomed", false)
	after := e.f.Say("room", "alice", "after", false)
	adaptertest.Eventually(t, "the message after the lost one", func() bool { return len(e.sink.calls(after)) == 1 })
	if n := len(e.sink.calls(doomed)); n != 3 {
		t.Errorf("a message whose Receive always fails was handed on %d times, want ReceiveAttempts = 3", n)
	}
	for _, in := range e.sink.calls(flaky) {
		if in.UpdateID != flaky || in.Text != "flaky" {
			t.Errorf("retry carried %+v, want the same update", in)
		}
	}
	if n := len(e.sink.calls(flaky)); n != 3 {
		t.Errorf("flaky message handed on %d times, want 3 (two failures, one success)", n)
	}
}

func TestRedeliveryRepeatsTheUpdateID(t *testing.T) {
	t.Parallel()
	e := start(t, discord.Config{})
	id := e.f.Say("room", "alice", "again", false)
	adaptertest.Eventually(t, "the message", func() bool { return len(e.sink.calls(id)) == 1 })
	e.f.Redeliver(id)
	adaptertest.Eventually(t, "the redelivery", func() bool { return len(e.sink.calls(id)) == 2 })
	if a, b := e.sink.calls(id)[0], e.sink.calls(id)[1]; a.UpdateID != b.UpdateID || a.Text != b.Text {
		t.Errorf("redelivery %+v differs from the first delivery %+v", b, a)
	}
}

func TestBotMessagesAreMarked(t *testing.T) {
	t.Parallel()
	e := start(t, discord.Config{})
	other := e.f.Say("room", "otherbot", "beep", true)
	// Discord echoes the bot's own messages back over the gateway.
	own, err := e.a.Send(context.Background(), chat.Outgoing{Address: addr(e.f, "room"), Text: "my answer"})
	if err != nil {
		t.Fatal(err)
	}
	adaptertest.Eventually(t, "both bot messages", func() bool { return len(e.sink.calls(other)) == 1 && len(e.sink.calls(own)) == 1 })
	if in := e.sink.calls(other)[0]; !in.IsBot {
		t.Errorf("another bot's message came through with IsBot=false: %+v", in)
	}
	if in := e.sink.calls(own)[0]; !in.IsBot || in.UserID != e.f.BotID() {
		t.Errorf("our own message came through as %+v, want IsBot from the bot user %s", in, e.f.BotID())
	}
	noErrors(t, e.f)
}

func TestMessageWithoutTextIsUnsupported(t *testing.T) {
	t.Parallel()
	e := start(t, discord.Config{})
	id := e.f.SayUnsupported("room", "alice")
	adaptertest.Eventually(t, "the image", func() bool { return len(e.sink.calls(id)) == 1 })
	if in := e.sink.calls(id)[0]; in.Unsupported != "attachment" || in.Text != "" {
		t.Errorf("image-only message = %+v, want Unsupported attachment and no text", in)
	}
}

func TestSendPostsTheTextAsAReply(t *testing.T) {
	t.Parallel()
	e := start(t, discord.Config{})
	input := e.f.Say("room", "alice", "question", false)
	a := addr(e.f, "room")
	a.ReplyTo = input
	id, err := e.a.Send(context.Background(), chat.Outgoing{Address: a, Text: e.a.Format("the **answer**")})
	if err != nil {
		t.Fatal(err)
	}
	m, ok := e.f.Message("room", id)
	if !ok {
		t.Fatalf("Send returned %q, which is not a message in the room", id)
	}
	if m.Text != "the **answer**" || m.ReplyTo != input || m.Type != 19 {
		t.Errorf("sent message = %+v, want the text as a reply to %s", m, input)
	}
	if m.AllowedMentions == nil || len(m.AllowedMentions) != 0 {
		t.Errorf("allowed_mentions.parse = %v, want [] so nothing can ping", m.AllowedMentions)
	}
	msgs := e.f.Messages("room")
	if len(msgs) != 1 || msgs[0].ID != id {
		t.Errorf("the room holds %+v, want just the answer", msgs)
	}

	// A reply to a message deleted since still goes out.
	a.ReplyTo = "1234567890123"
	if _, err := e.a.Send(context.Background(), chat.Outgoing{Address: a, Text: "still here"}); err != nil {
		t.Errorf("reply to a missing message: %v", err)
	}
	noErrors(t, e.f)
}

func TestSendRefusalsAreSendErrors(t *testing.T) {
	t.Parallel()
	e := start(t, discord.Config{})
	ctx := context.Background()

	_, err := e.a.Send(ctx, chat.Outgoing{Address: gh.Address{ChatID: "99999999999"}, Text: "hi"})
	se, ok := chat.AsSendError(err)
	if !ok || se.Status != 404 || !se.Permanent {
		t.Errorf("send to an unknown channel: %v, want a permanent 404 SendError", err)
	}

	_, err = e.a.Send(ctx, chat.Outgoing{Address: addr(e.f, "room"), Text: strings.Repeat("x", 2001)})
	if se, ok := chat.AsSendError(err); !ok || !se.Permanent {
		t.Errorf("send over 2000 characters: %v, want a permanent SendError", err)
	}
	if n := len(e.f.Errors()); n != 1 {
		t.Errorf("the fake saw %d refused requests (%q), want only the unknown channel: an overlong text is refused before sending", n, e.f.Errors())
	}
}

func TestWrongTokenIsRefused(t *testing.T) {
	t.Parallel()
	f := discordtest.NewDiscord(t)
	a, err := discord.New(discord.Config{
		Token: "not-the-token", APIURL: f.URL(),
		Logger: slog.New(slog.NewTextHandler(discordtest.NewDiscordLogWriter(t), nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = a.Send(context.Background(), chat.Outgoing{Address: addr(f, "room"), Text: "hi"})
	if se, ok := chat.AsSendError(err); !ok || se.Status != 401 || !se.Permanent {
		t.Errorf("send with a wrong token: %v, want a permanent 401 SendError", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := a.Connect(ctx, &recSink{}); err == nil || ctx.Err() != nil {
		t.Errorf("Connect with a wrong token = %v, want an error at once, not a reconnect loop", err)
	}
}

func card(gateID string, labels ...string) *chat.Card {
	c := &chat.Card{GateID: gateID, Text: "Send the email to bob@example.com?"}
	for _, l := range labels {
		switch l {
		case "Approve":
			c.Buttons = append(c.Buttons, chat.Button{Label: l, Data: chat.ButtonData(gateID, chat.ChoiceApprove), Style: "primary"})
		case "Deny":
			c.Buttons = append(c.Buttons, chat.Button{Label: l, Data: chat.ButtonData(gateID, chat.ChoiceDeny), Style: "danger"})
		default:
			n := len(c.Buttons)
			c.Buttons = append(c.Buttons, chat.Button{Label: l, Data: chat.ButtonData(gateID, chat.ChoiceOption+string(rune('0'+n)))})
		}
	}
	return c
}

func TestCardButtonsRoundTrip(t *testing.T) {
	t.Parallel()
	e := start(t, discord.Config{})
	c := card("gate-42", "Approve", "Deny", "Maybe")
	id, err := e.a.Send(context.Background(), chat.Outgoing{Address: addr(e.f, "room"), Card: c})
	if err != nil {
		t.Fatal(err)
	}
	m, _ := e.f.Message("room", id)
	if m.Text != c.Text {
		t.Errorf("card text = %q, want %q", m.Text, c.Text)
	}
	wantChoices := []string{chat.ChoiceApprove, chat.ChoiceDeny, "option:2"}
	if len(m.Buttons) != len(wantChoices) {
		t.Fatalf("card has buttons %q, want %d", m.Buttons, len(wantChoices))
	}
	for i, data := range m.Buttons {
		gate, choice, ok := chat.ParseButtonData(data)
		if !ok || gate != "gate-42" || choice != wantChoices[i] {
			t.Errorf("button %d data %q parses to (%q, %q, %v), want gate-42 %s", i, data, gate, choice, ok, wantChoices[i])
		}
	}
	if want := []int{3, 4, 2}; !slices.Equal(m.Styles, want) {
		t.Errorf("button styles = %v, want green approve, red deny, grey option %v", m.Styles, want)
	}
	if !slices.Equal(m.Labels, []string{"Approve", "Deny", "Maybe"}) {
		t.Errorf("labels = %q", m.Labels)
	}

	// A clarify gate with more options than a row holds gets more rows.
	big := card("gate-43", "A", "B", "C", "D", "E", "F", "G")
	id, err = e.a.Send(context.Background(), chat.Outgoing{Address: addr(e.f, "room"), Card: big})
	if err != nil {
		t.Fatal(err)
	}
	if m, _ := e.f.Message("room", id); m.Rows != 2 || len(m.Buttons) != 7 {
		t.Errorf("7 options came out as %d rows of %d buttons, want 2 rows", m.Rows, len(m.Buttons))
	}
	noErrors(t, e.f)
}

func TestEditCardRemovesButtons(t *testing.T) {
	t.Parallel()
	e := start(t, discord.Config{})
	a := addr(e.f, "room")
	id, err := e.a.Send(context.Background(), chat.Outgoing{Address: a, Card: card("g1", "Approve", "Deny")})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.a.EditCard(context.Background(), a, id, chat.Card{GateID: "g1", Text: "✅ Approved by alice"}); err != nil {
		t.Fatal(err)
	}
	m, _ := e.f.Message("room", id)
	if m.Text != "✅ Approved by alice" || len(m.Buttons) != 0 || !m.Edited {
		t.Errorf("edited card = %+v, want the outcome and no buttons", m)
	}
	noErrors(t, e.f)

	err = e.a.EditCard(context.Background(), a, "1234567890", chat.Card{Text: "x"})
	if se, ok := chat.AsSendError(err); !ok || se.Status != 404 || !se.Permanent {
		t.Errorf("editing a message that does not exist: %v, want a permanent 404", err)
	}
}

func TestPressReachesPressAndTheUserSeesTheText(t *testing.T) {
	t.Parallel()
	e := start(t, discord.Config{})
	a := addr(e.f, "room")
	id, err := e.a.Send(context.Background(), chat.Outgoing{Address: a, Card: card("g7", "Approve", "Deny")})
	if err != nil {
		t.Fatal(err)
	}
	e.sink.press = func(_ context.Context, p gh.Press) (chat.PressResult, error) {
		return chat.PressResult{Text: "Already approved by discord:carol."}, nil
	}
	reply, err := e.f.Press("room", id, chat.ButtonData("g7", chat.ChoiceDeny), "alice")
	if err != nil {
		t.Fatal(err)
	}
	if reply != "Already approved by discord:carol." {
		t.Errorf("presser saw %q, want the press result's text", reply)
	}
	ps := e.sink.pressed()
	if len(ps) != 1 {
		t.Fatalf("Press called %d times, want 1", len(ps))
	}
	p := ps[0]
	if p.Platform != gh.PlatformDiscord || p.GateID != "g7" || p.Choice != chat.ChoiceDeny ||
		p.UserID != e.f.UserID("alice") || p.UserName != "alice" || p.ChatID != a.ChatID || p.MessageID != id || p.UpdateID == "" || p.IsBot {
		t.Errorf("press = %+v", p)
	}
	ix := e.f.Interactions()[0]
	if ix.Type != 4 || ix.Flags&64 == 0 {
		t.Errorf("a press that did not decide was answered with type %d flags %d, want an ephemeral message (4, 64)", ix.Type, ix.Flags)
	}
	if m, _ := e.f.Message("room", id); len(m.Buttons) != 2 {
		t.Errorf("a press that did not decide changed the card: %+v", m)
	}
	noErrors(t, e.f)
}

func TestWinningPressUpdatesTheCard(t *testing.T) {
	t.Parallel()
	e := start(t, discord.Config{})
	id, err := e.a.Send(context.Background(), chat.Outgoing{Address: addr(e.f, "room"), Card: card("g8", "Approve", "Deny")})
	if err != nil {
		t.Fatal(err)
	}
	e.sink.press = func(_ context.Context, p gh.Press) (chat.PressResult, error) {
		return chat.PressResult{Won: true, Text: "Approved.", Card: chat.Card{GateID: p.GateID, Text: "✅ Approved by alice"}}, nil
	}
	reply, err := e.f.Press("room", id, chat.ButtonData("g8", chat.ChoiceApprove), "alice")
	if err != nil {
		t.Fatal(err)
	}
	if reply != "✅ Approved by alice" {
		t.Errorf("presser saw %q, want the decided card", reply)
	}
	m, _ := e.f.Message("room", id)
	if m.Text != "✅ Approved by alice" || len(m.Buttons) != 0 {
		t.Errorf("card after the winning press = %+v, want the outcome without buttons", m)
	}
	if ix := e.f.Interactions()[0]; ix.Type != 7 {
		t.Errorf("winning press answered with type %d, want 7 (update message)", ix.Type)
	}
	noErrors(t, e.f)
}

func TestPressOfAButtonThatIsNotOurs(t *testing.T) {
	t.Parallel()
	e := start(t, discord.Config{})
	c := &chat.Card{Text: "old card", Buttons: []chat.Button{{Label: "Old", Data: "legacy:1"}}}
	id, err := e.a.Send(context.Background(), chat.Outgoing{Address: addr(e.f, "room"), Card: c})
	if err != nil {
		t.Fatal(err)
	}
	reply, err := e.f.Press("room", id, "legacy:1", "alice")
	if err != nil {
		t.Fatal(err)
	}
	if reply != "This button is not from Gatehouse." {
		t.Errorf("presser saw %q", reply)
	}
	if n := len(e.sink.pressed()); n != 0 {
		t.Errorf("a foreign button reached sink.Press %d times", n)
	}
	noErrors(t, e.f)
}

func TestPressIsAnsweredEvenWhenPressFailsOrHangs(t *testing.T) {
	t.Parallel()
	e := start(t, discord.Config{PressTimeout: 200 * time.Millisecond})
	id, err := e.a.Send(context.Background(), chat.Outgoing{Address: addr(e.f, "room"), Card: card("g9", "Approve", "Deny")})
	if err != nil {
		t.Fatal(err)
	}
	e.sink.press = func(ctx context.Context, p gh.Press) (chat.PressResult, error) {
		if p.Choice == chat.ChoiceDeny {
			return chat.PressResult{}, errors.New("store unavailable")
		}
		<-ctx.Done() // a store that hangs
		return chat.PressResult{}, ctx.Err()
	}
	for _, choice := range []string{chat.ChoiceDeny, chat.ChoiceApprove} {
		reply, err := e.f.Press("room", id, chat.ButtonData("g9", choice), "alice")
		if err != nil {
			t.Fatalf("%s: %v (the interaction must be answered within Discord's 3 s)", choice, err)
		}
		if !strings.Contains(reply, "could not record") {
			t.Errorf("%s: presser saw %q, want an error they can act on", choice, reply)
		}
	}
	for _, ix := range e.f.Interactions() {
		if ix.Flags&64 == 0 {
			t.Errorf("error answer was not ephemeral: %+v", ix)
		}
	}
	noErrors(t, e.f)
}

func TestRateLimitIsASendErrorWithRetryAfter(t *testing.T) {
	t.Parallel()
	e := start(t, discord.Config{})
	a := addr(e.f, "room")
	e.f.RateLimitNext(1500 * time.Millisecond)
	_, err := e.a.Send(context.Background(), chat.Outgoing{Address: a, Text: "one"})
	se, ok := chat.AsSendError(err)
	if !ok || se.Status != 429 || se.RetryAfter != 1500*time.Millisecond || se.Permanent {
		t.Fatalf("rate-limited send: %v, want a 429 SendError with RetryAfter 1.5s", err)
	}
	// The bucket is known empty now: the next send waits for its reset
	// without spending a request Discord would refuse.
	_, err = e.a.Send(context.Background(), chat.Outgoing{Address: a, Text: "two"})
	se, ok = chat.AsSendError(err)
	if !ok || se.Status != 429 || se.RetryAfter <= 0 || se.RetryAfter > 1500*time.Millisecond {
		t.Errorf("send into an empty bucket: %v, want a 429 SendError with RetryAfter up to 1.5s", err)
	}
	if n := e.f.RateLimited(); n != 1 {
		t.Errorf("Discord answered %d requests with 429, want 1", n)
	}
	if len(e.f.Messages("room")) != 0 {
		t.Errorf("rate-limited sends were delivered: %+v", e.f.Messages("room"))
	}
}

func TestBucketHeadersAreHonoured(t *testing.T) {
	t.Parallel()
	e := start(t, discord.Config{}, discordtest.DiscordRateLimits(2, 2*time.Second, 0))
	a := addr(e.f, "room")
	var limited *chat.SendError
	for i := range 3 {
		_, err := e.a.Send(context.Background(), chat.Outgoing{Address: a, Text: "n"})
		if se, ok := chat.AsSendError(err); ok && se.Status == 429 {
			limited = se
			break
		} else if err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
	}
	if limited == nil || limited.RetryAfter <= 0 || limited.RetryAfter > 2*time.Second {
		t.Errorf("third send in a bucket of 2: %v, want a 429 SendError waiting for the reset", limited)
	}
	if len(e.f.Messages("room")) != 2 {
		t.Errorf("%d messages delivered, want the bucket's 2", len(e.f.Messages("room")))
	}
	// Another channel has its own bucket.
	if _, err := e.a.Send(context.Background(), chat.Outgoing{Address: addr(e.f, "other"), Text: "n"}); err != nil {
		t.Errorf("send to another channel: %v", err)
	}
}

func TestFormatNeutralisesMassMentions(t *testing.T) {
	t.Parallel()
	e := start(t, discord.Config{})
	got := e.a.Format("@everyone and @here: see **this** and `code`")
	if want := "@\u200beveryone and @\u200bhere: see **this** and `code`"; got != want {
		t.Errorf("Format = %q, want %q (Markdown kept, mass mentions broken)", got, want)
	}
	for _, text := range []string{got, "@everyone unformatted"} {
		id, err := e.a.Send(context.Background(), chat.Outgoing{Address: addr(e.f, "room"), Text: text})
		if err != nil {
			t.Fatal(err)
		}
		if m, _ := e.f.Message("room", id); m.PingedEveryone {
			t.Errorf("sending %q pinged everyone", text)
		}
	}
}

func TestDroppedGatewayResumes(t *testing.T) {
	t.Parallel()
	e := start(t, discord.Config{})
	first := e.f.Say("room", "alice", "before", false)
	adaptertest.Eventually(t, "the first message", func() bool { return len(e.sink.calls(first)) == 1 })
	e.f.DropConnection()
	during := e.f.Say("room", "alice", "while dropped", false)
	adaptertest.Eventually(t, "the message said while the socket was down", func() bool { return len(e.sink.calls(during)) == 1 })
	if n := len(e.sink.calls(first)); n != 1 {
		t.Errorf("resume replayed a message already read (%d deliveries)", n)
	}
	noErrors(t, e.f)
}

func TestConfig(t *testing.T) {
	t.Parallel()
	if _, err := discord.New(discord.Config{}); err == nil {
		t.Error("New without a token succeeded")
	}
	if _, err := discord.New(discord.Config{Token: "t", APIURL: "ftp://x"}); err == nil {
		t.Error("New with a non-http API URL succeeded")
	}
	a, err := discord.New(discord.Config{Token: "Bot t"})
	if err != nil {
		t.Fatal(err)
	}
	if l := a.Limits(); l.MaxText != 2000 || l.PerSecond != 50 {
		t.Errorf("limits = %+v", l)
	}
	if a.Handler(&recSink{}) != nil {
		t.Error("Handler is not nil: the adapter has no webhook")
	}
	if a.Platform() != gh.PlatformDiscord {
		t.Errorf("platform = %q", a.Platform())
	}
}

// TestConnectLeavesNothingRunning is not parallel: it looks at every
// goroutine of the process.
func TestConnectLeavesNothingRunning(t *testing.T) {
	f := discordtest.NewDiscord(t)
	a, err := discord.New(discord.Config{
		Token: f.Token(), APIURL: f.URL(),
		Logger: slog.New(slog.NewTextHandler(discordtest.NewDiscordLogWriter(t), nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	sink := &recSink{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Connect(ctx, sink) }()
	adaptertest.Eventually(t, "the gateway session", f.Connected)
	id, err := a.Send(context.Background(), chat.Outgoing{Address: addr(f, "room"), Card: card("gl", "Approve", "Deny")})
	if err != nil {
		t.Fatal(err)
	}
	said := f.Say("room", "alice", "hi", false)
	if _, err := f.Press("room", id, chat.ButtonData("gl", chat.ChoiceApprove), "alice"); err != nil {
		t.Fatal(err)
	}
	adaptertest.Eventually(t, "the message", func() bool { return len(sink.calls(said)) == 1 })

	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Connect = %v", err)
	}
	var stacks string
	adaptertest.Eventually(t, "discordgo and adapter goroutines to end", func() bool {
		buf := make([]byte, 1<<20)
		stacks = string(buf[:runtime.Stack(buf, true)])
		return !strings.Contains(stacks, "bwmarrin/discordgo") && !strings.Contains(stacks, "adapters/discord.(")
	})
}

// TestSuite runs the whole gateway against the fake Discord.
func TestSuite(t *testing.T) { adaptertest.Run(t, stacktest.Stack, discordtest.DiscordFactory) }
