package telegram

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/go-telegram/bot/models"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/gateway/chat"
)

// event is one update, read: exactly one of inbound and query is set.
type event struct {
	updateID int64
	inbound  *gh.Inbound
	query    *callback
	// reason is set beside inbound when the message replies to a prompt
	// for the reason of a denial (see reasonPrompt): it is that reason,
	// as a press, if the prompt is the bot's own (reasonTo, the prompt's
	// sender, is the bot's id); else the message is an ordinary one.
	reason   *gh.Press
	reasonTo int64
	// command is set beside inbound when the message is a chat command
	// the gateway answers (see commandOf); it goes to Sink.Command when
	// it is addressed to this bot, else the message is an ordinary one.
	// A command wins over a reason: "/grants" is not a reason to deny.
	command *botCommand
}

// callback is a callback query (a button press).
type callback struct {
	// queryID answers the query.
	queryID string
	// press is set when the data is one of ours and the press came from a
	// message we can address; ours is false for anything else.
	press gh.Press
	ours  bool
}

// errNoUpdateID marks a body that is not an update at all.
var errNoUpdateID = errors.New("telegram: update without update_id")

// parseUpdate reads one update as Telegram sends it (a webhook body, one
// element of getUpdates' result). Whatever the bytes, it returns either an
// error or an event whose Inbound or Press has a platform and an update id.
//
// An update that has an id but does not decode (a field of a newer Bot API
// with a type the models do not know) still becomes an Inbound marked
// unsupported, so that it is logged and acknowledged instead of blocking
// the updates behind it.
func parseUpdate(body []byte, now time.Time) (event, error) {
	var head struct {
		UpdateID int64 `json:"update_id"`
	}
	if err := json.Unmarshal(body, &head); err != nil {
		return event{}, fmt.Errorf("telegram: decode update: %w", err)
	}
	if head.UpdateID <= 0 {
		return event{}, errNoUpdateID
	}
	var u models.Update
	if err := json.Unmarshal(body, &u); err != nil {
		in := gh.Inbound{
			Platform:    gh.PlatformTelegram,
			UpdateID:    strconv.FormatInt(head.UpdateID, 10),
			Unsupported: "unreadable",
			ReceivedAt:  now,
		}
		return event{updateID: head.UpdateID, inbound: &in}, nil
	}
	u.ID = head.UpdateID
	return fromUpdate(&u, now), nil
}

// fromUpdate normalises a decoded update.
func fromUpdate(u *models.Update, now time.Time) event {
	ev := event{updateID: u.ID}
	in := gh.Inbound{
		Platform:   gh.PlatformTelegram,
		UpdateID:   strconv.FormatInt(u.ID, 10),
		ReceivedAt: now,
	}
	switch {
	case u.CallbackQuery != nil:
		ev.query = fromCallback(u.CallbackQuery)
		if ev.query != nil {
			return ev
		}
		// A query without an id cannot be answered: log it as unsupported.
		in.Unsupported = "callback_query"
	case u.Message != nil:
		fromMessage(&in, u.Message)
		ev.reason, ev.reasonTo = reasonReply(&in, u.Message)
		ev.command = commandOf(u.Message)
		libraryReply(&in, u.Message, ev.command)
	case u.ChannelPost != nil:
		fromMessage(&in, u.ChannelPost)
		ev.command = commandOf(u.ChannelPost)
		libraryReply(&in, u.ChannelPost, ev.command)
	case u.EditedMessage != nil:
		fromMessage(&in, u.EditedMessage)
		in.Text, in.Unsupported = "", "edited_message"
	case u.EditedChannelPost != nil:
		fromMessage(&in, u.EditedChannelPost)
		in.Text, in.Unsupported = "", "edited_channel_post"
	case u.BusinessMessage != nil:
		fromMessage(&in, u.BusinessMessage)
		in.Text, in.Unsupported = "", "business_message"
	case u.MyChatMember != nil:
		fromChat(&in, &u.MyChatMember.Chat)
		fromUser(&in, &u.MyChatMember.From)
		in.Unsupported = "my_chat_member"
	case u.ChatMember != nil:
		fromChat(&in, &u.ChatMember.Chat)
		fromUser(&in, &u.ChatMember.From)
		in.Unsupported = "chat_member"
	case u.ChatJoinRequest != nil:
		fromChat(&in, &u.ChatJoinRequest.Chat)
		fromUser(&in, &u.ChatJoinRequest.From)
		in.Unsupported = "chat_join_request"
	case u.MessageReaction != nil:
		fromChat(&in, &u.MessageReaction.Chat)
		if u.MessageReaction.User != nil {
			fromUser(&in, u.MessageReaction.User)
		}
		in.Unsupported = "reaction"
	case u.InlineQuery != nil:
		if u.InlineQuery.From != nil {
			fromUser(&in, u.InlineQuery.From)
		}
		in.Unsupported = "inline_query"
	default:
		in.Unsupported = updateKind(u)
	}
	ev.inbound = &in
	return ev
}

// updateKind names an update the adapter has nothing to say about.
func updateKind(u *models.Update) string {
	switch {
	case u.MessageReactionCount != nil:
		return "reaction_count"
	case u.ChosenInlineResult != nil:
		return "chosen_inline_result"
	case u.ShippingQuery != nil:
		return "shipping_query"
	case u.PreCheckoutQuery != nil:
		return "pre_checkout_query"
	case u.Poll != nil:
		return "poll"
	case u.PollAnswer != nil:
		return "poll_answer"
	case u.ChatBoost != nil, u.RemovedChatBoost != nil:
		return "chat_boost"
	case u.BusinessConnection != nil, u.EditedBusinessMessage != nil, u.DeletedBusinessMessages != nil:
		return "business"
	case u.PurchasedPaidMedia != nil:
		return "paid_media"
	}
	return "unknown"
}

// fromMessage fills in from a message (or a channel post). Text is the
// message's text or, for media, its caption: the words a person wrote.
func fromMessage(in *gh.Inbound, m *models.Message) {
	fromChat(in, &m.Chat)
	in.MessageID = strconv.Itoa(m.ID)
	// Only a forum topic is a thread of its own; a reply chain in an
	// ordinary group also carries message_thread_id but is the same
	// conversation.
	if m.IsTopicMessage && m.MessageThreadID != 0 {
		in.ThreadID = strconv.Itoa(m.MessageThreadID)
	}
	switch {
	case m.From != nil:
		fromUser(in, m.From)
	case m.SenderChat != nil:
		// A channel post (or a message sent on behalf of a chat) names no
		// person: the chat speaks, and the allow-list has to name it.
		in.UserID = strconv.FormatInt(m.SenderChat.ID, 10)
		in.UserName = m.SenderChat.Username
		if in.UserName == "" {
			in.UserName = m.SenderChat.Title
		}
	}
	switch {
	case m.Text != "":
		in.Text = m.Text
	case m.Caption != "":
		in.Text = m.Caption
	default:
		in.Unsupported = messageKind(m)
	}
	in.Files = filesOf(m)
}

// filesOf is the file a message carries: a document (photos and other
// media are not files the library reads).
func filesOf(m *models.Message) []gh.File {
	if m == nil || m.Document == nil || m.Document.FileID == "" {
		return nil
	}
	d := m.Document
	return []gh.File{{Name: d.FileName, MediaType: d.MimeType, Size: d.FileSize, Ref: d.FileID}}
}

// libraryReply gives a /library command that carries no file the file of
// the message it replies to: "/library" sent as a reply to a document.
func libraryReply(in *gh.Inbound, m *models.Message, c *botCommand) {
	if c != nil && c.name == chat.CommandLibrary && len(in.Files) == 0 {
		in.Files = filesOf(m.ReplyToMessage)
	}
}

// messageKind names what a message without text carried.
func messageKind(m *models.Message) string {
	switch {
	case m.Sticker != nil:
		return "sticker"
	case len(m.Photo) > 0:
		return "photo"
	case m.Animation != nil:
		return "animation"
	case m.Video != nil:
		return "video"
	case m.VideoNote != nil:
		return "video_note"
	case m.Voice != nil:
		return "voice"
	case m.Audio != nil:
		return "audio"
	case m.Document != nil:
		return "document"
	case m.Contact != nil:
		return "contact"
	case m.Location != nil, m.Venue != nil:
		return "location"
	case m.Poll != nil:
		return "poll"
	case m.Dice != nil:
		return "dice"
	case m.Game != nil:
		return "game"
	case m.Story != nil:
		return "story"
	case len(m.NewChatMembers) > 0:
		return "member_joined"
	case m.LeftChatMember != nil:
		return "member_left"
	case m.PinnedMessage != nil:
		return "pinned_message"
	case m.NewChatTitle != "", len(m.NewChatPhoto) > 0, m.DeleteChatPhoto:
		return "chat_changed"
	case m.GroupChatCreated, m.SupergroupChatCreated, m.ChannelChatCreated:
		return "chat_created"
	case m.MigrateToChatID != 0, m.MigrateFromChatID != 0:
		return "chat_migrated"
	case m.ForumTopicCreated != nil, m.ForumTopicEdited != nil, m.ForumTopicClosed != nil, m.ForumTopicReopened != nil:
		return "forum_topic"
	}
	return "message_without_text"
}

func fromChat(in *gh.Inbound, c *models.Chat) {
	in.ChatID = strconv.FormatInt(c.ID, 10)
	in.ChatType = chatType(c.Type)
}

func fromUser(in *gh.Inbound, u *models.User) {
	in.UserID = strconv.FormatInt(u.ID, 10)
	in.UserName = userName(u)
	in.IsBot = u.IsBot
}

func userName(u *models.User) string {
	if u.Username != "" {
		return u.Username
	}
	return u.FirstName
}

func chatType(t models.ChatType) string {
	switch t {
	case models.ChatTypePrivate:
		return gh.ChatDM
	case models.ChatTypeGroup, models.ChatTypeSupergroup:
		return gh.ChatGroup
	case models.ChatTypeChannel:
		return gh.ChatChannel
	}
	return ""
}

// fromCallback reads a callback query; nil when it has no id to answer.
func fromCallback(q *models.CallbackQuery) *callback {
	if q.ID == "" {
		return nil
	}
	cb := &callback{queryID: q.ID}
	// A press on a message sent in inline mode has no chat: we never send
	// such messages, so it is not ours whatever its data says.
	var msgChat *models.Chat
	var msgID, threadID int
	switch {
	case q.Message.Message != nil:
		m := q.Message.Message
		msgChat, msgID = &m.Chat, m.ID
		if m.IsTopicMessage {
			threadID = m.MessageThreadID
		}
	case q.Message.InaccessibleMessage != nil:
		msgChat, msgID = &q.Message.InaccessibleMessage.Chat, q.Message.InaccessibleMessage.MessageID
	}
	gateID, choice, ok := chat.ParseButtonData(q.Data)
	if !ok || msgChat == nil || msgChat.ID == 0 {
		return cb
	}
	cb.ours = true
	cb.press = gh.Press{
		Platform:  gh.PlatformTelegram,
		UpdateID:  q.ID,
		GateID:    gateID,
		Choice:    choice,
		UserID:    strconv.FormatInt(q.From.ID, 10),
		UserName:  userName(&q.From),
		ChatID:    strconv.FormatInt(msgChat.ID, 10),
		MessageID: strconv.Itoa(msgID),
		IsBot:     q.From.IsBot,
	}
	if threadID != 0 {
		cb.press.ThreadID = strconv.Itoa(threadID)
	}
	return cb
}

// A denial's reason is asked for by a message that ends with the card it
// is for, "(card g_…)", sent with force_reply; the presser's reply to it
// is the reason.
var reasonPromptRe = regexp.MustCompile(`\(card ([A-Za-z0-9_-]{1,200})\)\s*$`)

// reasonPrompt is the text asking for the reason to deny the card gateID
// of tool.
func reasonPrompt(tool, gateID string) string {
	return fmt.Sprintf("✍️ Why deny %s? Reply to this message with the reason: it is shown on the card and given to the agent. (card %s)", tool, gateID)
}

// reasonReply reads message m (read into in) as the reply to a prompt for
// a denial's reason: the press it makes and the prompt's sender, or nil
// when m replies to no such prompt or has no text.
func reasonReply(in *gh.Inbound, m *models.Message) (*gh.Press, int64) {
	r := m.ReplyToMessage
	if r == nil || r.From == nil || !r.From.IsBot || strings.TrimSpace(in.Text) == "" || in.Unsupported != "" {
		return nil, 0
	}
	match := reasonPromptRe.FindStringSubmatch(r.Text)
	if match == nil {
		return nil, 0
	}
	return &gh.Press{
		Platform: gh.PlatformTelegram,
		UpdateID: in.UpdateID,
		GateID:   match[1],
		Choice:   chat.ChoiceDeny,
		Reason:   in.Text,
		UserID:   in.UserID,
		UserName: in.UserName,
		ChatID:   in.ChatID,
		ThreadID: in.ThreadID,
		IsBot:    in.IsBot,
	}, r.From.ID
}
