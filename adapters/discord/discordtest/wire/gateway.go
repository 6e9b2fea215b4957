package wire

import (
	"strings"
	"time"
)

// The gateway intents the fake heeds.
const (
	IntentGuildMessages  = 1 << 9
	IntentDirectMessages = 1 << 12
	IntentMessageContent = 1 << 15
)

// ForIntents is the d of a dispatch of type t as a client identified
// with intents gets it, or false when it gets none: MESSAGE_* events of
// guild channels need the guild messages intent and those of DMs the
// direct messages intent, and without the privileged Message Content
// intent Discord blanks guild messages that are not the bot's own. d is
// not changed.
func ForIntents(t string, d map[string]any, guild, fromBot bool, intents int) (map[string]any, bool) {
	if !strings.HasPrefix(t, "MESSAGE_") {
		return d, true
	}
	if guild && intents&IntentGuildMessages == 0 {
		return nil, false
	}
	if !guild && intents&IntentDirectMessages == 0 {
		return nil, false
	}
	if guild && !fromBot && intents&IntentMessageContent == 0 {
		blank := make(map[string]any, len(d))
		for k, v := range d {
			blank[k] = v
		}
		d = blank
		d["content"], d["embeds"], d["attachments"], d["components"] = "", []any{}, []any{}, []any{}
	}
	return d, true
}

// Member is the guild member object of the bot's one guild, joined at
// joinedAt, that gateway message events carry (REST responses do not).
func Member(joinedAt time.Time) map[string]any {
	return map[string]any{
		"roles": []any{}, "joined_at": joinedAt.UTC().Format(time.RFC3339Nano),
		"deaf": false, "mute": false, "flags": 0, "pending": false,
	}
}

// Ready is the READY dispatch's d for a new session of the bot (user) in
// the one guild, with resumeURL the gateway to resume at.
func Ready(sessionID, resumeURL string, user map[string]any, guildID, appID string) map[string]any {
	return map[string]any{
		"v": 9, "session_id": sessionID, "session_type": "normal",
		"resume_gateway_url": resumeURL,
		"user":               user,
		"guilds":             []any{map[string]any{"id": guildID, "unavailable": true}},
		"private_channels":   []any{},
		"application":        map[string]any{"id": appID, "flags": 0},
		"shard":              []int{0, 1},
	}
}
