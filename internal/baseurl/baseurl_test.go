package baseurl_test

import (
	"testing"

	"github.com/gatehouse/gatehouse/internal/baseurl"
)

func TestParse(t *testing.T) {
	for raw, want := range map[string]string{
		"https://api.telegram.org":        "",
		" http://127.0.0.1:8081/api/ ":    "",
		"https://discord.com/api/v10":     "",
		"127.0.0.1:8081":                  "is not a URL",
		"api.openai.com/v1":               "has no http or https scheme",
		"ftp://example.org":               "has no http or https scheme",
		"https://":                        "has no host",
		"https://user:pw@slack.com":       "carries credentials",
		"https://slack.com/api?token=x":   "has a query string",
		"https://slack.com/api?":          "has a query string",
		"https://slack.com/api#x":         "has a fragment",
		"https://slack.com/api#":          "has a fragment",
		"https://slack.com/%zz":           "is not a URL",
		"http://[::1]:8080":               "",
		"https:opaque.example.org/api/v1": "has no host",
	} {
		u, why := baseurl.Parse(raw)
		if why != want || (why == "" && u == nil) {
			t.Errorf("%q: %v %q, want %q", raw, u, why, want)
		}
	}
}
