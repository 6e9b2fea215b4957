package discord

import (
	"log/slog"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/gateway/chat"
)

// Platform offers the Discord adapter to the binary: its settings and how
// to build it from them.
var Platform = chat.Platform{
	Name:          gh.PlatformDiscord,
	SessionPrefix: "dc_",
	Token:         "DISCORD_BOT_TOKEN",
	Allowed:       "DISCORD_ALLOWED_USERS",
	Settings: []chat.Setting{
		{Env: "DISCORD_BOT_TOKEN", Key: "discord_bot_token", Default: "", Help: "starts the Discord adapter (gateway connection)", Secret: true},
		{Env: "DISCORD_API_URL", Key: "discord_api_url", Default: "https://discord.com", Help: "Discord API base: https://discord.com, with or without /api, /api/v10 or a trailing slash (a test fake otherwise); anything else is refused at start"},
		{Env: "DISCORD_PUBLIC_KEY", Key: "discord_public_key", Default: "", Help: "the application's public key (hex, developer portal): serves Discord's interactions endpoint at POST /hooks/discord, Ed25519-verified (a bad signature or a timestamp 5 minutes off gets 401)"},
		{Env: "DISCORD_ALLOWED_USERS", Key: "discord_allowed_users", Default: "", Help: "comma-separated Discord user ids allowed; * is everyone; empty is nobody"},
	},
	New: func(v map[string]string, log *slog.Logger) (chat.Adapter, error) {
		if v["DISCORD_BOT_TOKEN"] == "" {
			return nil, chat.ErrNotConfigured
		}
		a, err := New(Config{Token: v["DISCORD_BOT_TOKEN"], APIURL: v["DISCORD_API_URL"], PublicKey: v["DISCORD_PUBLIC_KEY"], Logger: log})
		if err != nil {
			return nil, err
		}
		return a, nil
	},
}

func init() { chat.Register(Platform) }
