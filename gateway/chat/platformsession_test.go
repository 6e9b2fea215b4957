package chat_test

import (
	"strings"
	"testing"

	gh "github.com/gatehouse/gatehouse"
	// The table as the binary fills it: every adapter registers itself.
	_ "github.com/gatehouse/gatehouse/adapters/discord"
	_ "github.com/gatehouse/gatehouse/adapters/slackchat"
	_ "github.com/gatehouse/gatehouse/adapters/telegram"
	"github.com/gatehouse/gatehouse/gateway/chat"
)

// Every registered platform's sessions, and those of a platform nobody
// registered (px_), are platform sessions, refused to the edges with
// external-session; the ids the API, the web chat and the OpenAI endpoint
// make, and ordinary client ids, are not.
func TestPlatformSession(t *testing.T) {
	names := chat.RegisteredNames()
	for _, want := range []string{gh.PlatformTelegram, gh.PlatformDiscord, gh.PlatformSlack} {
		if !chat.Registered(want) {
			t.Fatalf("%s is not registered (registered: %v)", want, names)
		}
	}
	for _, platform := range append(names, "elsewhere") {
		id := chat.SessionFor(platform, "42", "thread")
		got, ok := gh.PlatformSession(id)
		wantName := platform
		if !chat.Registered(platform) {
			wantName = ""
		}
		if !ok || got != wantName {
			t.Errorf("PlatformSession(%s) = %q %v, want %q true", id, got, ok, wantName)
		}
		err := gh.CheckEdgeSession(id)
		if !gh.IsCode(err, gh.CodeExternalSession) || !strings.Contains(gh.ErrorMessage(err), id) {
			t.Errorf("CheckEdgeSession(%s) = %v, want external-session naming it", id, err)
		}
	}
	for _, id := range []string{
		"s1", "support-42", "9d1c6c1e2f3a4b5c6d7e8f9011223344", // a client's; the API's own (hex)
		"oai_6f0c08d0b2e7796f21946f0c08d0b2e7", // the OpenAI endpoint's from a user field
		"TG_6f0c08d0b2e7796f2194", "xtg_1", "tg", "px", "dc-1", "",
	} {
		if p, ok := gh.PlatformSession(id); ok {
			t.Errorf("PlatformSession(%q) = %q true, want no platform's", id, p)
		}
		if err := gh.CheckEdgeSession(id); err != nil {
			t.Errorf("CheckEdgeSession(%q) = %v, want nil", id, err)
		}
	}
}
