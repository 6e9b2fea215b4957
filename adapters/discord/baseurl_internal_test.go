package discord

import (
	"strings"
	"testing"
)

func TestAPIURLForms(t *testing.T) {
	for raw, want := range map[string]string{
		"":                                "https://discord.com",
		"https://discord.com":             "https://discord.com",
		"https://discord.com/":            "https://discord.com",
		"https://discord.com/api":         "https://discord.com",
		"https://discord.com/api/":        "https://discord.com",
		"https://discord.com/api/v10":     "https://discord.com",
		"https://discord.com/api/v9/":     "https://discord.com",
		" https://discord.com/api/v10/ ":  "https://discord.com",
		"http://127.0.0.1:8080":           "http://127.0.0.1:8080",
		"http://127.0.0.1:8080/api/v10/":  "http://127.0.0.1:8080",
		"https://canary.discord.com/api/": "https://canary.discord.com",
	} {
		u, err := normalizeAPIURL(raw)
		if err != nil || u.String() != want {
			t.Errorf("%q: %v, %v; want %s", raw, u, err, want)
		}
	}
}

func TestAPIURLRefusals(t *testing.T) {
	for _, raw := range []string{
		"discord.com",                         // no scheme
		"ftp://discord.com",                   // not http(s)
		"https://",                            // no host
		"https://discord.com/api/v10/gateway", // a route, not the base
		"https://discord.com/apis",
		"https://discord.com/v10",
		"https://discord.com/api?v=10",
		"https://discord.com/api#top",
		"https://user:pw@discord.com",
		"https://discord.com/api/vx",
		"mailto:bot@discord.com",
	} {
		_, err := normalizeAPIURL(raw)
		if err == nil {
			t.Errorf("%q was accepted", raw)
			continue
		}
		if !strings.Contains(err.Error(), "DISCORD_API_URL") || !strings.Contains(err.Error(), `"https://discord.com"`) {
			t.Errorf("%q: the refusal %q does not name the setting and the form expected", raw, err)
		}
	}
}
