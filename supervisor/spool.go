package supervisor

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"

	gh "github.com/gatehouse/gatehouse"
)

// The spool keeps an answer the database refused to save, in a file of the
// data directory, so the answer the user paid for is not lost with the
// attempt: the run's next attempt finds it under the same generation and
// commits it (once: the generation id is its key) instead of asking the
// model again.

type spooled struct {
	SessionID string              `json:"sessionId"`
	Message   gh.AssistantMessage `json:"message"`
}

func (s *Supervisor) spoolPath(sessionID, gen string) string {
	h := sha256.Sum256([]byte(sessionID + "\x00" + gen))
	return filepath.Join(s.cfg.SpoolDir, hex.EncodeToString(h[:12])+".json")
}

// spool writes an answer atomically (a temporary file, then a rename).
func (s *Supervisor) spool(sessionID string, a gh.AssistantMessage) error {
	if s.cfg.SpoolDir == "" {
		return errors.New("no spool directory")
	}
	// A spooled answer is a piece of a conversation: the directory and its
	// files are the gateway user's alone, also in a spool directory left
	// wider by an older version.
	if err := os.MkdirAll(s.cfg.SpoolDir, 0o700); err != nil {
		return err
	}
	if st, err := os.Stat(s.cfg.SpoolDir); err != nil {
		return err
	} else if st.Mode().Perm() != 0o700 {
		if err := os.Chmod(s.cfg.SpoolDir, 0o700); err != nil {
			return err
		}
	}
	raw, err := json.Marshal(spooled{SessionID: sessionID, Message: a})
	if err != nil {
		return err
	}
	path := s.spoolPath(sessionID, a.GenerationID)
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

// unspool returns the spooled answer of a generation, if any.
func (s *Supervisor) unspool(sessionID, gen string) (gh.AssistantMessage, bool) {
	if s.cfg.SpoolDir == "" {
		return gh.AssistantMessage{}, false
	}
	raw, err := os.ReadFile(s.spoolPath(sessionID, gen))
	if err != nil {
		return gh.AssistantMessage{}, false
	}
	var sp spooled
	if json.Unmarshal(raw, &sp) != nil || sp.SessionID != sessionID || sp.Message.GenerationID != gen {
		return gh.AssistantMessage{}, false
	}
	return sp.Message, true
}

// dropSpool removes a spooled answer once it is committed.
func (s *Supervisor) dropSpool(sessionID, gen string) {
	if s.cfg.SpoolDir != "" {
		_ = os.Remove(s.spoolPath(sessionID, gen))
	}
}
