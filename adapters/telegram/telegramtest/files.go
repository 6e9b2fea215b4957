package telegramtest

import (
	"net/http"
	"strconv"
	"strings"
	"unicode/utf16"
)

// tgFile is a file a user sent: getFile gives its path, and the file
// endpoint its bytes.
type tgFile struct {
	id, path, name, mime string
	data                 []byte
}

// documentJSON is the Bot API's Document object of file.
func documentJSON(file *tgFile) map[string]any {
	return map[string]any{"file_id": file.id, "file_unique_id": "u" + file.id, "file_name": file.name, "mime_type": file.mime, "file_size": len(file.data)}
}

// SayDocument sends a document from user in chat, as Telegram's clients
// do: the file named name of type mimeType holding data, with caption
// (a caption that starts with a command carries a bot_command entity, as
// a client makes one). It returns the update's id and the message's id,
// which ReplyCommand can reply to. getFile and the file endpoint then
// serve the bytes, under the bot's token only.
func (f *TelegramFake) SayDocument(chat, user, caption, name, mimeType string, data []byte) (update string, msgID int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.files == nil {
		f.files = map[string]*tgFile{}
		f.docs = map[int64]map[int]*tgFile{}
	}
	c := f.chat(chat)
	j := f.userMessage(c, user, false, 0)
	msgID = j["message_id"].(int)
	f.nextFile++
	n := strconv.Itoa(f.nextFile)
	file := &tgFile{id: "BQACAgIAAx" + n, path: "documents/file_" + n + pathExt(name), name: name, mime: mimeType, data: append([]byte(nil), data...)}
	f.files[file.id] = file
	if f.docs[c.id] == nil {
		f.docs[c.id] = map[int]*tgFile{}
	}
	f.docs[c.id][msgID] = file
	j["document"] = documentJSON(file)
	if caption != "" {
		j["caption"] = caption
		if word, _, _ := strings.Cut(caption, " "); strings.HasPrefix(word, "/") && len(word) > 1 {
			j["caption_entities"] = []tgEntity{{Type: "bot_command", Offset: 0, Length: len(utf16.Encode([]rune(word)))}}
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
	word, _, _ := strings.Cut(text, " ")
	j["text"] = text
	if strings.HasPrefix(word, "/") && len(word) > 1 {
		j["entities"] = []tgEntity{{Type: "bot_command", Offset: 0, Length: len(utf16.Encode([]rune(word)))}}
	}
	if m := c.byID[to]; m != nil {
		r := f.messageJSON(c, m)
		if file := f.docs[c.id][to]; file != nil {
			r["document"] = documentJSON(file)
		}
		j["reply_to_message"] = r
	}
	return f.queueMessage(c, j)
}

// FileDownloads counts the downloads of files that succeeded.
func (f *TelegramFake) FileDownloads() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.downloads
}

// getFile answers getFile for a file a user sent.
func (f *TelegramFake) getFile(p tgParams) (any, *tgErr) {
	file := f.files[p["file_id"]]
	if file == nil {
		return nil, badRequest("invalid file_id")
	}
	if len(file.data) > 20<<20 {
		return nil, badRequest("file is too big")
	}
	return map[string]any{"file_id": file.id, "file_unique_id": "u" + file.id, "file_size": len(file.data), "file_path": file.path}, nil
}

// serveFile serves /file/bot<token>/<path>, as Telegram's file endpoint.
func (f *TelegramFake) serveFile(w http.ResponseWriter, r *http.Request) {
	rest := strings.TrimPrefix(r.URL.Path, "/file/bot")
	token, path, ok := strings.Cut(rest, "/")
	if !ok || token != f.Token {
		http.Error(w, "Unauthorized", http.StatusUnauthorized)
		return
	}
	f.mu.Lock()
	var file *tgFile
	for _, fl := range f.files {
		if fl.path == path {
			file = fl
		}
	}
	if file != nil {
		f.downloads++
	}
	f.mu.Unlock()
	if file == nil {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.Itoa(len(file.data)))
	_, _ = w.Write(file.data)
}

// pathExt is name's extension, as Telegram keeps it in file paths.
func pathExt(name string) string {
	if i := strings.LastIndexByte(name, '.'); i >= 0 && len(name)-i <= 8 {
		return name[i:]
	}
	return ""
}

// ChangeDocument replaces the bytes of the document message msgID of
// chat carried: what a later download gets (a file changed on the
// platform's side after it was checked).
func (f *TelegramFake) ChangeDocument(chat string, msgID int, data []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.chat(chat)
	if file := f.docs[c.id][msgID]; file != nil {
		file.data = append([]byte(nil), data...)
		return
	}
	f.t.Fatalf("telegram fake: message %d of %s has no document", msgID, chat)
}

// Document is the document message msgID of chat carried, as the Bot
// API describes it: its file_id, name, type and size.
func (f *TelegramFake) Document(chat string, msgID int) (fileID, name, mimeType string, size int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	file := f.docs[f.chat(chat).id][msgID]
	if file == nil {
		f.t.Fatalf("telegram fake: message %d of %s has no document", msgID, chat)
		return "", "", "", 0
	}
	return file.id, file.name, file.mime, len(file.data)
}
