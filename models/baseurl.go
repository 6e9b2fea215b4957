package models

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/gatehouse/gatehouse/internal/baseurl"
)

// The provider endpoints accept the forms their SDKs' documentation and
// common tools write, and refuse at start anything else, saying the
// expected form: a base URL that silently gains or lacks a path segment
// makes every request fail far from the setting that caused it.

// openAIBaseURL normalizes OPENAI_BASE_URL: the API root that /chat/completions
// hangs off, "https://api.openai.com/v1" or an OpenAI-compatible server's
// (http://127.0.0.1:11434/v1). A trailing slash is dropped; OpenAI's own
// host given without /v1 gets it (the SDK would call /chat/completions on
// the bare host); a URL ending in /chat/completions (the endpoint, not
// its root) is cut back to its root.
func openAIBaseURL(raw string) (string, error) {
	u, err := baseURL("OPENAI_BASE_URL", raw, "https://api.openai.com/v1 or http://127.0.0.1:11434/v1")
	if err != nil {
		return "", err
	}
	u.Path = strings.TrimSuffix(strings.TrimRight(u.Path, "/"), "/chat/completions")
	if u.Hostname() == "api.openai.com" && u.Path == "" {
		u.Path = "/v1"
	}
	return u.String(), nil
}

// anthropicBaseURL normalizes ANTHROPIC_BASE_URL: the host the SDK adds
// /v1/messages to, "https://api.anthropic.com". A trailing slash, /v1 or
// /v1/messages is dropped (given, the SDK would call /v1/v1/messages).
func anthropicBaseURL(raw string) (string, error) {
	u, err := baseURL("ANTHROPIC_BASE_URL", raw, "https://api.anthropic.com")
	if err != nil {
		return "", err
	}
	p := strings.TrimRight(u.Path, "/")
	p = strings.TrimSuffix(p, "/messages")
	p = strings.TrimSuffix(p, "/v1")
	u.Path = p
	return u.String(), nil
}

// baseURL parses an http(s) base URL with no query, fragment or
// credentials (internal/baseurl); want is the form the error suggests.
// The refusal shows the URL with any password redacted.
func baseURL(setting, raw, want string) (*url.URL, error) {
	u, why := baseurl.Parse(raw)
	switch {
	case u == nil:
		// The URL is not echoed: it may hold a key.
		return nil, fmt.Errorf("%s %s (want %s)", setting, why, want)
	case why != "":
		return nil, fmt.Errorf("%s %q %s: want an http(s) URL such as %s, with no query, fragment or credentials (the key goes in its own setting)", setting, u.Redacted(), why, want)
	}
	return u, nil
}
