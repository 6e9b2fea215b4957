package telegram

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/gatehouse/gatehouse/internal/baseurl"
)

// apiURLForm is the form TELEGRAM_API_URL takes, said in every refusal.
const apiURLForm = `expected the Bot API server's base URL, like "https://api.telegram.org" (a trailing "/", "/bot" or "/bot<token>" is accepted)`

// tokenInPath finds a bot token in a URL, so that a refusal never
// repeats it.
var tokenInPath = regexp.MustCompile(`bot[0-9]+:[A-Za-z0-9_-]+`)

// serverURL turns the forms the Bot API's address is written in into
// the server URL go-telegram/bot puts "/bot<token>/<method>" after:
// "https://api.telegram.org", with a trailing "/", "/bot" or
// "/bot<token>" (the address of a method without the method, copied
// from Telegram's documentation), all become "https://api.telegram.org".
// Anything that cannot be a base URL, or names another bot's token, is
// refused, saying the form expected and never the token. An empty raw is
// https://api.telegram.org.
func serverURL(raw, token string) (string, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		raw = "https://api.telegram.org"
	}
	refuse := func(why string) (string, error) {
		shown := tokenInPath.ReplaceAllString(raw, "bot<token>")
		if token != "" {
			shown = strings.ReplaceAll(shown, token, "<token>")
		}
		return "", fmt.Errorf("telegram: API URL (TELEGRAM_API_URL) %q %s; %s", shown, why, apiURLForm)
	}
	u, why := baseurl.Parse(raw)
	if why != "" {
		return refuse(why)
	}
	switch path := strings.TrimRight(u.Path, "/"); {
	case path == "", path == "/bot", path == "/bot"+token:
	case strings.HasPrefix(path, "/bot") && !strings.Contains(path[1:], "/"):
		return refuse("names another bot's token")
	default:
		return refuse(fmt.Sprintf("has the path %q", tokenInPath.ReplaceAllString(u.Path, "bot<token>")))
	}
	return u.Scheme + "://" + u.Host, nil
}
