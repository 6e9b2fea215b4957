package store

import (
	"context"
	"time"
)

// Chat settings: what the people of a chat chose for it (/model, /think,
// the web chat's selector), kept with the chat rather than with a session
// or a process, so every replica and every later turn of the chat reads
// the same. Package gateway and the web chat's endpoint give them their
// meaning; the supervisor reads them for a turn whose inputs chose nothing.

// ChatKey names a chat whose settings are kept. A platform chat is its
// platform and the platform's chat id: every session of the chat (each
// Slack thread, each Telegram topic) shares its settings, and a new
// session in the chat keeps them. A session no platform chat holds (the
// web chat, the API) is its own chat: Platform "" and ChatID the session
// id.
type ChatKey struct {
	Platform string `json:"platform,omitempty"`
	ChatID   string `json:"chatId"`
}

// SessionChat is the key of a session that belongs to no platform chat.
func SessionChat(sessionID string) ChatKey { return ChatKey{ChatID: sessionID} }

// ChatSettings is one chat's stored choices. An empty field is no choice:
// the configured default applies.
type ChatSettings struct {
	ChatKey
	// Selection is the model chain the chat picked ("provider:model[,…]").
	Selection string `json:"selection,omitempty"`
	// Thinking is the thinking level the chat picked (gh.CheckThinking).
	Thinking string `json:"thinking,omitempty"`
	// UpdatedBy is who changed them last (a user key, or "web").
	UpdatedBy string    `json:"updatedBy,omitempty"`
	Updated   time.Time `json:"updatedAt,omitzero"`
}

// ChatSettingsChange changes some of a chat's settings: a nil field is
// left as it is (so /think never undoes a /model that raced it), an empty
// one clears the choice.
type ChatSettingsChange struct {
	ChatKey
	Selection *string
	Thinking  *string
	By        string
	Now       time.Time
}

// ChatSettingsStore keeps the chat settings.
type ChatSettingsStore interface {
	// ChatSettings returns the chat's settings; found is false when none
	// are stored.
	ChatSettings(ctx context.Context, chat ChatKey) (s ChatSettings, found bool, err error)
	// SessionChatSettings returns the settings of the chat session
	// sessionID belongs to: its platform chat's, by the address book,
	// when it has an address, else the session's own (SessionChat).
	SessionChatSettings(ctx context.Context, sessionID string) (s ChatSettings, found bool, err error)
	// PutChatSettings applies c in one statement (an upsert) and returns
	// the settings as stored.
	PutChatSettings(ctx context.Context, c ChatSettingsChange) (ChatSettings, error)
}
