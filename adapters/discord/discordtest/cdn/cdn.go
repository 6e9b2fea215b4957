// Package cdn is the fake Discord's CDN: the bytes of the attachments
// users sent, served from the fake's own host as Discord serves them from
// cdn.discordapp.com, which needs no token.
package cdn

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
)

// Prefix is the path attachments are served under.
const Prefix = "/attachments/"

// Store holds attachments by path. Its zero value is ready.
type Store struct {
	mu    sync.Mutex
	files map[string][]byte
}

// Put stores data at path (under Prefix).
func (s *Store) Put(path string, data []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.files == nil {
		s.files = map[string][]byte{}
	}
	s.files[path] = append([]byte(nil), data...)
}

// Serve answers a GET of an attachment. refuse is told of what Discord
// would not see from a well-behaved client: another method, an unknown
// path, or a bot token sent to the CDN (which needs none: sending it
// there is a leak).
func (s *Store) Serve(w http.ResponseWriter, r *http.Request, refuse func(format string, args ...any)) {
	s.mu.Lock()
	data, ok := s.files[r.URL.Path]
	s.mu.Unlock()
	var why string
	switch {
	case r.Method != http.MethodGet:
		why = "method " + r.Method
	case r.Header.Get("Authorization") != "":
		why = "an Authorization header sent to the CDN"
	case !ok || !strings.HasPrefix(r.URL.Path, Prefix):
		why = "no such attachment"
	}
	if why != "" {
		refuse("CDN %s %s: %s", r.Method, r.URL.Path, why)
		http.Error(w, fmt.Sprintf("refused: %s", why), http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	_, _ = w.Write(data)
}
