package slackchat

import (
	"strings"
	"testing"
)

func TestAPIURLForms(t *testing.T) {
	for raw, want := range map[string]string{
		"":                              "https://slack.com/api/",
		"https://slack.com":             "https://slack.com/api/",
		"https://slack.com/":            "https://slack.com/api/",
		"https://slack.com/api":         "https://slack.com/api/",
		"https://slack.com/api/":        "https://slack.com/api/",
		"https://slack-gov.com/api/":    "https://slack-gov.com/api/",
		"http://127.0.0.1:8080/api//":   "http://127.0.0.1:8080/api/",
		"  http://127.0.0.1:8080/api  ": "http://127.0.0.1:8080/api/",
	} {
		got, err := apiEndpoint(raw)
		if err != nil || got != want {
			t.Errorf("%q: %q, %v; want %s", raw, got, err, want)
		}
	}
}

func TestAPIURLRefusals(t *testing.T) {
	for _, raw := range []string{
		"slack.com/api/",             // no scheme
		"ws://slack.com",             // not http(s)
		"https:///api/",              // no host
		"https://slack.com/api/api/", // the doubled form this refusal exists for
		"https://slack.com/api/chat.postMessage",
		"https://slack.com/apis",
		"https://slack.com/api/?token=xoxb",
		"https://slack.com/api/#x",
		"https://u:p@slack.com/api/",
	} {
		_, err := apiEndpoint(raw)
		if err == nil {
			t.Errorf("%q was accepted", raw)
			continue
		}
		if !strings.Contains(err.Error(), "SLACK_API_URL") || !strings.Contains(err.Error(), `"https://slack.com/api/"`) {
			t.Errorf("%q: the refusal %q does not name the setting and the form expected", raw, err)
		}
	}
}
