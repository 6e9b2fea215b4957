package toolworker

import (
	"encoding/base64"
	"net/url"
	"slices"
	"strings"
)

// Redacted replaces a secret's value in tool output.
const Redacted = "[redacted]"

// minSecretLen is the shortest value treated as a secret. Shorter values
// (a one-letter password in a test URL) would blank out ordinary words
// everywhere; no real key or token is this short.
const minSecretLen = 4

// Redactor replaces the values of the gateway's configured secrets (API
// tokens, model keys, passwords inside URLs) in text before it is
// committed. Isolating what tools run is the defense; this catches what
// leaks anyway — a remote server echoing a key, a command printing a file
// that holds one. The zero Redactor changes nothing.
type Redactor struct {
	r *strings.Replacer
}

// NewRedactor returns a redactor for secrets. Each secret is also matched
// in the forms it most often leaks in: URL-escaped and base64 (as in a
// Basic Authorization header). Empty and very short values are ignored.
func NewRedactor(secrets ...string) Redactor {
	seen := map[string]bool{}
	var forms []string
	add := func(s string) {
		if len(s) >= minSecretLen && !seen[s] {
			seen[s] = true
			forms = append(forms, s)
		}
	}
	for _, s := range secrets {
		s = strings.TrimSpace(s)
		if len(s) < minSecretLen {
			continue
		}
		add(s)
		add(url.QueryEscape(s))
		add(url.PathEscape(s))
		add(base64.StdEncoding.EncodeToString([]byte(s)))
		add(strings.TrimRight(base64.StdEncoding.EncodeToString([]byte(s)), "="))
		add(base64.URLEncoding.EncodeToString([]byte(s)))
	}
	if len(forms) == 0 {
		return Redactor{}
	}
	// Longest first: a secret that contains another is replaced whole.
	slices.SortFunc(forms, func(a, b string) int { return len(b) - len(a) })
	pairs := make([]string, 0, 2*len(forms))
	for _, f := range forms {
		pairs = append(pairs, f, Redacted)
	}
	return Redactor{r: strings.NewReplacer(pairs...)}
}

// Redact returns text with every secret replaced by [redacted].
func (r Redactor) Redact(text string) string {
	if r.r == nil {
		return text
	}
	return r.r.Replace(text)
}

// SecretsOfURL returns the password (and, for a token-style URL such as
// redis://:token@host, the user) held in a URL, for NewRedactor.
func SecretsOfURL(raw string) []string {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.User == nil {
		return nil
	}
	var out []string
	if p, ok := u.User.Password(); ok {
		out = append(out, p)
	} else if name := u.User.Username(); name != "" {
		// A URL with a user and no password carries a token as the user.
		out = append(out, name)
	}
	return out
}

// committable is tool output as it may be committed: the gateway's secrets
// redacted and NUL bytes shown as \x00. A log payload cannot hold NUL, and
// a command's output often does (/proc files, binary files): refusing the
// commit would leave an effect that ran with no result, reported later as
// "outcome unknown".
func (w *Worker) committable(text string) string {
	return strings.ReplaceAll(w.secrets.Redact(text), "\x00", `\x00`)
}
