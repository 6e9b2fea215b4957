// Package tgfiles is the Telegram fake's files: the documents users send,
// what getFile answers for them, and the Bot API's file endpoint
// (/file/bot<token>/<path>) that serves their bytes under the bot's token
// only.
package tgfiles

import (
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// File is a document a user sent.
type File struct {
	ID, Path, Name, MIME string
	Data                 []byte
}

// Store keeps the files users sent, by file_id and by the message that
// carried each.
type Store struct {
	token string

	mu        sync.Mutex
	byID      map[string]*File
	byMessage map[int64]map[int]*File
	next      int
	downloads int
}

// New is an empty store whose file endpoint takes token.
func New(token string) *Store {
	return &Store{token: token, byID: map[string]*File{}, byMessage: map[int64]map[int]*File{}}
}

// Add keeps the document message msgID of chat chatID carried.
func (s *Store) Add(chatID int64, msgID int, name, mime string, data []byte) File {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.next++
	n := strconv.Itoa(s.next)
	f := &File{ID: "BQACAgIAAx" + n, Path: "documents/file_" + n + ext(name), Name: name, MIME: mime, Data: append([]byte(nil), data...)}
	s.byID[f.ID] = f
	if s.byMessage[chatID] == nil {
		s.byMessage[chatID] = map[int]*File{}
	}
	s.byMessage[chatID][msgID] = f
	return *f
}

// Of is the document message msgID of chat chatID carried, if any.
func (s *Store) Of(chatID int64, msgID int) (File, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.byMessage[chatID][msgID]
	if f == nil {
		return File{}, false
	}
	return *f, true
}

// Change replaces the bytes of the document message msgID of chat chatID
// carried; false when it carried none.
func (s *Store) Change(chatID int64, msgID int, data []byte) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.byMessage[chatID][msgID]
	if f != nil {
		f.Data = append([]byte(nil), data...)
	}
	return f != nil
}

// Downloads counts the downloads that succeeded.
func (s *Store) Downloads() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.downloads
}

// DocumentJSON is the Bot API's Document object of f.
func DocumentJSON(f File) map[string]any {
	return map[string]any{"file_id": f.ID, "file_unique_id": "u" + f.ID, "file_name": f.Name, "mime_type": f.MIME, "file_size": len(f.Data)}
}

// GetFile is getFile's result for fileID, or Telegram's refusal.
func (s *Store) GetFile(fileID string) (result map[string]any, refusal string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.byID[fileID]
	switch {
	case f == nil:
		return nil, "invalid file_id"
	case len(f.Data) > 20<<20:
		return nil, "file is too big"
	}
	return map[string]any{"file_id": f.ID, "file_unique_id": "u" + f.ID, "file_size": len(f.Data), "file_path": f.Path}, ""
}

// ServeHTTP serves /file/bot<token>/<path>, as Telegram's file endpoint.
func (s *Store) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	token, path, ok := strings.Cut(strings.TrimPrefix(r.URL.Path, "/file/bot"), "/")
	if !ok || token != s.token {
		http.Error(w, "Unauthorized", http.StatusUnauthorized)
		return
	}
	s.mu.Lock()
	var data []byte
	found := false
	for _, f := range s.byID {
		if f.Path == path {
			data, found = f.Data, true
			s.downloads++
		}
	}
	s.mu.Unlock()
	if !found {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	_, _ = w.Write(data)
}

// ext is name's extension, as Telegram keeps it in file paths.
func ext(name string) string {
	if i := strings.LastIndexByte(name, '.'); i >= 0 && len(name)-i <= 8 {
		return name[i:]
	}
	return ""
}
