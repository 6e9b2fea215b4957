package telegram

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

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

// webhookErrorWindow is how long a failed webhook delivery counts
// against the webhook (getWebhookInfo's last_error_date). Telegram keeps
// the date of the last failure however long ago it was; an old one says
// nothing about now.
const webhookErrorWindow = 10 * time.Minute

// Webhook faults ProbeWebhook names; match them with errors.Is.
var (
	ErrWebhookNotSet    = errors.New("no webhook is set")
	ErrWebhookElsewhere = errors.New("the webhook is set to another URL")
	ErrWebhookFailing   = errors.New("deliveries to the webhook fail")
	ErrWebhookSet       = errors.New("a webhook is set")
)

// ProbeWebhook asks getWebhookInfo whether Telegram still delivers to us
// (chat.WebhookProber: the Test's receiving step). In webhook mode it
// fails when no webhook is set (someone called deleteWebhook, or nobody
// registered it), when it is set to another URL than TELEGRAM_WEBHOOK_URL
// (another deployment took the bot over), or when a delivery failed in
// the last 10 minutes and updates are still waiting (the error carries
// Telegram's last_error_message). A failure with nothing waiting is
// history: the updates it was about were delivered since.
//
// In polling mode it fails when a webhook is set, since Telegram refuses
// getUpdates while one is.
func (a *Adapter) ProbeWebhook(ctx context.Context) error {
	info, err := a.bot.GetWebhookInfo(ctx)
	if err != nil {
		return classify(fmt.Errorf("telegram: getWebhookInfo: %w", err))
	}
	if !a.webhookMode() {
		if info.URL != "" {
			return fmt.Errorf("telegram: %w (%s) while the adapter polls: Telegram refuses getUpdates until it is removed (deleteWebhook), or set TELEGRAM_WEBHOOK_SECRET for webhook mode",
				ErrWebhookSet, info.URL)
		}
		return nil
	}
	switch {
	case info.URL == "":
		hint := "register it with setWebhook"
		if a.cfg.WebhookURL != "" {
			hint = "a restart registers TELEGRAM_WEBHOOK_URL again"
		}
		return fmt.Errorf("telegram: %w: Telegram delivers updates to nobody (%s)", ErrWebhookNotSet, hint)
	case a.cfg.WebhookURL != "" && info.URL != a.cfg.WebhookURL:
		return fmt.Errorf("telegram: %w: %s, not ours (%s): another deployment or a setWebhook call took the bot's updates; a restart registers ours again",
			ErrWebhookElsewhere, info.URL, a.cfg.WebhookURL)
	}
	if info.LastErrorDate > 0 && info.PendingUpdateCount > 0 {
		at := time.Unix(int64(info.LastErrorDate), 0)
		if since := a.now().Sub(at); since < webhookErrorWindow {
			return fmt.Errorf("telegram: %w: Telegram says %q (at %s), %d update(s) waiting", ErrWebhookFailing,
				info.LastErrorMessage, at.UTC().Format(time.RFC3339), info.PendingUpdateCount)
		}
	}
	return nil
}

// classify marks a refused token so the gateway says so and slows down:
// the library's 401 and the poll's own.
func classify(err error) error {
	var ae *apiError
	if errors.Is(err, bot.ErrorUnauthorized) || (errors.As(err, &ae) && ae.Code == http.StatusUnauthorized) {
		return chat.TokenRefused(err)
	}
	return err
}
