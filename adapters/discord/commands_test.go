package discord_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/adapters/adaptertest"
	"github.com/gatehouse/gatehouse/adapters/discord"
	"github.com/gatehouse/gatehouse/adapters/discord/discordtest"
	"github.com/gatehouse/gatehouse/gateway/chat"
	"github.com/gatehouse/gatehouse/internal/testing/stacktest"
)

// registeredCommands are the slash commands the adapter registers.
var registeredCommands = []string{
	chat.CommandGrants,
	chat.CommandModel,
	chat.CommandThink,
	chat.CommandTimeZone,
}

// waitCommands waits until the fake has the adapter's commands registered.
func waitCommands(t *testing.T, f *discordtest.DiscordFake) {
	t.Helper()
	adaptertest.Eventually(t, "the slash commands to be registered", func() bool {
		return slices.Equal(f.Commands(), registeredCommands)
	})
}

// The adapter registers /grants after READY, and again on the next
// start, overwriting: the same commands, /grants with the id it had.
func TestGrantsIsRegisteredOnReadyAndAgainAfterReconnecting(t *testing.T) {
	t.Parallel()
	f := discordtest.NewDiscord(t)
	a, err := discord.New(discord.Config{
		Token: f.Token(), APIURL: f.URL(),
		Logger: slog.New(slog.NewTextHandler(discordtest.NewDiscordLogWriter(t), nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	sink := &recSink{}
	connect := func() (stop func()) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- a.Connect(ctx, sink) }()
		return func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Connect = %v", err)
				}
			case <-time.After(15 * time.Second):
				t.Fatal("Connect did not return")
			}
		}
	}

	stop := connect()
	waitCommands(t, f)
	id := f.CommandID(chat.CommandGrants)
	if f.CommandPuts() != 1 {
		t.Errorf("%d registrations after one READY, want 1", f.CommandPuts())
	}
	// A dropped socket resumes the session: no READY, nothing to redo.
	said := f.Say("room", "alice", "still there?", false)
	f.DropConnection()
	adaptertest.Eventually(t, "the message after the drop", func() bool { return len(sink.calls(said)) == 1 })
	stop()

	stop = connect()
	adaptertest.Eventually(t, "the second registration", func() bool { return f.CommandPuts() == 2 })
	if got := f.Commands(); !slices.Equal(got, registeredCommands) {
		t.Errorf("commands after reconnecting = %q, want [grants] once", got)
	}
	if f.CommandID(chat.CommandGrants) != id {
		t.Errorf("the overwrite made a new command (%s, was %s)", f.CommandID(chat.CommandGrants), id)
	}
	if _, err := f.Command("room", "alice", chat.CommandGrants); err != nil {
		t.Errorf("/grants after reconnecting: %v", err)
	}
	stop()
	noErrors(t, f)
}

// A registration Discord refuses at first is retried in the background,
// and messages flow meanwhile.
func TestRegistrationFailureIsRetriedWithoutHoldingMessages(t *testing.T) {
	t.Parallel()
	f := discordtest.NewDiscord(t)
	f.FailCommandPuts(2)
	a, err := discord.New(discord.Config{
		Token: f.Token(), APIURL: f.URL(),
		Logger: slog.New(slog.NewTextHandler(discordtest.NewDiscordLogWriter(t), nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	sink := &recSink{}
	adaptertest.Connect(t, a, sink, 15*time.Second)
	said := f.Say("room", "alice", "hi", false)
	adaptertest.Eventually(t, "the message", func() bool { return len(sink.calls(said)) == 1 })
	if len(f.Commands()) != 0 {
		t.Fatal("the commands were registered although Discord failed the first attempts")
	}
	waitCommands(t, f)
	if f.CommandPuts() != 1 {
		t.Errorf("%d accepted registrations, want 1", f.CommandPuts())
	}
	noErrors(t, f)
}

// A Discord client offers only registered commands: the fake refuses to
// send any other, and the adapter hears nothing.
func TestUnregisteredCommandCannotBeSent(t *testing.T) {
	t.Parallel()
	bare := discordtest.NewDiscord(t)
	if _, err := bare.Command("room", "alice", chat.CommandGrants); err == nil {
		t.Error("the fake sent /grants although nothing registered it")
	}

	e := start(t, discord.Config{})
	waitCommands(t, e.f)
	if _, err := e.f.Command("room", "alice", "deploy"); err == nil {
		t.Error("the fake sent /deploy, which the bot never registered")
	}
	if _, err := e.f.Command("room", "alice", chat.CommandGrants); err != nil {
		t.Errorf("/grants, registered: %v", err)
	}
	if got := e.sink.commanded(); len(got) != 1 || got[0].name != chat.CommandGrants {
		t.Errorf("Command calls = %+v, want /grants only", got)
	}
	noErrors(t, e.f)
}

// /grants reaches Sink.Command with the interaction as the update, and
// its reply is answered ephemerally: escaped, no mentions, the Revoke
// buttons in rows, pressable by the one user who sees them.
func TestGrantsIsAnsweredEphemerallyWithButtons(t *testing.T) {
	t.Parallel()
	e := start(t, discord.Config{})
	waitCommands(t, e.f)
	revoke := chat.ButtonData("gr_1", chat.ChoiceRevokeGrant)
	e.sink.command = func(_ context.Context, name string, in gh.Inbound) (chat.CommandReply, error) {
		return chat.CommandReply{
			Text:    "Active grants in this chat:\n1. post_note for **this** chat (@everyone <@123>), until 11:40 UTC. Grant gr_1.",
			Buttons: []chat.Button{{Label: "Revoke post_note", Data: revoke, Style: "danger"}},
		}, nil
	}
	e.sink.press = func(_ context.Context, p gh.Press) (chat.PressResult, error) {
		return chat.PressResult{Won: true, Text: "Revoked: post_note asks again."}, nil
	}
	before := time.Now()
	list, err := e.f.Command("room", "bob", chat.CommandGrants)
	if err != nil {
		t.Fatal(err)
	}
	ixs := e.f.Interactions()
	ix := ixs[len(ixs)-1]
	calls := e.sink.commanded()
	if len(calls) != 1 {
		t.Fatalf("Command calls = %+v", calls)
	}
	in := calls[0].in
	if in.ReceivedAt.Before(before) {
		t.Errorf("ReceivedAt %v is before the command", in.ReceivedAt)
	}
	in.ReceivedAt = time.Time{}
	want := gh.Inbound{Platform: gh.PlatformDiscord, UpdateID: ix.ID, ChatID: e.f.ChannelID("room"), ChatType: gh.ChatGroup,
		UserID: e.f.UserID("bob"), UserName: "bob"}
	if calls[0].name != chat.CommandGrants || !reflect.DeepEqual(in, want) {
		t.Errorf("Command(%q, %+v)\nwant Command(grants, %+v)", calls[0].name, in, want)
	}
	if ix.Command != chat.CommandGrants || ix.Type != 4 || ix.Flags&64 == 0 {
		t.Errorf("answer %+v, want type 4 with flags 64 (ephemeral)", ix)
	}
	m, ok := e.f.Message("room", list.ID)
	if !ok || !m.Ephemeral {
		t.Fatalf("the answer %s is not an ephemeral message: %+v", list.ID, m)
	}
	if want := discord.FormatLiteral("1. post_note for **this** chat (@everyone <@123>)"); !strings.Contains(m.Text, want) {
		t.Errorf("answer text %q lacks the escaped %q", m.Text, want)
	}
	if m.PingedEveryone || m.AllowedMentions == nil || len(m.AllowedMentions) != 0 {
		t.Errorf("answer mentions: allowed %v, pinged %v; want allowed_mentions {parse: []}", m.AllowedMentions, m.PingedEveryone)
	}
	if !slices.Equal(m.Buttons, []string{revoke}) || m.Labels[0] != "Revoke post_note" || m.Rows != 1 {
		t.Errorf("answer buttons %q labels %q rows %d", m.Buttons, m.Labels, m.Rows)
	}
	for _, msg := range e.f.Messages("room") {
		if msg.ID == list.ID {
			t.Error("the ephemeral answer is in the channel for everyone")
		}
	}

	// Only bob sees it, so only bob can press Revoke.
	if _, err := e.f.Press("room", list.ID, revoke, "alice"); err == nil {
		t.Error("alice pressed a button of bob's ephemeral message")
	}
	reply, err := e.f.Press("room", list.ID, revoke, "bob")
	if err != nil || reply != "Revoked: post\\_note asks again." && reply != "Revoked: post_note asks again." {
		t.Errorf("Revoke press = %q, %v", reply, err)
	}
	if ps := e.sink.pressed(); len(ps) != 1 || ps[0].Choice != chat.ChoiceRevokeGrant || ps[0].GateID != "gr_1" || ps[0].MessageID != list.ID {
		t.Errorf("presses = %+v, want one revoke of gr_1 on the answer", ps)
	}

	// In a DM the command is a DM's.
	if _, err := e.f.Command("dm-bob", "bob", chat.CommandGrants); err != nil {
		t.Fatal(err)
	}
	if calls := e.sink.commanded(); len(calls) != 2 || calls[1].in.ChatType != gh.ChatDM || calls[1].in.ChatID != e.f.ChannelID("dm-bob") {
		t.Errorf("DM command = %+v", calls[len(calls)-1])
	}
	noErrors(t, e.f)
}

// A refusal, an error, a duplicate, an unknown name and a long answer.
func TestCommandAnswersEveryCase(t *testing.T) {
	t.Parallel()
	e := start(t, discord.Config{PressTimeout: 300 * time.Millisecond})
	waitCommands(t, e.f)
	var reply chat.CommandReply
	var fail error
	var hang bool
	e.sink.command = func(ctx context.Context, name string, in gh.Inbound) (chat.CommandReply, error) {
		if hang {
			<-ctx.Done()
			return chat.CommandReply{}, ctx.Err()
		}
		return reply, fail
	}
	send := func() (adaptertest.Message, discordtest.DiscordInteraction) {
		t.Helper()
		m, err := e.f.Command("room", "mallory", chat.CommandGrants)
		if err != nil {
			t.Fatal(err)
		}
		ixs := e.f.Interactions()
		return m, ixs[len(ixs)-1]
	}

	reply = chat.CommandReply{Text: "You are not allowed to use Gatehouse here.", Refused: true,
		Buttons: []chat.Button{{Label: "x", Data: "gh:v:gr_1"}}}
	if m, ix := send(); m.Text != "You are not allowed to use Gatehouse here." || len(m.Buttons) != 0 || ix.Flags&64 == 0 {
		t.Errorf("refusal answered %+v (%+v), want the text ephemerally, no buttons", m, ix)
	}

	reply, fail = chat.CommandReply{}, errors.New("database is down")
	if m, _ := send(); !strings.Contains(m.Text, "could not answer, try again") {
		t.Errorf("error answered %q", m.Text)
	}
	fail, hang = nil, true
	if m, ix := send(); !strings.Contains(m.Text, "could not answer, try again") || ix.After > 3*time.Second {
		t.Errorf("a hanging Command answered %q after %s", m.Text, ix.After)
	}
	hang = false

	reply = chat.CommandReply{Text: strings.Repeat("*", 3000)}
	if m, _ := send(); len([]rune(m.Text)) > 2000 || !strings.HasPrefix(m.Text, `\*\*`) {
		t.Errorf("a long answer is %d characters, starting %.10q", len([]rune(m.Text)), m.Text)
	}

	// A command the adapter does not know (registered by someone else
	// on the same application) is handed on all the same.
	req, _ := http.NewRequest(http.MethodPut, e.f.URL()+"/api/v9/applications/"+e.f.AppID()+"/commands",
		strings.NewReader(`[{"name":"grants","description":"g"},{"name":"deploy","description":"d"}]`))
	req.Header.Set("Authorization", "Bot "+e.f.Token())
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	reply = chat.CommandReply{Text: "Gatehouse knows /grants only."}
	m, err := e.f.Command("room", "alice", "deploy")
	calls := e.sink.commanded()
	if err != nil || m.Text != "Gatehouse knows /grants only." || calls[len(calls)-1].name != "deploy" {
		t.Errorf("/deploy: Command(%q) answered %+v, %v", calls[len(calls)-1].name, m, err)
	}
	noErrors(t, e.f)
}

// A stranger's /grants, through the whole gateway: refused to them
// alone, and logged as not allowed.
func TestStrangersGrantsIsRefusedAndLogged(t *testing.T) {
	t.Parallel()
	st := stacktest.Stack(t, discordtest.DiscordFactory, adaptertest.StackOptions{Allowed: []string{"alice"}})
	f := st.Fake.(*discordtest.DiscordFake)
	waitCommands(t, f)
	reply, err := f.Command("room", "mallory", chat.CommandGrants)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(reply.Text, "not allowed") || len(reply.Buttons) != 0 {
		t.Errorf("a stranger's /grants answered %+v, want a refusal", reply)
	}
	m, _ := f.Message("room", reply.ID)
	if !m.Ephemeral {
		t.Errorf("the refusal is not ephemeral: %+v", m)
	}
	if n := len(f.Messages("room")); n != 0 {
		t.Errorf("%d messages in the channel after a stranger's command, want none", n)
	}
	ixs := f.Interactions()
	row := adaptertest.WaitReceive(t, st.Ctx, st.Store, gh.PlatformDiscord, ixs[len(ixs)-1].ID)
	if row.Outcome != chat.ReceiveDropped || row.Reason != chat.ReasonNotAllowed || row.UserID != f.UserID("mallory") ||
		row.ChatID != f.ChannelID("room") || !strings.HasPrefix(row.Text, "/grants") {
		t.Errorf("receive-log row %+v, want /grants dropped as not_allowed", row)
	}

	// alice, allowed, gets the (empty) listing.
	reply, err = f.Command("room", "alice", chat.CommandGrants)
	if err != nil || !strings.Contains(reply.Text, "No grants") {
		t.Errorf("alice's /grants = %+v, %v", reply, err)
	}
	noErrors(t, f)
}
