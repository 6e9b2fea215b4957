package slackchat

import (
	"context"
	"errors"
	"fmt"

	"github.com/slack-go/slack"

	"github.com/gatehouse/gatehouse/gateway/chat"
)

// Probe asks auth.test (chat.Prober): it proves the Web API answers and
// takes the bot token, and it learns the bot's user id on the way.
func (a *Adapter) Probe(ctx context.Context) error {
	res, err := a.api.AuthTestContext(ctx)
	if err != nil {
		return classify(fmt.Errorf("slack: auth.test: %w", err))
	}
	a.idMu.Lock()
	if a.botUserID == "" {
		a.botUserID = res.UserID
	}
	a.idMu.Unlock()
	return nil
}

// refusedToken are the Web API errors that mean the token is not taken.
var refusedToken = map[string]bool{
	"invalid_auth": true, "not_authed": true, "account_inactive": true,
	"token_revoked": true, "token_expired": true, "not_allowed_token_type": true,
}

// classify marks a refused token so the gateway says so and slows down.
func classify(err error) error {
	var se slack.SlackErrorResponse
	if errors.As(err, &se) && refusedToken[se.Err] {
		return chat.TokenRefused(err)
	}
	var ple slack.StatusCodeError
	if errors.As(err, &ple) && ple.Code == 401 {
		return chat.TokenRefused(err)
	}
	return err
}
