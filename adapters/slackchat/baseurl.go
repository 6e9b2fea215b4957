package slackchat

import (
	"fmt"
	"strings"

	"github.com/gatehouse/gatehouse/internal/baseurl"
)

// apiURLForm is the form SLACK_API_URL takes, said in every refusal.
const apiURLForm = `expected Slack's base URL, like "https://slack.com" or, as slack-go writes it, "https://slack.com/api/"; a Slack-compatible server serving the Web API at its root is "http://HOST:PORT/"`

// apiEndpoint turns SLACK_API_URL into the Web API endpoint slack-go
// joins method names to (its APIURL, which must end in "/"). The table
// is docs/configuration.md's:
//
//   - Slack's own hosts (slack.com, slack-gov.com and their subdomains)
//     with no path, "/", "/api" or "/api/", with or without a scheme:
//     https://HOST/api/. Slack serves the Web API there only, so
//     "https://slack.com/" cannot mean the root.
//   - Any other host with the path "/api/" or "/": as given, the way
//     slack-go takes APIURL, so a server that serves at its root (slack-go's
//     own slacktest.GetAPIURL(), "http://127.0.0.1:PORT/") works unchanged.
//   - Any other host with no path or "/api": HOST/api/, Slack's layout.
//
// A run of trailing slashes counts as one. Anything else (another path,
// a query, credentials, no scheme on a host not Slack's) is refused,
// saying the form expected. An empty raw is https://slack.com.
func apiEndpoint(raw string) (string, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		raw = "https://slack.com"
	}
	refuse := func(why string) (string, error) {
		return "", fmt.Errorf("slack: API URL (SLACK_API_URL) %q %s; %s", raw, why, apiURLForm)
	}
	u, why := baseurl.Parse(raw)
	if why != "" && !strings.Contains(raw, "://") {
		// "slack.com" or "slack.com/api/": Slack's own host needs no
		// scheme, it is https; anyone else's does.
		if v, w := baseurl.Parse("https://" + raw); w == "" && slackHost(v.Hostname(), v.Port()) {
			u, why = v, ""
		}
	}
	if why != "" {
		return refuse(why)
	}
	path := strings.TrimRight(u.Path, "/")
	slash := len(path) < len(u.Path)
	if path != "" && path != "/api" {
		return refuse(fmt.Sprintf("has the path %q", u.Path))
	}
	if slackHost(u.Hostname(), u.Port()) {
		return "https://" + strings.ToLower(u.Hostname()) + "/api/", nil
	}
	if path == "" && slash {
		return u.Scheme + "://" + u.Host + "/", nil
	}
	return u.Scheme + "://" + u.Host + "/api/", nil
}

// slackHost reports whether host (on port, "" for the scheme's) is one
// of Slack's own: slack.com or slack-gov.com (GovSlack), or a subdomain
// of either (a workspace's or an Enterprise Grid's).
func slackHost(host, port string) bool {
	if port != "" && port != "443" {
		return false
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	for _, d := range []string{"slack.com", "slack-gov.com"} {
		if host == d || strings.HasSuffix(host, "."+d) {
			return true
		}
	}
	return false
}
