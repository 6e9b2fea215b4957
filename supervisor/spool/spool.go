package spool

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"

	gh "github.com/gatehouse/gatehouse"
)

// Spool keeps answers in one directory. With no directory there is no
// spool: Save fails, Load finds nothing, Drop does nothing.
type Spool struct {
	dir string
}

// New returns the spool in dir ("" for none). Nothing is created until
// the first Save.
func New(dir string) *Spool { return &Spool{dir: dir} }

type spooled struct {
	SessionID string              `json:"sessionId"`
	Message   gh.AssistantMessage `json:"message"`
}

func (s *Spool) path(sessionID, gen string) string {
	h := sha256.Sum256([]byte(sessionID + "\x00" + gen))
	return filepath.Join(s.dir, hex.EncodeToString(h[:12])+".json")
}

// Save writes an answer atomically (a temporary file, then a rename).
func (s *Spool) Save(sessionID string, a gh.AssistantMessage) error {
	if s.dir == "" {
		return errors.New("no spool directory")
	}
	// A spooled answer is a piece of a conversation: the directory and its
	// files are the gateway user's alone, also in a spool directory left
	// wider by an older version.
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return err
	}
	if st, err := os.Stat(s.dir); err != nil {
		return err
	} else if st.Mode().Perm() != 0o700 {
		if err := os.Chmod(s.dir, 0o700); err != nil {
			return err
		}
	}
	raw, err := json.Marshal(spooled{SessionID: sessionID, Message: a})
	if err != nil {
		return err
	}
	path := s.path(sessionID, a.GenerationID)
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	// Exactly 0600: the umask may have narrowed it, and a .tmp an older
	// version left keeps its old mode through O_TRUNC.
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(raw); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// Load returns the spooled answer of a generation, if any.
func (s *Spool) Load(sessionID, gen string) (gh.AssistantMessage, bool) {
	if s.dir == "" {
		return gh.AssistantMessage{}, false
	}
	raw, err := os.ReadFile(s.path(sessionID, gen))
	if err != nil {
		return gh.AssistantMessage{}, false
	}
	var sp spooled
	if json.Unmarshal(raw, &sp) != nil || sp.SessionID != sessionID || sp.Message.GenerationID != gen {
		return gh.AssistantMessage{}, false
	}
	return sp.Message, true
}

// Drop removes a spooled answer once it is committed.
func (s *Spool) Drop(sessionID, gen string) {
	if s.dir != "" {
		_ = os.Remove(s.path(sessionID, gen))
	}
}
