package chat

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	gh "github.com/gatehouse/gatehouse"
)

// ErrNotConfigured is what a [Platform]'s New returns when the setting
// that turns the platform on (its token) is empty: the binary then
// simply does not offer it.
var ErrNotConfigured = errors.New("not configured")

// Setting is one configuration value a platform needs: its environment
// variable, its config file key, its default and its help text (the row
// `gatehouse serve --help` prints and docs/configuration.md documents).
type Setting struct {
	Env, Key, Default, Help string
	// Secret marks a credential: tool output never carries its value.
	Secret bool
	// SecretParts, when set, returns pieces of a secret value that are
	// secrets on their own too (the half of a Telegram bot token after its
	// public bot id).
	SecretParts func(value string) []string
}

// Platform describes a chat platform to the binary: everything needed to
// offer it besides its adapter. Each adapter package exports one and
// registers it (see [Register]).
type Platform struct {
	// Name is the platform's name, [Adapter.Platform] of its adapter.
	Name string
	// SessionPrefix starts the id of every session of the platform's
	// chats (see [SessionFor]). Never change it: existing sessions are
	// found by it.
	SessionPrefix string
	// Settings are the platform's configuration values.
	Settings []Setting
	// Token is the Env of the setting that turns the platform on.
	Token string
	// Allowed is the Env of the setting listing the users allowed on the
	// platform (comma-separated ids, * for everyone).
	Allowed string
	// New builds the adapter from the settings' values, keyed by Env. It
	// returns [ErrNotConfigured] when the platform's token is empty.
	New func(values map[string]string, log *slog.Logger) (Adapter, error)
}

// fallbackPrefix starts the sessions of a platform nobody registered.
const fallbackPrefix = "px_"

var (
	registryMu sync.RWMutex
	prefixes   = map[string]string{}
)

// Register makes p's session prefix known to [SessionFor]. Adapter
// packages register their platform when they are imported; registering
// the same platform again is harmless. It panics when a name or a prefix
// would be shared, since two platforms' sessions must never collide.
func Register(p Platform) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if p.Name == "" || p.SessionPrefix == "" || p.SessionPrefix == fallbackPrefix {
		panic(fmt.Sprintf("gateway: platform %q needs a name and its own session prefix, got %q", p.Name, p.SessionPrefix))
	}
	if old, ok := prefixes[p.Name]; ok && old != p.SessionPrefix {
		panic(fmt.Sprintf("gateway: platform %q registered with session prefixes %q and %q", p.Name, old, p.SessionPrefix))
	}
	for name, px := range prefixes {
		if px == p.SessionPrefix && name != p.Name {
			panic(fmt.Sprintf("gateway: platforms %q and %q share the session prefix %q", name, p.Name, px))
		}
	}
	prefixes[p.Name] = p.SessionPrefix
}

// prefix is the session prefix of platform: the registered one, else
// fallbackPrefix.
func prefix(platform string) string {
	registryMu.RLock()
	defer registryMu.RUnlock()
	if px, ok := prefixes[platform]; ok {
		return px
	}
	return fallbackPrefix
}

// Registered reports whether platform is a registered chat platform.
func Registered(platform string) bool {
	registryMu.RLock()
	defer registryMu.RUnlock()
	_, ok := prefixes[platform]
	return ok
}

// RegisteredNames lists the registered platforms' names, sorted.
func RegisteredNames() []string {
	registryMu.RLock()
	defer registryMu.RUnlock()
	out := make([]string, 0, len(prefixes))
	for name := range prefixes {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// SessionFor is the session of a platform chat (and thread): derived, so
// every replica agrees without asking, and hashed, so the chat id does not
// appear in the log.
func SessionFor(platform, chatID, threadID string) string {
	h := sha256.Sum256([]byte(platform + "\x00" + chatID + "\x00" + threadID))
	return prefix(platform) + hex.EncodeToString(h[:10])
}

// MaxIDLen is the longest platform id (platform, update, chat, thread,
// user, message) the gateway takes, in bytes.
const MaxIDLen = 200

// CheckID checks that a platform id, named name in the error, is
// storable: valid text without NUL, at most MaxIDLen bytes.
func CheckID(name, v string) error {
	if len(v) > MaxIDLen || !utf8.ValidString(v) || strings.ContainsRune(v, 0) {
		return gh.Errorf(gh.CodeInvalid, "inbound %s must be valid text of at most %d bytes", name, MaxIDLen)
	}
	return nil
}

// PlatformSession reports whether the session id belongs to a chat
// platform: it starts with a registered platform's session prefix
// (platform is that platform's name) or with the prefix of sessions of
// platforms nobody registered (platform is ""). It reads the platform
// table, so a new platform is covered once it registers.
func PlatformSession(id string) (platform string, ok bool) {
	registryMu.RLock()
	defer registryMu.RUnlock()
	for name, px := range prefixes {
		if strings.HasPrefix(id, px) {
			return name, true
		}
	}
	return "", strings.HasPrefix(id, fallbackPrefix)
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
	return gh.Errorf(gh.CodeExternalSession, "session %q belongs to %s: only its chat writes to it; read it here, or send in that chat", id, platform)
}
