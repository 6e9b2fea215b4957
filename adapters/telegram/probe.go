package telegram

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-telegram/bot"

	"github.com/gatehouse/gatehouse/gateway/chat"
)

// Probe asks getMe (chat.Prober): the cheapest call that proves the Bot
// API answers and takes our token. Telegram answers 401 to a revoked or
// mistyped token.
func (a *Adapter) Probe(ctx context.Context) error {
	u, err := a.bot.GetMe(ctx)
	if err != nil {
		return classify(fmt.Errorf("telegram: getMe: %w", err))
	}
	if u.Username != "" {
		a.me.mu.Lock()
		a.me.username = u.Username
		a.me.mu.Unlock()
	}
	return nil
}

// classify marks a refused token so the gateway says so and slows down.
func classify(err error) error {
	if errors.Is(err, bot.ErrorUnauthorized) {
		return chat.TokenRefused(err)
	}
	return err
}
