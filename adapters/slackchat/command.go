package slackchat

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"

	slackgo "github.com/slack-go/slack"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/gateway/chat"
)

// Slash commands. Slack registers them in the app's configuration, not at
// run time: docs/slack-app-manifest.yaml declares /grants. Slack delivers
// one as a slash_commands envelope (Socket Mode) or a form-encoded POST to
// the app's request URL (Events API mode), never resends it, and shows the
// user an error unless the app answers within 3 seconds; the answer (the
// socket acknowledgement's payload, or the HTTP response body) is the
// message the user sees.

// commandAnswerWithin bounds the sink's work on a slash command, so the
// answer reaches Slack inside its 3 s.
const commandAnswerWithin = 2500 * time.Millisecond

// commandRetry is the answer when the command could not be recorded: Slack
// does not resend a slash command, so the user has to.
const commandRetry = "Could not answer that just now; please try again."

// slashCommand is the part of a slash command's payload the adapter reads
// (the same fields arrive as form values over HTTP and as JSON strings in
// a Socket Mode envelope).
type slashCommand struct {
	Command     string `json:"command"`
	Text        string `json:"text"`
	UserID      string `json:"user_id"`
	UserName    string `json:"user_name"`
	ChannelID   string `json:"channel_id"`
	ChannelName string `json:"channel_name"`
	TeamID      string `json:"team_id"`
	TriggerID   string `json:"trigger_id"`
}

// commandFromForm reads a slash command sent over HTTP.
func commandFromForm(form url.Values) slashCommand {
	return slashCommand{
		Command:     form.Get("command"),
		Text:        form.Get("text"),
		UserID:      form.Get("user_id"),
		UserName:    form.Get("user_name"),
		ChannelID:   form.Get("channel_id"),
		ChannelName: form.Get("channel_name"),
		TeamID:      form.Get("team_id"),
		TriggerID:   form.Get("trigger_id"),
	}
}

// commandResponse is the immediate answer to a slash command: a message
// only the user who typed it sees.
type commandResponse struct {
	ResponseType string          `json:"response_type"`
	Text         string          `json:"text"`
	Blocks       []slackgo.Block `json:"blocks,omitempty"`
}

func ephemeralResponse(text string, buttons []chat.Button) *commandResponse {
	text = FormatLiteral(text)
	r := &commandResponse{ResponseType: "ephemeral", Text: text}
	if len(buttons) > 0 {
		// The card's blocks: the text as plain_text sections, the buttons
		// in actions blocks (a press comes back as block_actions from an
		// ephemeral message, like a card's).
		r.Blocks = cardBlocks(chat.Card{Text: text, Buttons: buttons}, text)
	}
	return r
}

// answerCommand hands a slash command to the sink and returns the message
// to answer it with, or nil to answer with nothing (a command the gateway
// has answered already). Every command goes to the sink, known or not: the
// gateway answers the ones it does not know, and the receive log shows
// them.
func (a *Adapter) answerCommand(ctx context.Context, sink chat.Sink, cmd slashCommand) *commandResponse {
	name := strings.TrimPrefix(strings.TrimSpace(cmd.Command), "/")
	typ := ""
	switch cmd.ChannelName {
	case "directmessage":
		typ = "im"
	case "privategroup":
		typ = "group"
	}
	in := gh.Inbound{
		Platform:   gh.PlatformSlack,
		UpdateID:   cmd.TriggerID,
		ChatID:     cmd.ChannelID,
		ChatType:   chatType(typ, cmd.ChannelID),
		UserID:     cmd.UserID,
		UserName:   firstOf(cmd.UserName, cmd.UserID),
		Text:       strings.TrimSpace(cmd.Text),
		ReceivedAt: a.now(),
	}
	if name == "" || in.ChatID == "" || in.UserID == "" {
		a.log.Warn("slash command without command, channel or user", "command", cmd.Command, "channel", cmd.ChannelID, "user", cmd.UserID)
		return ephemeralResponse("This command could not be read.", nil)
	}
	cctx, cancel := context.WithTimeout(ctx, commandAnswerWithin)
	defer cancel()
	reply, err := sink.Command(cctx, name, in)
	switch {
	case err != nil:
		a.log.Warn("slash command not answered", "command", cmd.Command, "user", in.UserID, "trigger", in.UpdateID, "err", err)
		return ephemeralResponse(commandRetry, nil)
	case reply.Duplicate:
		return nil
	case reply.Text == "":
		// Slack needs an answer to every slash command.
		return ephemeralResponse(fmt.Sprintf("/%s: nothing to say.", name), nil)
	}
	// A refused command is answered too (with Text, and to its sender
	// alone): Slack shows the user an error otherwise.
	return ephemeralResponse(reply.Text, reply.Buttons)
}

// readSocketCommand reads a slash_commands envelope's payload. Slack sends
// its fields as strings (is_enterprise_install too), so it is read here,
// not by slack-go.
func readSocketCommand(payload json.RawMessage) (slashCommand, error) {
	var cmd slashCommand
	if err := json.Unmarshal(payload, &cmd); err != nil {
		return slashCommand{}, fmt.Errorf("%w: %w", errUnreadable, err)
	}
	return cmd, nil
}
