// Package baseurl checks a configured base URL — a chat platform's API
// (TELEGRAM_API_URL, SLACK_API_URL, DISCORD_API_URL) or a model
// provider's (OPENAI_BASE_URL, ANTHROPIC_BASE_URL) — the one way all of
// them share: an http or https URL with a host and nothing that cannot
// belong to a base (credentials, a query, a fragment). What path each
// accepts, and how a refusal is worded and redacted, stays with its
// owner.
package baseurl

import (
	"net/url"
	"strings"
)

// Parse parses raw (trimmed) as a base URL. why is empty when it is one,
// else the reason it is not, as a clause ("has no host"), never quoting
// raw: it may hold a credential. u is nil only when raw is not a URL at
// all.
func Parse(raw string) (u *url.URL, why string) {
	raw = strings.TrimSpace(raw)
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return nil, "is not a URL"
	case u.Scheme != "http" && u.Scheme != "https":
		return u, "has no http or https scheme"
	case u.Host == "" || u.Opaque != "":
		return u, "has no host"
	case u.User != nil:
		return u, "carries credentials"
	case u.RawQuery != "" || u.ForceQuery:
		return u, "has a query string"
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return u, "has a fragment"
	}
	return u, ""
}
