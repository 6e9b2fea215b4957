package slackchat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	slackgo "github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"

	"github.com/gatehouse/gatehouse/gateway/chat"
)

// Connect holds the Socket Mode connection and hands every message event,
// button press and slash command to sink until ctx ends, then returns nil. In Events API
// mode there is no connection: it waits for ctx and returns nil.
//
// It returns an error only when Slack refuses the tokens (auth.test or
// apps.connections.open answering invalid_auth and the like): retrying
// cannot help. Lost connections are reopened by slack-go with backoff.
func (a *Adapter) Connect(ctx context.Context, sink chat.Sink) error {
	if a.mode != modeSocket {
		<-ctx.Done()
		return nil
	}
	botUserID, err := a.identifyWithRetry(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("slack: auth.test: %w", err)
	}

	// socketmode.New copies the client: every option is already set.
	client := socketmode.New(a.api)
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- client.RunContext(runCtx) }()

	for {
		select {
		case evt := <-client.Events:
			a.handleSocketEvent(ctx, client, sink, botUserID, evt)
		case err := <-done:
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("slack: socket mode: %w", err)
		case <-ctx.Done():
			cancel()
			// slack-go stops emitting once its context is done, but keep
			// draining so no sender can block while it winds down.
			for {
				select {
				case <-client.Events:
				case <-done:
					return nil
				}
			}
		}
	}
}

// identifyWithRetry calls auth.test until it answers, except when the
// token is refused.
func (a *Adapter) identifyWithRetry(ctx context.Context) (string, error) {
	wait := time.Second
	for {
		id, err := a.identify(ctx)
		if err == nil {
			return id, nil
		}
		var se slackgo.SlackErrorResponse
		if errors.As(err, &se) || ctx.Err() != nil {
			return "", err
		}
		a.log.Warn("auth.test failed; retrying", "err", err, "in", wait)
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, 30*time.Second)
	}
}

func (a *Adapter) handleSocketEvent(ctx context.Context, client *socketmode.Client, sink chat.Sink, botUserID string, evt socketmode.Event) {
	switch evt.Type {
	case socketmode.EventTypeEventsAPI, socketmode.EventTypeInteractive, socketmode.EventTypeSlashCommand:
		if evt.Request != nil {
			a.handleRequest(ctx, client, sink, botUserID, *evt.Request)
		}
	case socketmode.EventTypeErrorBadMessage:
		// slack-go could not parse the envelope (slackevents refuses inner
		// event types it does not know, and some field shapes): read it
		// ourselves, so that it is acknowledged rather than resent.
		bad, _ := evt.Data.(*socketmode.ErrorBadMessage)
		var req socketmode.Request
		if bad == nil || json.Unmarshal(bad.Message, &req) != nil || req.EnvelopeID == "" {
			a.log.Warn("unreadable socket mode message", "data", evt.Data)
			return
		}
		a.handleRequest(ctx, client, sink, botUserID, req)
	case socketmode.EventTypeConnectionError, socketmode.EventTypeInvalidAuth,
		socketmode.EventTypeIncomingError, socketmode.EventTypeErrorWriteFailed:
		if ctx.Err() == nil {
			a.log.Warn("socket mode trouble", "event", string(evt.Type), "data", evt.Data)
		}
	}
}

// handleRequest answers one envelope. An events_api envelope is
// acknowledged only once the sink has committed its event; left
// unacknowledged, Slack resends it within seconds under the same event_id.
// A slash command is acknowledged with its answer (see answerCommand).
// Everything else is acknowledged at once.
func (a *Adapter) handleRequest(ctx context.Context, client *socketmode.Client, sink chat.Sink, botUserID string, req socketmode.Request) {
	ack := func() {
		// AckCtx, not Ack: between two connections nobody drains the
		// response queue, and a shutdown must not wait on it.
		if err := client.AckCtx(ctx, req.EnvelopeID, nil); err != nil && ctx.Err() == nil {
			a.log.Warn("socket mode ack failed", "envelope", req.EnvelopeID, "err", err)
		}
	}
	switch req.Type {
	case socketmode.RequestTypeEventsAPI:
		in, ok, err := parseEvent(req.Payload, botUserID, a.now())
		if err != nil {
			a.log.Warn("unreadable event; acknowledged and dropped", "envelope", req.EnvelopeID, "err", err)
			ack()
			return
		}
		if !ok {
			ack()
			return
		}
		if err := a.receiveMessage(ctx, sink, in, botUserID); err != nil {
			if ctx.Err() == nil {
				a.log.Warn("event not committed; Slack will resend it", "event", in.UpdateID, "retry", req.RetryAttempt, "err", err)
			}
			return
		}
		ack()
	case socketmode.RequestTypeInteractive:
		ack()
		a.handlePress(ctx, sink, req.Payload)
	case socketmode.RequestTypeSlashCommands:
		// Slack never resends a slash command: the acknowledgement carries
		// the answer, whatever became of it.
		var resp *commandResponse
		if cmd, err := readSocketCommand(req.Payload); err != nil {
			a.log.Warn("unreadable slash command", "envelope", req.EnvelopeID, "err", err)
			resp = ephemeralResponse("This command could not be read.", nil)
		} else {
			resp = a.answerCommand(ctx, sink, cmd)
		}
		var payload any
		if resp != nil {
			payload = resp
		}
		if err := client.AckCtx(ctx, req.EnvelopeID, payload); err != nil && ctx.Err() == nil {
			a.log.Warn("socket mode ack of a slash command failed", "envelope", req.EnvelopeID, "err", err)
		}
	default:
		ack()
	}
}
