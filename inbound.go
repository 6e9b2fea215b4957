package gatehouse

import "time"

// Platforms a message can come from. The web chat and the HTTP API are
// surfaces too, but they talk to the kernel directly.
const (
	PlatformTelegram = "telegram"
	PlatformDiscord  = "discord"
	PlatformSlack    = "slack"
)

// Chat types, as an adapter reports them.
const (
	ChatDM      = "dm"
	ChatGroup   = "group"
	ChatChannel = "channel"
)

// Inbound is one platform update, normalised. Adapters build it; the
// gateway decides what becomes of it. Platform ids stay in the gateway's
// tables: the agent's log sees only a session id and a platform name.
type Inbound struct {
	Platform string `json:"platform"`
	// UpdateID is the platform's id of this delivery (Telegram update_id,
	// Discord message id, Slack event_id): a redelivery repeats it.
	UpdateID string `json:"updateId"`
	ChatID   string `json:"chatId"`
	// ThreadID is a forum topic, a Discord thread or a Slack thread_ts;
	// empty for a chat without threads. One session per (chat, thread).
	ThreadID  string `json:"threadId,omitempty"`
	ChatType  string `json:"chatType,omitempty"`
	UserID    string `json:"userId"`
	UserName  string `json:"userName,omitempty"`
	MessageID string `json:"messageId,omitempty"`
	Text      string `json:"text"`
	IsBot     bool   `json:"isBot,omitempty"`
	// Unsupported names what the update carried when it is nothing the
	// gateway handles (a sticker, an edit, a join): it is dropped as
	// unsupported, and the log says what it was.
	Unsupported string `json:"unsupported,omitempty"`
	// Files are the files the message carried (a Telegram document, Slack
	// files, Discord attachments) or, for a /library command that replies
	// to a message, the replied-to message's. Only the library command
	// reads them: the agent is never handed a file (package gateway).
	Files      []File    `json:"files,omitempty"`
	ReceivedAt time.Time `json:"receivedAt"`
}

// File is a file a chat message carried, as its platform describes it.
// Nothing is downloaded until someone asks for it to be added to a
// library: then the adapter that read it fetches it by Ref
// (chat.FileFetcher).
type File struct {
	// Name is the file's name as sent ("handbook.pdf").
	Name string `json:"name"`
	// MediaType is what the platform says it is; empty when it says
	// nothing.
	MediaType string `json:"mediaType,omitempty"`
	// Size is its size in bytes as the platform reports it; 0 unknown.
	Size int64 `json:"size,omitempty"`
	// Ref is how the adapter fetches it: a Telegram file_id, a Slack
	// url_private_download, a Discord attachment URL.
	Ref string `json:"ref"`
}

// Address is where a session's replies go: the gateway's address book
// keeps one per session and restores it only when it sends.
type Address struct {
	Platform string `json:"platform"`
	ChatID   string `json:"chatId"`
	ThreadID string `json:"threadId,omitempty"`
	ChatType string `json:"chatType,omitempty"`
	// ReplyTo is the platform message id of the latest input, for
	// platforms that thread a reply to it.
	ReplyTo string `json:"replyTo,omitempty"`
}

// Press is a button press on an approval card.
type Press struct {
	Platform string `json:"platform"`
	// UpdateID identifies the press (a callback query id, an interaction id).
	UpdateID string `json:"updateId"`
	// GateID is the card's gate; for the choice "revoke_grant" (a Revoke
	// button on a grant's notice or a /grants listing) it is the grant's id.
	GateID string `json:"gateId"`
	// Choice is "approve", "approve_chat", "deny", "deny_reason" (asks for
	// a reason first: nothing is decided), "option:<n>" for a clarify
	// gate, or "revoke_grant".
	Choice string `json:"choice"`
	// Reason is why a deny was chosen, as the presser typed it (a reply
	// to a Telegram prompt, a Slack or Discord modal); empty otherwise.
	Reason    string `json:"reason,omitempty"`
	UserID    string `json:"userId"`
	UserName  string `json:"userName,omitempty"`
	ChatID    string `json:"chatId"`
	ThreadID  string `json:"threadId,omitempty"`
	MessageID string `json:"messageId,omitempty"`
	IsBot     bool   `json:"isBot,omitempty"`
}
