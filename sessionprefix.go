package gatehouse

import (
	"fmt"
	"slices"
	"strings"
	"sync"
)

// The platform table's session prefixes. Every chat platform's sessions
// start with its own prefix (tg_, dc_, sl_; FallbackSessionPrefix for a
// platform nobody registered), so the id alone says whether a session is
// a chat's. The table lives here, at the bottom of the house, because the
// kernel decides with it who may write a session (CheckEdgeSession), and
// the kernel must not import the gateway that fills it
// (gateway/chat.Register does, once per platform).

// FallbackSessionPrefix starts the sessions of a platform nobody
// registered.
const FallbackSessionPrefix = "px_"

var (
	sessionPrefixMu sync.RWMutex
	sessionPrefixes = map[string]string{} // platform name → prefix
)

// RegisterSessionPrefix records platform's session prefix. Registering
// the same pair again is harmless; a name or a prefix that would be
// shared is an error, since two platforms' sessions must never collide.
func RegisterSessionPrefix(platform, prefix string) error {
	sessionPrefixMu.Lock()
	defer sessionPrefixMu.Unlock()
	if platform == "" || prefix == "" || prefix == FallbackSessionPrefix {
		return fmt.Errorf("platform %q needs a name and its own session prefix, got %q", platform, prefix)
	}
	if old, ok := sessionPrefixes[platform]; ok && old != prefix {
		return fmt.Errorf("platform %q registered with session prefixes %q and %q", platform, old, prefix)
	}
	for name, px := range sessionPrefixes {
		if px == prefix && name != platform {
			return fmt.Errorf("platforms %q and %q share the session prefix %q", name, platform, px)
		}
	}
	sessionPrefixes[platform] = prefix
	return nil
}

// SessionPrefixOf is platform's registered session prefix.
func SessionPrefixOf(platform string) (string, bool) {
	sessionPrefixMu.RLock()
	defer sessionPrefixMu.RUnlock()
	px, ok := sessionPrefixes[platform]
	return px, ok
}

// SessionPlatforms lists the registered platforms' names, sorted.
func SessionPlatforms() []string {
	sessionPrefixMu.RLock()
	defer sessionPrefixMu.RUnlock()
	out := make([]string, 0, len(sessionPrefixes))
	for name := range sessionPrefixes {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// PlatformSession reports whether the session id belongs to a chat
// platform: it starts with a registered platform's session prefix
// (platform is that platform's name) or with FallbackSessionPrefix
// (platform is ""). It reads the platform table, so a new platform is
// covered once it registers.
func PlatformSession(id string) (platform string, ok bool) {
	sessionPrefixMu.RLock()
	defer sessionPrefixMu.RUnlock()
	for name, px := range sessionPrefixes {
		if strings.HasPrefix(id, px) {
			return name, true
		}
	}
	return "", strings.HasPrefix(id, FallbackSessionPrefix)
}

// CheckEdgeSession refuses, with an external-session error, a write from
// outside the platforms (the /v1 API, the OpenAI-compatible endpoint) to a
// session of a chat platform ([PlatformSession]). Such a session is
// written by its chat only: what is committed there is answered in that
// chat, so a write from elsewhere would speak to the chat's people in
// their agent's name. Reading it stays allowed.
func CheckEdgeSession(id string) error {
	platform, ok := PlatformSession(id)
	if !ok {
		return nil
	}
	if platform == "" {
		platform = "a chat platform"
	}
	return Errorf(CodeExternalSession, "session %q belongs to %s: only its chat writes to it; read it here, or send in that chat", id, platform)
}
