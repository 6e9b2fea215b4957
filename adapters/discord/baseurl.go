package discord

import (
	"fmt"
	"net/url"

	"github.com/gatehouse/gatehouse/internal/baseurl"
	"regexp"
	"strings"
)

// apiURLForm is the form DISCORD_API_URL takes, said in every refusal.
const apiURLForm = `expected Discord's base URL, like "https://discord.com" (a trailing "/api", "/api/v10" or "/" is accepted)`

// apiSuffix is what Discord's libraries and docs put after the host:
// "/api" and "/api/v<n>". discordgo adds its own "/api/v9" to every
// call, so the base keeps none of it.
var apiSuffix = regexp.MustCompile(`/api(/v[0-9]+)?$`)

// normalizeAPIURL turns the forms Discord's URL is written in
// ("https://discord.com", ".../", ".../api", ".../api/v10/") into the
// scheme and host every REST call is rewritten to, and refuses anything
// that cannot be a base URL, saying the form expected. An empty raw is
// DefaultAPIURL.
func normalizeAPIURL(raw string) (*url.URL, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		raw = DefaultAPIURL
	}
	refuse := func(why string) (*url.URL, error) {
		return nil, fmt.Errorf("discord: API URL (DISCORD_API_URL) %q %s; %s", raw, why, apiURLForm)
	}
	u, why := baseurl.Parse(raw)
	if why != "" {
		return refuse(why)
	}
	path := apiSuffix.ReplaceAllString(strings.TrimRight(u.Path, "/"), "")
	if path != "" {
		return refuse(fmt.Sprintf("has the path %q", u.Path))
	}
	return &url.URL{Scheme: u.Scheme, Host: u.Host}, nil
}
