package discord

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/bwmarrin/discordgo"

	"github.com/gatehouse/gatehouse/gateway/chat"
)

// Probe asks GET /users/@me (chat.Prober): it proves the REST API answers
// and takes the bot token (401 when it does not).
func (a *Adapter) Probe(ctx context.Context) error {
	if _, err := a.rest.User("@me", discordgo.WithContext(ctx)); err != nil {
		return classify(fmt.Errorf("discord: GET /users/@me: %w", err))
	}
	return nil
}

// classify marks a refused token so the gateway says so and slows down.
func classify(err error) error {
	var re *discordgo.RESTError
	if errors.As(err, &re) && re.Response != nil && re.Response.StatusCode == http.StatusUnauthorized {
		return chat.TokenRefused(err)
	}
	return err
}
