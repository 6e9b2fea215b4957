package discord

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/bwmarrin/discordgo"
	"github.com/gorilla/websocket"

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

// closeAuthFailed is the gateway's close code for a token it refused
// at IDENTIFY or RESUME.
const closeAuthFailed = 4004

// classify marks a refused token (a REST 401, or the gateway socket
// closed with 4004 Authentication failed) so the gateway says so and
// slows down.
func classify(err error) error {
	if chat.IsTokenRefused(err) {
		return err
	}
	var re *discordgo.RESTError
	if errors.As(err, &re) && re.Response != nil && re.Response.StatusCode == http.StatusUnauthorized {
		return chat.TokenRefused(err)
	}
	var ce *websocket.CloseError
	if errors.As(err, &ce) && ce.Code == closeAuthFailed {
		return chat.TokenRefused(err)
	}
	return err
}
