package main

import (
	"github.com/gatehouse/gatehouse/cmd/gatehouse/internal/config"
	"strings"
	"testing"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/gateway/chat"
)

// Session ids are derived from the platform: its prefix must never change,
// or existing sessions would be lost.
func TestPlatformSessionPrefixesStay(t *testing.T) {
	for platform, want := range map[string]string{gh.PlatformTelegram: "tg_", gh.PlatformDiscord: "dc_", gh.PlatformSlack: "sl_", "elsewhere": "px_"} {
		if got := chat.SessionFor(platform, "42", ""); !strings.HasPrefix(got, want) || len(got) != len(want)+20 {
			t.Errorf("%s: session %q, want prefix %q", platform, got, want)
		}
	}
}

// A platform starts only when its token is set, and says what is missing.
func TestAdaptersStartWithTheirToken(t *testing.T) {
	c, err := loadConfig("", env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if as, err := newAdapters(c, nil); err != nil || len(as) != 0 {
		t.Fatalf("no token: %v %v", as, err)
	}
	c, err = loadConfig("", env(map[string]string{"SLACK_BOT_TOKEN": "xoxb-1"}))
	if err != nil {
		t.Fatal(err)
	}
	_, err = newAdapters(c, nil)
	if err == nil || err.Error() != "slack: set SLACK_APP_TOKEN (Socket Mode) or SLACK_SIGNING_SECRET (Events API at /hooks/slack)" {
		t.Fatalf("slack without a mode: %v", err)
	}
}

// With no platform on, the admin page says how to turn one on: by the
// token setting of every platform offered, each a real setting whose
// value alone makes newAdapters try to start it.
func TestNoPlatformHintNamesEachPlatformsToken(t *testing.T) {
	hint := noPlatformHint()
	for _, p := range config.Platforms {
		if p.Token == "" || !strings.Contains(hint, p.Token) {
			t.Errorf("%s: token %q missing from the hint %q", p.Name, p.Token, hint)
		}
		c, err := loadConfig("", env(map[string]string{p.Token: "x"}))
		if err != nil {
			t.Fatal(err)
		}
		if as, err := newAdapters(c, nil); len(as) == 0 && err == nil {
			t.Errorf("%s: %s set, yet newAdapters neither started it nor said what is missing", p.Name, p.Token)
		}
	}
}
