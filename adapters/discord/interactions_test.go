package discord_test

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/adapters/adaptertest"
	"github.com/gatehouse/gatehouse/adapters/discord"
	"github.com/gatehouse/gatehouse/adapters/discord/discordtest"
	"github.com/gatehouse/gatehouse/adapters/discord/discordtest/signed"
	"github.com/gatehouse/gatehouse/gateway/chat"
	"github.com/gatehouse/gatehouse/httpapi"
	"github.com/gatehouse/gatehouse/internal/testing/stacktest"
	"github.com/gatehouse/gatehouse/models/modeltest"
)

// slowSink is the gateway as the interactions endpoint sees it, its
// presses and commands taking delay longer: a store under load.
type slowSink struct {
	chat.Sink
	delay time.Duration
}

func (s slowSink) Press(ctx context.Context, p gh.Press) (chat.PressResult, error) {
	time.Sleep(s.delay)
	return s.Sink.Press(ctx, p)
}

func (s slowSink) Command(ctx context.Context, name string, in gh.Inbound) (chat.CommandReply, error) {
	time.Sleep(s.delay)
	return s.Sink.Command(ctx, name, in)
}

// slowEndpoint serves the adapter's interactions endpoint with a slow
// gateway behind it.
type slowEndpoint struct {
	*discord.Adapter
	delay time.Duration
}

func (s slowEndpoint) Handler(sink chat.Sink) http.Handler {
	return s.Adapter.Handler(slowSink{sink, s.delay})
}

// endpointStack is a whole gateway whose Discord adapter takes
// interactions over HTTP: the gateway's own server mounts the adapter's
// handler at /hooks/discord, and the fake Discord, told that URL, checks
// it as the developer portal does and then POSTs every interaction there,
// signed, instead of sending it over the gateway socket.
func endpointStack(t *testing.T, delay time.Duration, now ...func() time.Time) (*stacktest.Env, *discordtest.DiscordFake) {
	t.Helper()
	var fake *discordtest.DiscordFake
	factory := func(tb adaptertest.TB) (chat.Adapter, adaptertest.Fake) {
		fake = discordtest.NewDiscord(tb)
		cfg := discord.Config{Token: fake.Token(), APIURL: fake.URL(), PublicKey: fake.PublicKey(),
			Logger: slog.New(slog.NewTextHandler(discordtest.NewDiscordLogWriter(tb), nil))}
		if len(now) > 0 {
			cfg.Now = now[0]
		}
		a, err := discord.New(cfg)
		if err != nil {
			tb.Fatalf("discord adapter: %v", err)
		}
		if delay > 0 {
			return slowEndpoint{a, delay}, fake
		}
		return a, fake
	}
	env := stacktest.NewEnv(t, factory, stacktest.EnvOptions{Allowed: []string{"alice", "bob"}, HTTP: &httpapi.Config{}})
	fake.SetInteractionsURL("http://" + env.Addr + "/hooks/discord")
	if err := fake.CheckInteractionsEndpoint(); err != nil {
		t.Fatalf("the developer portal would not save /hooks/discord: %v", err)
	}
	adaptertest.Eventually(t, "the gateway session", fake.Connected)
	return env, fake
}

// pendingCard makes alice ask for a note to be posted and returns the
// approval card with its approve and deny buttons' data.
func pendingCard(t *testing.T, env *stacktest.Env, f *discordtest.DiscordFake) (card adaptertest.Message, approve, deny string) {
	t.Helper()
	env.Model.Push(modeltest.Reply{ToolCalls: []modeltest.ToolCall{{ID: "call_post", Name: "post_note", Arguments: `{"text":"The report is ready."}`}}},
		modeltest.Reply{Text: "Posted the note."})
	f.Say("room", "alice", "post that the report is ready", false)
	adaptertest.Eventually(t, "an approval card", func() bool {
		for _, m := range f.Messages("room") {
			if len(m.Buttons) >= 2 {
				card = m
				return true
			}
		}
		return false
	})
	for _, b := range card.Buttons {
		switch _, choice, _ := chat.ParseButtonData(b); choice {
		case chat.ChoiceApprove:
			approve = b
		case chat.ChoiceDeny:
			deny = b
		}
	}
	return card, approve, deny
}

func cardNow(t *testing.T, f *discordtest.DiscordFake, id string) discordtest.DiscordMessage {
	t.Helper()
	m, ok := f.Message("room", id)
	if !ok {
		t.Fatalf("card %s is gone", id)
	}
	return m
}

func lastInteraction(f *discordtest.DiscordFake) discordtest.DiscordInteraction {
	ixs := f.Interactions()
	return ixs[len(ixs)-1]
}

func TestEndpointRefusesBadSignaturesAndDecidesNothing(t *testing.T) {
	t.Parallel()
	env, f := endpointStack(t, 0)
	card, approve, _ := pendingCard(t, env, f)
	for _, forgery := range []discordtest.Forgery{signed.WrongKey, signed.Tampered, signed.Unsigned} {
		status, err := f.PressForged("room", card.ID, approve, "alice", forgery)
		if err != nil || status != http.StatusUnauthorized {
			t.Errorf("a press %s: status %d, %v; want 401", forgery, status, err)
		}
	}
	time.Sleep(200 * time.Millisecond) // what a forged press could have set going
	gate := gateOf(t, env, approve)
	if gate.State != gh.GatePending || env.Posted.Load() != 0 {
		t.Errorf("after forged presses the gate is %s and the tool ran %d times; want pending, never", gate.State, env.Posted.Load())
	}
	if m := cardNow(t, f, card.ID); len(m.Buttons) != len(card.Buttons) || m.Edited {
		t.Errorf("a forged press changed the card: %+v", m)
	}
	noErrors(t, f)
}

func gateOf(t *testing.T, env *stacktest.Env, data string) gh.Gate {
	t.Helper()
	id, _, _ := chat.ParseButtonData(data)
	g, err := env.Store.GetGate(env.Ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestEndpointPressDecidesOnceAndEditsTheCard(t *testing.T) {
	t.Parallel()
	env, f := endpointStack(t, 0)
	card, approve, _ := pendingCard(t, env, f)
	reply, err := f.Press("room", card.ID, approve, "alice")
	if err != nil || !strings.Contains(reply, "Approved by") {
		t.Fatalf("press over HTTP: %q, %v; want the decided card", reply, err)
	}
	ix := lastInteraction(f)
	if !ix.HTTP || ix.Type != 7 {
		t.Errorf("press went over HTTP=%v and was answered with type %d, want HTTP and 7 (the card updated in the answer)", ix.HTTP, ix.Type)
	}
	if m := cardNow(t, f, card.ID); len(m.Buttons) != 0 || !strings.Contains(m.Text, "Approved by") {
		t.Errorf("card after the press: %+v, want the outcome without buttons", m)
	}
	env.Eventually("the approved tool to run", func() bool { return env.Posted.Load() == 1 })

	// The same interaction delivered again decides nothing more.
	typ, content, err := f.RedeliverInteraction(ix.ID)
	if err != nil || typ != 4 || !strings.Contains(content, "Already decided") {
		t.Errorf("redelivered press: type %d %q, %v; want an ephemeral \"Already decided\"", typ, content, err)
	}
	time.Sleep(200 * time.Millisecond)
	if n := env.Posted.Load(); n != 1 {
		t.Errorf("the tool ran %d times after a redelivered press, want 1", n)
	}
	if g := gateOf(t, env, approve); g.State != gh.GateApproved || g.DecidedBy != "alice" {
		t.Errorf("gate %+v, want approved by alice", g)
	}
	noErrors(t, f)
}

func TestEndpointDefersASlowDecisionAndThenEditsTheCard(t *testing.T) {
	t.Parallel()
	// Slower than the adapter's 2 s before it defers, so the answer must
	// be deferred and follow through the interaction's webhook.
	env, f := endpointStack(t, 2500*time.Millisecond)
	card, approve, _ := pendingCard(t, env, f)
	reply, err := f.Press("room", card.ID, approve, "alice")
	if err != nil || !strings.Contains(reply, "Approved by") {
		t.Fatalf("slow press: %q, %v; want the decided card once it follows", reply, err)
	}
	ix := lastInteraction(f)
	if ix.Type != 6 || ix.Edits != 1 {
		t.Errorf("slow press answered with type %d and %d edits of the original, want 6 (deferred update) and 1", ix.Type, ix.Edits)
	}
	if m := cardNow(t, f, card.ID); len(m.Buttons) != 0 || !strings.Contains(m.Text, "Approved by") {
		t.Errorf("card after the slow press: %+v, want the outcome without buttons", m)
	}
	env.Eventually("the approved tool to run", func() bool { return env.Posted.Load() == 1 })

	// A later press that decides nothing hears so in a message of its own.
	second, err := f.Press("room", card.ID, approve, "bob")
	if err != nil || !strings.Contains(second, "Already decided") {
		t.Errorf("slow second press: %q, %v; want \"Already decided\" as a follow-up", second, err)
	}
	if ix := lastInteraction(f); ix.Type != 6 || ix.FollowUps != 1 {
		t.Errorf("slow second press: type %d with %d follow-ups, want 6 and one follow-up message", ix.Type, ix.FollowUps)
	}
	noErrors(t, f)
}

func TestEndpointTakesTheReasonModal(t *testing.T) {
	t.Parallel()
	env, f := endpointStack(t, 0)
	card, _, _ := pendingCard(t, env, f)
	var denyReason string
	for _, b := range card.Buttons {
		if _, choice, _ := chat.ParseButtonData(b); choice == chat.ChoiceDenyReason {
			denyReason = b
		}
	}
	if denyReason == "" {
		t.Fatalf("card has no \"Deny with reason…\" button: %q", card.Buttons)
	}
	reply, err := f.DenyWithReason("room", card.ID, denyReason, "alice", "wrong channel for notes")
	if err != nil || !strings.Contains(reply, "wrong channel for notes") {
		t.Fatalf("deny with reason over HTTP: %q, %v", reply, err)
	}
	for _, ix := range f.Interactions() {
		if !ix.HTTP {
			t.Errorf("interaction %+v came over the gateway, want the endpoint", ix)
		}
	}
	if g := gateOf(t, env, denyReason); g.State != gh.GateDenied || g.Reason != "wrong channel for notes" {
		t.Errorf("gate %+v, want denied with the reason", g)
	}
	if env.Posted.Load() != 0 {
		t.Error("a denied tool ran")
	}
	noErrors(t, f)
}

func TestEndpointAnswersSlashCommands(t *testing.T) {
	t.Parallel()
	for name, delay := range map[string]time.Duration{"at once": 0, "deferred": 2500 * time.Millisecond} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, f := endpointStack(t, delay)
			adaptertest.Eventually(t, "/grants registered", func() bool { return len(f.Commands()) > 0 })
			reply, err := f.Command("room", "alice", chat.CommandGrants)
			if err != nil || !strings.Contains(strings.ToLower(reply.Text), "grant") {
				t.Fatalf("/grants over HTTP: %+v, %v", reply, err)
			}
			ix := lastInteraction(f)
			want := 4
			if delay > 0 {
				want = 5
			}
			if !ix.HTTP || ix.Type != want || ix.Flags&64 == 0 {
				t.Errorf("/grants answered with type %d flags %d (HTTP %v), want type %d, ephemeral", ix.Type, ix.Flags, ix.HTTP, want)
			}
			if m, _ := f.Message("room", reply.ID); !m.Ephemeral {
				t.Errorf("the answer to /grants is seen by everyone: %+v", m)
			}
			noErrors(t, f)
		})
	}
}

func TestPublicKeyIsChecked(t *testing.T) {
	t.Parallel()
	for _, key := range []string{"abc", strings.Repeat("zz", 32), strings.Repeat("ab", 31), strings.Repeat("ab", 33)} {
		_, err := discord.New(discord.Config{Token: "t", PublicKey: key})
		if err == nil || !strings.Contains(err.Error(), "DISCORD_PUBLIC_KEY") {
			t.Errorf("public key %q: %v, want a refusal naming DISCORD_PUBLIC_KEY", key, err)
		}
	}
	a, err := discord.New(discord.Config{Token: "t", PublicKey: strings.Repeat("ab", 32)})
	if err != nil {
		t.Fatal(err)
	}
	if a.Handler(&recSink{}) == nil {
		t.Error("a public key serves no interactions endpoint")
	}
}

// TestSuiteOverTheEndpoint runs the whole gateway against the fake
// Discord sending interactions to the endpoint.
func TestSuiteOverTheEndpoint(t *testing.T) {
	adaptertest.Run(t, stacktest.Stack, discordtest.DiscordInteractionsFactory)
}
