package chat

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"strings"
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

// Register makes p's session prefix known to [SessionFor] and to the
// platform table the kernel reads (gh.RegisterSessionPrefix). Adapter
// packages register their platform when they are imported; registering
// the same platform again is harmless. It panics when a name or a prefix
// would be shared, since two platforms' sessions must never collide.
func Register(p Platform) {
	if err := gh.RegisterSessionPrefix(p.Name, p.SessionPrefix); err != nil {
		panic("gateway: " + err.Error())
	}
}

// prefix is the session prefix of platform: the registered one, else
// gh.FallbackSessionPrefix.
func prefix(platform string) string {
	if px, ok := gh.SessionPrefixOf(platform); ok {
		return px
	}
	return gh.FallbackSessionPrefix
}

// Registered reports whether platform is a registered chat platform.
func Registered(platform string) bool {
	_, ok := gh.SessionPrefixOf(platform)
	return ok
}

// RegisteredNames lists the registered platforms' names, sorted.
func RegisteredNames() []string { return gh.SessionPlatforms() }

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
