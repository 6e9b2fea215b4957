package slacktest

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// SayWithFile shares a file (name, mimetype, data) in chat as user, with
// text typed alongside it, and delivers the message event (subtype
// file_share) with the file's url_private_download on the fake's own
// host; it returns the event_id. The download needs the bot token as a
// bearer token, as Slack's does: anything else gets 401, and is refused.
func (f *SlackFake) SayWithFile(chat, user, text, name, mimetype string, data []byte) string {
	f.mu.Lock()
	uid := f.userLocked(user)
	f.seq++
	id := fmt.Sprintf("F%08d", f.seq)
	f.files[id] = append([]byte(nil), data...)
	f.mu.Unlock()
	return f.SayEvent(chat, map[string]any{
		"type": "message", "subtype": "file_share", "user": uid, "text": text, "upload": false,
		"files": []map[string]any{SlackFileJSON(id, name, mimetype, len(data), f.FileURL(id, name))},
	})
}

// FileURL is where the fake serves the file with this id and name.
func (f *SlackFake) FileURL(id, name string) string {
	return f.URL + "/files-pri/" + f.TeamID + "-" + id + "/download/" + url.PathEscape(name)
}

// SlackFileJSON is a message's file object as Slack sends it, with ref
// as both url_private and url_private_download.
func SlackFileJSON(id, name, mimetype string, size int, ref string) map[string]any {
	return map[string]any{
		"id": id, "name": name, "title": name, "mimetype": mimetype, "filetype": "binary",
		"size": size, "mode": "hosted", "is_external": false, "is_public": false,
		"url_private": ref, "url_private_download": ref,
	}
}

// serveFile serves a shared file's bytes to a request with the bot token.
func (f *SlackFake) serveFile(w http.ResponseWriter, r *http.Request) {
	rest := strings.TrimPrefix(r.URL.Path, "/files-pri/"+f.TeamID+"-")
	id, _, _ := strings.Cut(rest, "/")
	f.mu.Lock()
	data, ok := f.files[id]
	authed := r.Header.Get("Authorization") == "Bearer "+f.BotToken
	switch {
	case r.Method != http.MethodGet:
		f.refusalLocked("file download: %s %s", r.Method, r.URL.Path)
	case !authed:
		f.refusalLocked("file download of %s without the bot token", r.URL.Path)
	case !ok:
		f.refusalLocked("file download: no file %s", r.URL.Path)
	}
	f.mu.Unlock()
	switch {
	case r.Method != http.MethodGet:
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	case !authed:
		http.Error(w, "not authed", http.StatusUnauthorized)
	case !ok:
		http.NotFound(w, r)
	default:
		w.Header().Set("Content-Type", "application/octet-stream")
		_, _ = w.Write(data)
	}
}
