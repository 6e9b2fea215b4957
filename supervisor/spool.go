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
	if err := os.MkdirAll(s.cfg.SpoolDir, 0o755); err != nil {
		return err
	}
	raw, err := json.Marshal(spooled{SessionID: sessionID, Message: a})
	if err != nil {
		return err
	}
	path := s.spoolPath(sessionID, a.GenerationID)
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
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
