package discord_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/adapters/adaptertest"
	"github.com/gatehouse/gatehouse/adapters/discord"
	"github.com/gatehouse/gatehouse/adapters/discord/discordtest"
	"github.com/gatehouse/gatehouse/gateway/chat"
)

// DISCORD_API_URL written with Discord's "/api" or "/api/v10" still
// reaches the fake: the gateway session opens, messages arrive and are
// sent, and the fake refuses nothing (a doubled "/api/v10/api/v9" would
// be refused as not under /api/v9).
func TestDocumentedAPIURLFormsReachTheAPI(t *testing.T) {
	t.Parallel()
	for _, suffix := range []string{"/api", "/api/v10/", "/"} {
		t.Run(suffix, func(t *testing.T) {
			t.Parallel()
			f := discordtest.NewDiscord(t)
			a, err := discord.New(discord.Config{Token: f.Token(), APIURL: f.URL() + suffix,
				Logger: slog.New(slog.NewTextHandler(discordtest.NewDiscordLogWriter(t), nil))})
			if err != nil {
				t.Fatal(err)
			}
			sink := &recSink{}
			adaptertest.Connect(t, a, sink, 15*time.Second)
			adaptertest.Eventually(t, "the gateway session", f.Connected)
			id := f.Say("room", "alice", "over the documented URL", false)
			adaptertest.Eventually(t, "the message", func() bool { return len(sink.calls(id)) == 1 })
			if _, err := a.Send(context.Background(), chat.Outgoing{Address: addr(f, "room"), Text: "answer"}); err != nil {
				t.Fatalf("send: %v", err)
			}
			noErrors(t, f)
		})
	}
}
