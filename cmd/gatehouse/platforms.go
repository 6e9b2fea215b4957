package main

import (
	"fmt"
	"log/slog"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/adapters/discord"
	"github.com/gatehouse/gatehouse/adapters/slack"
	"github.com/gatehouse/gatehouse/adapters/telegram"
	"github.com/gatehouse/gatehouse/gates"
	"github.com/gatehouse/gatehouse/gateway"
	"github.com/gatehouse/gatehouse/kernel"
	"github.com/gatehouse/gatehouse/store"
)

// newGateway builds the chat gateway with an adapter for every platform
// whose token is set; nil when there is none.
func newGateway(cfg Config, st store.Store, k *kernel.Kernel, gateSvc *gates.Service, reg prometheus.Registerer, log *slog.Logger) (*gateway.Gateway, error) {
	adapters, err := newAdapters(cfg, log)
	if err != nil || len(adapters) == 0 {
		return nil, err
	}
	allowed := map[string][]string{
		gh.PlatformTelegram: splitList(cfg.TelegramAllowed),
		gh.PlatformDiscord:  splitList(cfg.DiscordAllowed),
		gh.PlatformSlack:    splitList(cfg.SlackAllowed),
	}
	for _, a := range adapters {
		if len(allowed[a.Platform()]) == 0 {
			log.Warn("nobody is allowed on this platform yet: every message is dropped as not_allowed (the receive log shows who wrote)",
				"platform", a.Platform(), "set", strings.ToUpper(a.Platform())+"_ALLOWED_USERS")
		}
	}
	return gateway.New(gateway.Config{Kernel: k, Store: st, Gates: gateSvc, Adapters: adapters, Allowed: allowed, FloodLimit: cfg.FloodLimit,
		MidTurn: gh.Delivery(cfg.MidTurn), LeaseTTL: cfg.LeaseTTL, Retention: cfg.Retention, Logger: log, Metrics: reg}), nil
}

func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// newAdapters builds an adapter for each platform whose token is set.
func newAdapters(cfg Config, log *slog.Logger) ([]gateway.Adapter, error) {
	var out []gateway.Adapter
	if cfg.TelegramToken != "" {
		a, err := telegram.New(telegram.Config{Token: cfg.TelegramToken, APIURL: cfg.TelegramAPIURL, WebhookSecret: cfg.TelegramWebhookSecret,
			WebhookURL: cfg.TelegramWebhookURL, Logger: log})
		if err != nil {
			return nil, fmt.Errorf("telegram: %w", err)
		}
		out = append(out, a)
	}
	if cfg.DiscordToken != "" {
		a, err := discord.New(discord.Config{Token: cfg.DiscordToken, APIURL: cfg.DiscordAPIURL, Logger: log})
		if err != nil {
			return nil, fmt.Errorf("discord: %w", err)
		}
		out = append(out, a)
	}
	if cfg.SlackBotToken != "" {
		if cfg.SlackAppToken == "" && cfg.SlackSigningSecret == "" {
			return nil, fmt.Errorf("slack: set SLACK_APP_TOKEN (Socket Mode) or SLACK_SIGNING_SECRET (Events API at /hooks/slack)")
		}
		a, err := slack.New(slack.Config{BotToken: cfg.SlackBotToken, AppToken: cfg.SlackAppToken, SigningSecret: cfg.SlackSigningSecret,
			APIURL: cfg.SlackAPIURL, Logger: log})
		if err != nil {
			return nil, fmt.Errorf("slack: %w", err)
		}
		out = append(out, a)
	}
	return out, nil
}
