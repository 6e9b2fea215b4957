package telegramtest

import (
	"strings"
	"unicode/utf16"

	"github.com/gatehouse/gatehouse/adapters/telegram/telegramtest/tgfiles"
)

// SayDocument sends a document from user in chat, as Telegram's clients
// do: the file named name of type mimeType holding data, with caption
// (a caption that starts with a command carries a bot_command entity, as
// a client makes one). It returns the update's id and the message's id,
// which ReplyCommand can reply to. getFile and the file endpoint then
// serve the bytes, under the bot's token only.
func (f *TelegramFake) SayDocument(chat, user, caption, name, mimeType string, data []byte) (update string, msgID int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.chat(chat)
	j := f.userMessage(c, user, false, 0)
	msgID = j["message_id"].(int)
	j["document"] = tgfiles.DocumentJSON(f.files.Add(c.id, msgID, name, mimeType, data))
	if caption != "" {
		j["caption"] = caption
		if e, ok := commandEntity(caption); ok {
			j["caption_entities"] = []tgEntity{e}
		}
	}
	return f.queueMessage(c, j), msgID
}

// ReplyCommand sends text (a command, as SayCommand does) from user in
// chat as a reply to message to, carrying that message whole as
// reply_to_message (its document included) the way Telegram does.
func (f *TelegramFake) ReplyCommand(chat, user, text string, to int) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.chat(chat)
	j := f.userMessage(c, user, false, 0)
	j["text"] = text
	if e, ok := commandEntity(text); ok {
		j["entities"] = []tgEntity{e}
	}
	if m := c.byID[to]; m != nil {
		r := f.messageJSON(c, m)
		if file, ok := f.files.Of(c.id, to); ok {
			r["document"] = tgfiles.DocumentJSON(file)
		}
		j["reply_to_message"] = r
	}
	return f.queueMessage(c, j)
}

// commandEntity is the bot_command entity a client gives text that starts
// with a command.
func commandEntity(text string) (tgEntity, bool) {
	word, _, _ := strings.Cut(text, " ")
	if !strings.HasPrefix(word, "/") || len(word) < 2 {
		return tgEntity{}, false
	}
	return tgEntity{Type: "bot_command", Offset: 0, Length: len(utf16.Encode([]rune(word)))}, true
}

// FileDownloads counts the downloads of files that succeeded.
func (f *TelegramFake) FileDownloads() int { return f.files.Downloads() }

// ChangeDocument replaces the bytes of the document message msgID of
// chat carried: what a later download gets (a file changed on the
// platform's side after it was checked).
func (f *TelegramFake) ChangeDocument(chat string, msgID int, data []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.files.Change(f.chat(chat).id, msgID, data) {
		f.t.Fatalf("telegram fake: message %d of %s has no document", msgID, chat)
	}
}

// Document is the document message msgID of chat carried, as the Bot
// API describes it: its file_id, name, type and size.
func (f *TelegramFake) Document(chat string, msgID int) (fileID, name, mimeType string, size int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	file, ok := f.files.Of(f.chat(chat).id, msgID)
	if !ok {
		f.t.Fatalf("telegram fake: message %d of %s has no document", msgID, chat)
	}
	return file.ID, file.Name, file.MIME, len(file.Data)
}
