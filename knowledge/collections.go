package knowledge

import "strings"

// Collections. The operator's shared collection is read by every chat;
// a chat's and a user's own collections only by that chat and that user.
const (
	// Shared is the operator's collection (the watched folder, the API,
	// /admin).
	Shared     = "shared"
	chatPrefix = "chat:"
	userPrefix = "user:"
)

// ChatCollection names the collection of one chat (its session).
func ChatCollection(sessionID string) string { return chatPrefix + sessionID }

// UserCollection names the collection of one person (their user key).
func UserCollection(userKey string) string { return userPrefix + userKey }

// Trusted reports whether a collection's text is the operator's: the
// shared collection is; what was uploaded from a chat is outside text.
func Trusted(collection string) bool { return collection == Shared }

// validCollection accepts Shared and the chat and user collections.
func validCollection(c string) bool {
	if c == Shared {
		return true
	}
	for _, p := range []string{chatPrefix, userPrefix} {
		if rest, ok := strings.CutPrefix(c, p); ok && rest != "" && len(c) <= 300 {
			return true
		}
	}
	return false
}

// Scope is who asks: a recall reads the shared collection, the chat's and
// the person's, and no other.
type Scope struct {
	// SessionID is the asking chat's session; empty reads no chat
	// collection.
	SessionID string
	// UserKey is the asking person; empty reads no user collection.
	UserKey string
}

// Collections are the collections the scope may read.
func (s Scope) Collections() []string {
	out := []string{Shared}
	if s.SessionID != "" {
		out = append(out, ChatCollection(s.SessionID))
	}
	if s.UserKey != "" {
		out = append(out, UserCollection(s.UserKey))
	}
	return out
}
