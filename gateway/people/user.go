package people

import (
	"crypto/sha256"
	"encoding/hex"
)

// PseudonymousUserID is how the log names a platform user (for memory and budgets):
// hashed, because a Telegram user id is also the address of their private
// chat.
func PseudonymousUserID(platform, userID string) string {
	h := sha256.Sum256([]byte(platform + "\x00user\x00" + userID))
	return "u_" + hex.EncodeToString(h[:8])
}

// UserKey is the user key of a platform user, as the log names the person
// behind a message (gh.UserMessage.UserKey): the platform and the hashed
// user id ([PseudonymousUserID]).
func UserKey(platform, userID string) string {
	return platform + ":" + PseudonymousUserID(platform, userID)
}
