package slackchat

import (
	"fmt"
	"net/url"
	"strings"
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
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return refuse("is not a URL")
	case u.Scheme != "http" && u.Scheme != "https":
		return refuse("has no http or https scheme")
	case u.Host == "" || u.Opaque != "":
		return refuse("has no host")
	case u.User != nil:
		return refuse("carries credentials")
	case u.RawQuery != "" || u.ForceQuery:
		return refuse("has a query string")
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return refuse("has a fragment")
	}
	switch strings.TrimRight(u.Path, "/") {
	case "", "/api":
	default:
		return refuse(fmt.Sprintf("has the path %q", u.Path))
	}
	return u.Scheme + "://" + u.Host + "/api/", nil
}
