package slackchat

import (
	"errors"
	"log/slog"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/gateway/chat"
)

// Platform offers the Slack adapter to the binary: its settings and how
// to build it from them.
var Platform = chat.Platform{
	Name:          gh.PlatformSlack,
	SessionPrefix: "sl_",
	Token:         "SLACK_BOT_TOKEN",
	Allowed:       "SLACK_ALLOWED_USERS",
	Settings: []chat.Setting{
		{Env: "SLACK_BOT_TOKEN", Key: "slack_bot_token", Default: "", Help: "starts the Slack adapter (xoxb-…)", Secret: true},
		{Env: "SLACK_APP_TOKEN", Key: "slack_app_token", Default: "", Help: "Socket Mode app token (xapp-…); the default mode when set", Secret: true},
		{Env: "SLACK_SIGNING_SECRET", Key: "slack_signing_secret", Default: "", Help: "Events API mode (no app token): events arrive at POST /hooks/slack signed with this secret (bad signature or a timestamp 5 minutes off gets 401)", Secret: true},
		{Env: "SLACK_API_URL", Key: "slack_api_url", Default: "https://slack.com", Help: "Slack Web API base (a test fake otherwise)"},
		{Env: "SLACK_ALLOWED_USERS", Key: "slack_allowed_users", Default: "", Help: "comma-separated Slack user ids allowed; * is everyone; empty is nobody"},
	},
	New: func(v map[string]string, log *slog.Logger) (chat.Adapter, error) {
		if v["SLACK_BOT_TOKEN"] == "" {
			return nil, chat.ErrNotConfigured
		}
		if v["SLACK_APP_TOKEN"] == "" && v["SLACK_SIGNING_SECRET"] == "" {
			return nil, errors.New("set SLACK_APP_TOKEN (Socket Mode) or SLACK_SIGNING_SECRET (Events API at /hooks/slack)")
		}
		a, err := New(Config{BotToken: v["SLACK_BOT_TOKEN"], AppToken: v["SLACK_APP_TOKEN"], SigningSecret: v["SLACK_SIGNING_SECRET"],
			APIURL: v["SLACK_API_URL"], Logger: log})
		if err != nil {
			return nil, err
		}
		return a, nil
	},
}

func init() { chat.Register(Platform) }
