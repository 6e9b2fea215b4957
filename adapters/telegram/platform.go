package telegram

import (
	"log/slog"
	"strings"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/gateway/chat"
)

// Platform offers the Telegram adapter to the binary: its settings and
// how to build it from them.
var Platform = chat.Platform{
	Name:          gh.PlatformTelegram,
	SessionPrefix: "tg_",
	Token:         "TELEGRAM_BOT_TOKEN",
	Allowed:       "TELEGRAM_ALLOWED_USERS",
	Settings: []chat.Setting{
		{Env: "TELEGRAM_BOT_TOKEN", Key: "telegram_bot_token", Default: "", Help: "starts the Telegram adapter (long polling unless TELEGRAM_WEBHOOK_SECRET is set)", Secret: true, SecretParts: secretPart},
		{Env: "TELEGRAM_API_URL", Key: "telegram_api_url", Default: "https://api.telegram.org", Help: "Bot API server (a self-hosted Bot API server or a test fake)"},
		{Env: "TELEGRAM_WEBHOOK_SECRET", Key: "telegram_webhook_secret", Default: "", Help: "webhook mode: updates arrive at POST /hooks/telegram with this X-Telegram-Bot-Api-Secret-Token (a wrong one gets 401)", Secret: true},
		{Env: "TELEGRAM_WEBHOOK_URL", Key: "telegram_webhook_url", Default: "", Help: "webhook mode: the public https address of /hooks/telegram, registered with setWebhook at start; empty leaves registration to you"},
		{Env: "TELEGRAM_ALLOWED_USERS", Key: "telegram_allowed_users", Default: "", Help: "comma-separated Telegram user ids allowed to talk to the agent and approve; * is everyone; empty is nobody"},
	},
	New: func(v map[string]string, log *slog.Logger) (chat.Adapter, error) {
		if v["TELEGRAM_BOT_TOKEN"] == "" {
			return nil, chat.ErrNotConfigured
		}
		a, err := New(Config{Token: v["TELEGRAM_BOT_TOKEN"], APIURL: v["TELEGRAM_API_URL"], WebhookSecret: v["TELEGRAM_WEBHOOK_SECRET"],
			WebhookURL: v["TELEGRAM_WEBHOOK_URL"], Logger: log})
		if err != nil {
			return nil, err
		}
		return a, nil
	},
}

func init() { chat.Register(Platform) }

// secretPart is the part of a bot token after "123456:", which is the
// secret half (the bot id before it is public).
func secretPart(token string) []string {
	_, secret, _ := strings.Cut(token, ":")
	return []string{secret}
}
