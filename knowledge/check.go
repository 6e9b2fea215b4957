package knowledge

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	gh "github.com/gatehouse/gatehouse"
)

// Checked is what Check found in a file the library would take.
type Checked struct {
	// MediaType is what the library reads the file as.
	MediaType string
	// Hash is the SHA-256 of the bytes, hex, as Add stores it.
	Hash string
	// Passages is how many passages Add would store.
	Passages int
	// First is the text of the first of them, whole (a card that asks to
	// add the file shows a bounded cut of it: what the agent would read
	// first); "" when there are none.
	First string
}

// Check reads a file as Add would — its size, its format, its text, its
// passages — and stores nothing: an upload that waits for an approver is
// refused at once, on the surface that sent it, when it could never be
// added. Its errors are Add's.
func (l *Library) Check(name, declared string, data []byte) (Checked, error) {
	name = strings.TrimSpace(name)
	if name == "" || len(name) > 1000 {
		return Checked{}, gh.Errorf(gh.CodeInvalid, "a document needs a name of at most 1000 bytes")
	}
	if int64(len(data)) > l.cfg.MaxDocumentBytes {
		return Checked{}, gh.Wrap(gh.CodePayloadTooLarge, ErrTooLarge, "%s: %d bytes, over the library's bound of %d", name, len(data), l.cfg.MaxDocumentBytes)
	}
	mt := mediaType(name, declared, data)
	x, err := extract(name, mt, data, l.cfg.MaxTextBytes)
	if err != nil {
		return Checked{}, err
	}
	sum := sha256.Sum256(data)
	pieces := split(x, l.cfg.PassageBytes, l.cfg.OverlapBytes)
	c := Checked{MediaType: mt, Hash: hex.EncodeToString(sum[:]), Passages: len(pieces)}
	if len(pieces) > 0 {
		c.First = x.text[pieces[0].start:pieces[0].end]
	}
	return c, nil
}
