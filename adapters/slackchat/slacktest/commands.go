package slacktest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/gatehouse/gatehouse/adapters/adaptertest"
	"github.com/gatehouse/gatehouse/adapters/slackchat/slacktest/blockkit"
)

// ---- slash commands ----

// ManifestSlashCommands are the slash commands docs/slack-app-manifest.yaml
// declares (features.slash_commands), which the fake delivers by default;
// a test keeps the two the same.
var ManifestSlashCommands = []string{
	"/grants",
	"/model",
	"/think",
	"/tz",
}

// maxSocketResponse: Slack drops a Socket Mode response of 20 KB or more.
const maxSocketResponse = 20 * 1024

// SlackSlashCommands sets the app's slash commands ("/grants"), as its
// manifest would declare them; the fake delivers no other. The default is
// ManifestSlashCommands.
func SlackSlashCommands(commands ...string) SlackOption {
	return func(o *slackOptions) { o.commands = append([]string(nil), commands...) }
}

// Command types the slash command "/"+name in chat as user; see
// SlashCommand.
func (f *SlackFake) Command(chat, user, name string) (adaptertest.Message, error) {
	return f.SlashCommand(chat, user, "/"+name, "")
}

// CommandArgs is Command with args as the slash command's text.
func (f *SlackFake) CommandArgs(chat, user, name, args string) (adaptertest.Message, error) {
	return f.SlashCommand(chat, user, "/"+name, args)
}

// SlashCommand types command (with its slash) and text in chat as user,
// as Slack delivers it: a slash_commands envelope over Socket Mode,
// acknowledged with the answer as its payload, or in Events API mode a
// signed form-encoded POST answered in the response body. Slack never
// resends a command. The fake refuses (and lists in Errors) a command the
// app's manifest does not declare, an answer later than the ack timeout
// (3 s), and an answer Slack would refuse (invalid blocks, text over
// 40,000 characters, an unknown response_type, a socket response of 20 KB
// or more). It returns what the user sees: an ephemeral message (the
// default response_type), which the user alone can press, or a message in
// the channel (in_channel); an empty answer shows nothing (a Message
// without ID).
func (f *SlackFake) SlashCommand(chat, user, command, text string) (adaptertest.Message, error) {
	f.mu.Lock()
	c := f.chatLocked(chat)
	uid := f.userLocked(user)
	if !slices.Contains(f.opts.commands, command) {
		f.refusalLocked("slash command %s: not declared in the app's manifest (Slack answers %q)", command, command+" is not a valid command")
		f.mu.Unlock()
		return adaptertest.Message{}, fmt.Errorf("slack fake: %s is not a slash command of the app (declared: %v)", command, f.opts.commands)
	}
	f.seq++
	trigger := fmt.Sprintf("%d.%d.fake%08d", f.tsBase, f.seq, f.seq)
	f.triggers[trigger] = &slackTrigger{user: uid, channel: c.id, at: time.Now()}
	f.commandTriggers = append(f.commandTriggers, trigger)
	channelName := c.handle
	switch c.typ {
	case "im":
		channelName = "directmessage"
	case "mpim":
		channelName = "privategroup"
	}
	// Slack sends every field as a string, over HTTP (a form) and over
	// Socket Mode (JSON) alike.
	fields := [][2]string{
		{"token", "fakeverificationtoken"},
		{"team_id", f.TeamID},
		{"team_domain", "fake"},
		{"channel_id", c.id},
		{"channel_name", channelName},
		{"user_id", uid},
		{"user_name", user},
		{"command", command},
		{"text", text},
		{"api_app_id", f.AppID},
		{"is_enterprise_install", "false"},
		{"response_url", f.URL + "/commands/" + f.TeamID + "/" + trigger},
		{"trigger_id", trigger},
	}
	eventsURL := f.eventsURL
	f.mu.Unlock()

	var answer json.RawMessage
	var err error
	if eventsURL != "" {
		answer, err = f.postCommand(eventsURL, command, fields)
	} else {
		answer, err = f.socketCommand(trigger, command, fields)
	}
	if err != nil {
		return adaptertest.Message{}, err
	}
	return f.showCommandAnswer(c.handle, uid, command, answer)
}

// CommandTriggers are the trigger_ids of the slash commands typed so far
// (gh.Inbound.UpdateID of each), oldest first.
func (f *SlackFake) CommandTriggers() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.commandTriggers...)
}

// socketCommand sends a slash_commands envelope and waits for its
// acknowledgement, whose payload it returns.
func (f *SlackFake) socketCommand(trigger, command string, fields [][2]string) (json.RawMessage, error) {
	m := map[string]string{}
	for _, kv := range fields {
		m[kv[0]] = kv[1]
	}
	payload, _ := json.Marshal(m)
	d := &slackDelivery{id: trigger, kind: "slash_commands", payload: payload, ackCh: make(chan struct{})}
	f.mu.Lock()
	f.deliveries[trigger] = d
	f.mu.Unlock()
	f.deliver(d, "")
	deadline := time.NewTimer(f.opts.ackTimeout)
	defer deadline.Stop()
	select {
	case <-d.ackCh:
	case <-deadline.C:
		f.mu.Lock()
		f.refusalLocked("slash command %s: not acknowledged within %s (Slack shows the user operation_timeout)", command, f.opts.ackTimeout)
		f.mu.Unlock()
		return nil, fmt.Errorf("slack fake: slash command %s not acknowledged within %s", command, f.opts.ackTimeout)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return d.response, nil
}

// postCommand posts a slash command, signed, to the app's request URL and
// returns the response body as a message payload.
func (f *SlackFake) postCommand(target, command string, fields [][2]string) (json.RawMessage, error) {
	form := make([]string, 0, len(fields))
	for _, kv := range fields {
		form = append(form, url.QueryEscape(kv[0])+"="+url.QueryEscape(kv[1]))
	}
	body := []byte(strings.Join(form, "&"))
	ctx, cancel := context.WithTimeout(f.ctx, f.opts.ackTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header = f.signed("application/x-www-form-urlencoded", body)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.mu.Lock()
		f.refusalLocked("slash command %s: no answer within %s: %v", command, f.opts.ackTimeout, err)
		f.mu.Unlock()
		return nil, fmt.Errorf("slack fake: slash command %s: %w", command, err)
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("slack fake: slash command %s: %w", command, err)
	}
	if resp.StatusCode != http.StatusOK {
		f.mu.Lock()
		f.refusalLocked("slash command %s: the app answered HTTP %d (Slack shows the user http_service_error)", command, resp.StatusCode)
		f.mu.Unlock()
		return nil, fmt.Errorf("slack fake: slash command %s answered HTTP %d: %s", command, resp.StatusCode, bytes.TrimSpace(answer))
	}
	if len(bytes.TrimSpace(answer)) == 0 {
		return nil, nil
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if ct != "application/json" {
		// A plain-text body is shown as an ephemeral message's text.
		m, _ := json.Marshal(map[string]string{"text": string(answer)})
		return m, nil
	}
	return answer, nil
}

// showCommandAnswer checks a slash command's answer as Slack does and
// shows it: to the user alone (ephemeral) or in the channel (in_channel).
func (f *SlackFake) showCommandAnswer(chat, uid, command string, answer json.RawMessage) (adaptertest.Message, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.chatLocked(chat)
	refuse := func(code, detail string) (adaptertest.Message, error) {
		f.refusalLocked("slash command %s: answer refused: %s (%s)", command, code, detail)
		return adaptertest.Message{}, fmt.Errorf("slack fake: slash command %s: answer refused: %s (%s)", command, code, detail)
	}
	if len(bytes.TrimSpace(answer)) == 0 || string(bytes.TrimSpace(answer)) == "null" {
		return adaptertest.Message{}, nil
	}
	var msg struct {
		ResponseType string          `json:"response_type"`
		Text         *string         `json:"text"`
		Blocks       json.RawMessage `json:"blocks"`
	}
	if err := json.Unmarshal(answer, &msg); err != nil {
		return refuse("invalid_payload", err.Error())
	}
	text := ""
	if msg.Text != nil {
		text = *msg.Text
	}
	var blocks []blockkit.Block
	if len(msg.Blocks) > 0 && string(msg.Blocks) != "null" {
		var problem string
		if blocks, problem = blockkit.ParseBlocks(string(msg.Blocks)); problem != "" {
			return refuse("invalid_blocks", problem)
		}
	}
	if msg.ResponseType != "" && msg.ResponseType != "ephemeral" && msg.ResponseType != "in_channel" {
		return refuse("invalid_response_type", msg.ResponseType)
	}
	if code, detail := blockkit.CheckMessage(text, blocks); code != "" {
		return refuse(code, detail)
	}
	m := &slackMsg{ts: f.tsLocked(), text: text, user: f.BotUserID, botID: f.BotID, ours: true, blocks: blocks}
	m.show(blocks)
	if msg.ResponseType == "in_channel" {
		c.msgs = append(c.msgs, m)
		c.byTS[m.ts] = m
	} else {
		m.to = uid
		c.ephemeral[m.ts] = m
		f.ephemerals = append(f.ephemerals, slackEphemeral{channel: c.id, user: uid, text: text})
	}
	return adaptertest.Message{ID: m.ts, Text: text, Buttons: blockkit.Values(blocks)}, nil
}
