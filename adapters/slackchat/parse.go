package slackchat

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/gateway/chat"
)

// outerEvent is an Events API request body (or a Socket Mode events_api
// payload): an event_callback, or url_verification over HTTP.
type outerEvent struct {
	Type      string          `json:"type"`
	EventID   string          `json:"event_id"`
	Challenge string          `json:"challenge"`
	Event     json.RawMessage `json:"event"`
}

// messageEvent is the part of a message event the adapter reads. It is
// decoded here rather than by slackevents, which refuses whole payloads
// over fields the adapter does not need.
type messageEvent struct {
	Type        string `json:"type"`
	Subtype     string `json:"subtype"`
	Channel     string `json:"channel"`
	ChannelType string `json:"channel_type"`
	User        string `json:"user"`
	BotID       string `json:"bot_id"`
	Username    string `json:"username"`
	Text        string `json:"text"`
	TS          string `json:"ts"`
	ThreadTS    string `json:"thread_ts"`
	// Files are the files shared with the message (subtype file_share,
	// or a plain message with files).
	Files []slackFile `json:"files"`
	// Message is the changed message of a message_changed event.
	Message *struct {
		User     string `json:"user"`
		BotID    string `json:"bot_id"`
		TS       string `json:"ts"`
		ThreadTS string `json:"thread_ts"`
	} `json:"message"`
}

// errUnreadable marks a payload the adapter cannot make sense of; a
// redelivery would not help, so it is acknowledged and logged.
var errUnreadable = errors.New("unreadable Slack payload")

// parseEvent reads an event_callback. ok is false for events that are not
// messages (app_mention repeats a message event under another event_id,
// reactions and joins are no conversation): they are acknowledged and
// ignored. Messages with a subtype the gateway does not handle come back
// with Unsupported set to the subtype.
func parseEvent(body []byte, botUserID string, now time.Time) (in gh.Inbound, ok bool, err error) {
	var outer outerEvent
	if err := json.Unmarshal(body, &outer); err != nil {
		return gh.Inbound{}, false, fmt.Errorf("%w: %w", errUnreadable, err)
	}
	if outer.Type != "event_callback" {
		return gh.Inbound{}, false, nil
	}
	if outer.EventID == "" {
		return gh.Inbound{}, false, fmt.Errorf("%w: event_callback without event_id", errUnreadable)
	}
	var ev messageEvent
	if err := json.Unmarshal(outer.Event, &ev); err != nil {
		return gh.Inbound{}, false, fmt.Errorf("%w: event %s: %w", errUnreadable, outer.EventID, err)
	}
	if ev.Type != "message" {
		return gh.Inbound{}, false, nil
	}
	if ev.Channel == "" {
		return gh.Inbound{}, false, fmt.Errorf("%w: message event %s without channel", errUnreadable, outer.EventID)
	}
	in = gh.Inbound{
		Platform:   gh.PlatformSlack,
		UpdateID:   outer.EventID,
		ChatID:     ev.Channel,
		ChatType:   chatType(ev.ChannelType, ev.Channel),
		UserID:     ev.User,
		MessageID:  ev.TS,
		ReceivedAt: now,
	}
	threadTS := ev.ThreadTS
	botID := ev.BotID
	if m := ev.Message; m != nil {
		// message_changed carries the message inside.
		if in.UserID == "" {
			in.UserID = m.User
		}
		if in.MessageID == "" || m.TS != "" {
			in.MessageID = m.TS
		}
		if threadTS == "" {
			threadTS = m.ThreadTS
		}
		if botID == "" {
			botID = m.BotID
		}
	}
	if in.UserID == "" {
		// A legacy bot_message has a bot_id and no user.
		in.UserID = botID
	}
	in.UserName = in.UserID
	if ev.Subtype == "bot_message" && ev.Username != "" {
		in.UserName = ev.Username
	}
	in.IsBot = botID != "" || ev.Subtype == "bot_message" || (botUserID != "" && in.UserID == botUserID)
	switch {
	case threadTS != "":
		in.ThreadID = threadTS
	case in.ChatType != gh.ChatDM:
		// A top-level message in a channel starts a thread: the replies
		// go there, and the thread is the session.
		in.ThreadID = in.MessageID
	}
	switch ev.Subtype {
	case "", "bot_message", "thread_broadcast", "me_message":
		in.Text = ev.Text
		in.Files = filesOf(ev.Files)
	case "file_share":
		in.Files = filesOf(ev.Files)
		// The words typed with a file are a message; the file alone is not.
		if ev.Text == "" {
			in.Unsupported = "file_share"
		}
		in.Text = ev.Text
	default:
		in.Unsupported = ev.Subtype
	}
	return in, true, nil
}

// chatType maps Slack's channel_type, falling back to the channel id's
// first letter (D a direct message, G a private or multi-person one).
func chatType(channelType, channel string) string {
	switch channelType {
	case "im":
		return gh.ChatDM
	case "mpim", "group":
		return gh.ChatGroup
	case "channel":
		return gh.ChatChannel
	}
	switch {
	case strings.HasPrefix(channel, "D"):
		return gh.ChatDM
	case strings.HasPrefix(channel, "G"):
		return gh.ChatGroup
	}
	return gh.ChatChannel
}

// interaction is the part of an interactive payload the adapter reads.
type interaction struct {
	Type      string `json:"type"`
	TriggerID string `json:"trigger_id"`
	User      struct {
		ID       string `json:"id"`
		Username string `json:"username"`
		Name     string `json:"name"`
	} `json:"user"`
	Channel struct {
		ID string `json:"id"`
	} `json:"channel"`
	Container struct {
		MessageTS string `json:"message_ts"`
		ThreadTS  string `json:"thread_ts"`
		ChannelID string `json:"channel_id"`
	} `json:"container"`
	Message struct {
		TS       string `json:"ts"`
		ThreadTS string `json:"thread_ts"`
	} `json:"message"`
	Actions []struct {
		ActionID string `json:"action_id"`
		Value    string `json:"value"`
		ActionTS string `json:"action_ts"`
	} `json:"actions"`
}

// parsePress reads a block_actions payload. ok is false for anything that
// is not a press of one of our buttons (another app's button, a modal, a
// shortcut): it is acknowledged and ignored.
func parsePress(body []byte) (p gh.Press, ok bool, err error) {
	var ia interaction
	if err := json.Unmarshal(body, &ia); err != nil {
		return gh.Press{}, false, fmt.Errorf("%w: %w", errUnreadable, err)
	}
	if ia.Type != "block_actions" || len(ia.Actions) == 0 {
		return gh.Press{}, false, nil
	}
	act := ia.Actions[0]
	gateID, choice, ours := chat.ParseButtonData(act.Value)
	if !ours {
		return gh.Press{}, false, nil
	}
	p = gh.Press{
		Platform:  gh.PlatformSlack,
		UpdateID:  ia.TriggerID,
		GateID:    gateID,
		Choice:    choice,
		UserID:    ia.User.ID,
		UserName:  firstOf(ia.User.Username, ia.User.Name, ia.User.ID),
		ChatID:    firstOf(ia.Container.ChannelID, ia.Channel.ID),
		ThreadID:  firstOf(ia.Container.ThreadTS, ia.Message.ThreadTS),
		MessageID: firstOf(ia.Container.MessageTS, ia.Message.TS),
	}
	if p.UpdateID == "" && act.ActionTS != "" {
		// trigger_id is unique per interaction; without it the press's own
		// timestamp and presser identify it.
		p.UpdateID = act.ActionTS + ":" + p.UserID
	}
	if p.UpdateID == "" || p.UserID == "" || p.ChatID == "" || p.MessageID == "" {
		return gh.Press{}, false, fmt.Errorf("%w: block_actions without trigger, user, channel or message", errUnreadable)
	}
	return p, true, nil
}

func firstOf(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// parseReason reads the view_submission of the modal asking for a
// denial's reason as a deny press of its card, with the reason. ok is
// false for any other view (another app's, a view of ours without its
// metadata).
func parseReason(body []byte) (p gh.Press, ok bool, err error) {
	var vs struct {
		Type      string `json:"type"`
		TriggerID string `json:"trigger_id"`
		User      struct {
			ID       string `json:"id"`
			Username string `json:"username"`
			Name     string `json:"name"`
		} `json:"user"`
		View struct {
			ID              string `json:"id"`
			CallbackID      string `json:"callback_id"`
			PrivateMetadata string `json:"private_metadata"`
			State           struct {
				Values map[string]map[string]struct {
					Value string `json:"value"`
				} `json:"values"`
			} `json:"state"`
		} `json:"view"`
	}
	if err := json.Unmarshal(body, &vs); err != nil {
		return gh.Press{}, false, fmt.Errorf("%w: %w", errUnreadable, err)
	}
	if vs.Type != "view_submission" || vs.View.CallbackID != reasonCallbackID {
		return gh.Press{}, false, nil
	}
	var meta reasonMeta
	if err := json.Unmarshal([]byte(vs.View.PrivateMetadata), &meta); err != nil || meta.Gate == "" || meta.Channel == "" {
		return gh.Press{}, false, fmt.Errorf("%w: reason modal without its card", errUnreadable)
	}
	p = gh.Press{
		Platform:  gh.PlatformSlack,
		UpdateID:  firstOf(vs.TriggerID, vs.View.ID+":"+vs.User.ID),
		GateID:    meta.Gate,
		Choice:    chat.ChoiceDeny,
		Reason:    truncate(strings.TrimSpace(vs.View.State.Values[reasonBlockID][reasonActionID].Value), chat.MaxReason),
		UserID:    vs.User.ID,
		UserName:  firstOf(vs.User.Username, vs.User.Name, vs.User.ID),
		ChatID:    meta.Channel,
		ThreadID:  meta.Thread,
		MessageID: meta.Message,
	}
	if p.UserID == "" {
		return gh.Press{}, false, fmt.Errorf("%w: view_submission without a user", errUnreadable)
	}
	return p, true, nil
}
