package slackchat

import (
	"fmt"
	"strings"

	"github.com/gatehouse/gatehouse/internal/baseurl"
)

// apiURLForm is the form SLACK_API_URL takes, said in every refusal.
const apiURLForm = `expected Slack's base URL, like "https://slack.com" or, as slack-go writes it, "https://slack.com/api/"`

// apiEndpoint turns the forms Slack's URL is written in into the Web API
// endpoint slack-go joins method names to: "https://slack.com",
// "https://slack.com/", "https://slack.com/api" and
// "https://slack.com/api/" all become "https://slack.com/api/" (the
// trailing slash is required). Anything that cannot be a base URL is
// refused, saying the form expected. An empty raw is https://slack.com.
func apiEndpoint(raw string) (string, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		raw = "https://slack.com"
	}
	refuse := func(why string) (string, error) {
		return "", fmt.Errorf("slack: API URL (SLACK_API_URL) %q %s; %s", raw, why, apiURLForm)
	}
	u, why := baseurl.Parse(raw)
	if why != "" {
		return refuse(why)
	}
	switch strings.TrimRight(u.Path, "/") {
	case "", "/api":
	default:
		return refuse(fmt.Sprintf("has the path %q", u.Path))
	}
	return u.Scheme + "://" + u.Host + "/api/", nil
}
