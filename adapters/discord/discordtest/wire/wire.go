// Package wire holds how the fake Discord writes Discord's objects and
// answers, with no state of its own: users, messages, interactions and
// application commands as Discord serialises them (and where a command
// may be used), the gateway's READY and guild member objects, a
// dispatch as a client's intents let it through (ForIntents), a
// message as a test sees it (View), JSON answers and 50035 form errors,
// routes with their ids replaced, and whether a message pings everyone.
// discordtest keeps the state and calls it.
package wire

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/gatehouse/gatehouse/adapters/discord/discordtest/formbody"
)

// JSON answers v with status.
func JSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// FormError is Discord's 50035 "Invalid Form Body" with the offending
// field's path ("components.0.components.1.custom_id").
func FormError(w http.ResponseWriter, path, code, message string) {
	var leaf any = map[string]any{"_errors": []any{map[string]any{"code": code, "message": message}}}
	keys := strings.Split(path, ".")
	for i := len(keys) - 1; i >= 0; i-- {
		leaf = map[string]any{keys[i]: leaf}
	}
	JSON(w, http.StatusBadRequest, map[string]any{"message": "Invalid Form Body", "code": 50035, "errors": leaf})
}

// RouteShape replaces ids in a path with ":id" (and the token of an
// interaction callback with ":token") to match routes.
func RouteShape(parts []string) []string {
	out := slices.Clone(parts)
	for i, p := range out {
		switch {
		case len(parts) == 4 && parts[0] == "interactions" && i == 2:
			out[i] = ":token"
		case p != "" && strings.Trim(p, "0123456789") == "":
			out[i] = ":id"
		case len(parts) == 4 && parts[0] == "interactions" && i == 1:
			out[i] = ":id"
		}
	}
	return out
}

// Pings reports whether content notifies everyone, given
// allowed_mentions.parse (nil when the request had none).
func Pings(content string, allowed *[]string) bool {
	if !strings.Contains(content, "@everyone") && !strings.Contains(content, "@here") {
		return false
	}
	return allowed == nil || slices.Contains(*allowed, "everyone")
}

// User is a user object.
func User(id, name string, bot bool) map[string]any {
	j := map[string]any{
		"id": id, "username": name, "discriminator": "0", "global_name": name,
		"avatar": nil, "public_flags": 0,
	}
	if bot {
		j["bot"] = true
		j["global_name"] = nil
	}
	return j
}

// Message is what a message object is written from.
type Message struct {
	ID, ChannelID string
	Kind          int // 0 default, 19 reply
	Author        map[string]any
	Content       string
	Rows          [][]formbody.Button
	Everyone      bool
	Ephemeral     bool
	Attachment    bool
	// Files are the message's attachments (Attachment adds a photo).
	Files   []File
	RefID   string
	Created time.Time
	Edited  *time.Time
}

// JSON is the message object as Discord returns and dispatches it.
func (m Message) JSON() map[string]any {
	j := map[string]any{
		"id": m.ID, "channel_id": m.ChannelID, "type": m.Kind,
		"author": m.Author, "content": m.Content,
		"timestamp": m.Created.UTC().Format(time.RFC3339Nano), "edited_timestamp": nil,
		"tts": false, "mention_everyone": m.Everyone, "mentions": []any{}, "mention_roles": []any{},
		"attachments": []any{}, "embeds": []any{}, "pinned": false, "flags": 0, "components": rows(m.Rows),
	}
	if m.Ephemeral {
		j["flags"] = 64 // EPHEMERAL
	}
	if m.Edited != nil {
		j["edited_timestamp"] = m.Edited.UTC().Format(time.RFC3339Nano)
	}
	if m.Attachment {
		j["attachments"] = []any{map[string]any{
			"id": m.ID, "filename": "photo.png", "size": 1024, "content_type": "image/png",
			"url":       "https://cdn.discordapp.com/attachments/" + m.ChannelID + "/" + m.ID + "/photo.png",
			"proxy_url": "https://media.discordapp.net/attachments/" + m.ChannelID + "/" + m.ID + "/photo.png",
		}}
	}
	for _, f := range m.Files {
		j["attachments"] = append(j["attachments"].([]any), map[string]any{
			"id": f.ID, "filename": f.Name, "size": f.Size, "content_type": f.ContentType, "url": f.URL, "proxy_url": f.URL,
		})
	}
	if m.RefID != "" {
		j["message_reference"] = map[string]any{"type": 0, "message_id": m.RefID, "channel_id": m.ChannelID}
	}
	return j
}

// File is an attachment as the fake keeps it: URL is where its CDN
// serves it.
type File struct {
	ID, Name, ContentType, URL string
	Size                       int
}

// rows is a message's action rows of buttons.
func rows(rs [][]formbody.Button) []any {
	out := make([]any, 0, len(rs))
	for _, r := range rs {
		bs := make([]any, 0, len(r))
		for _, b := range r {
			bj := map[string]any{"type": 2, "style": b.Style, "disabled": b.Disabled}
			if b.Label != "" {
				bj["label"] = b.Label
			}
			if b.CustomID != "" {
				bj["custom_id"] = b.CustomID
			}
			if b.URL != "" {
				bj["url"] = b.URL
			}
			if b.Emoji != nil {
				bj["emoji"] = b.Emoji
			}
			bs = append(bs, bj)
		}
		out = append(out, map[string]any{"type": 1, "components": bs})
	}
	return out
}

// Interaction is what an interaction object is written from.
type Interaction struct {
	ID, AppID, Token string
	Type             int // 2 command, 3 component, 5 modal submission
	ChannelID        string
	GuildID          string // "" in a DM
	User             map[string]any
	Message          map[string]any // the component's message; nil for a command
	Data             map[string]any
	JoinedAt         time.Time
}

// JSON is the interaction as Discord sends it: an INTERACTION_CREATE's
// d, or the body POSTed to the interactions endpoint.
func (ix Interaction) JSON() map[string]any {
	chType := 0 // GUILD_TEXT
	if ix.GuildID == "" {
		chType = 1 // DM
	}
	d := map[string]any{
		"id": ix.ID, "application_id": ix.AppID, "type": ix.Type, "token": ix.Token, "version": 1,
		"channel_id": ix.ChannelID, "channel": map[string]any{"id": ix.ChannelID, "type": chType},
		"data": ix.Data, "app_permissions": "2248473465835073", "locale": "en-US", "entitlements": []any{},
		"authorizing_integration_owners": map[string]any{"0": ix.GuildID}, "context": 0,
	}
	if ix.Message != nil {
		d["message"] = ix.Message
	}
	if ix.GuildID != "" {
		d["guild_id"] = ix.GuildID
		d["guild_locale"] = "en-US"
		d["member"] = map[string]any{
			"user": ix.User, "roles": []any{}, "joined_at": ix.JoinedAt.UTC().Format(time.RFC3339Nano),
			"deaf": false, "mute": false, "flags": 0, "pending": false, "permissions": "2248473465835073",
		}
	} else {
		d["user"] = ix.User
		d["context"] = 1
	}
	return d
}
