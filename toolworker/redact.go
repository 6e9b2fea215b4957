package toolworker

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
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
// in the forms it most often leaks in:
//   - URL-escaped (query and path escaping), with the hex digits of the
//     percent-escapes in upper and in lower case;
//   - inside a JSON string: as json.Marshal writes it (with and without
//     HTML escaping), with non-ASCII written as \uXXXX, and each of these
//     with "/" written as "\/";
//   - base64, standard and URL alphabets, at each of the three alignments
//     the secret can have inside the encoded data. A secret is rarely
//     encoded alone: a Basic Authorization header encodes "user:" before
//     it and SMTP AUTH PLAIN "\x00user\x00", and the characters that hold
//     the secret's bits then depend on where it starts modulo 3.
//
// Empty and very short values are ignored.
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
		for _, e := range []string{url.QueryEscape(s), url.PathEscape(s)} {
			add(e)
			add(lowerHexEscapes(e))
		}
		for _, j := range jsonForms(s) {
			add(j)
			add(strings.ReplaceAll(j, "/", `\/`))
		}
		add(base64.StdEncoding.EncodeToString([]byte(s)))
		add(strings.TrimRight(base64.StdEncoding.EncodeToString([]byte(s)), "="))
		add(base64.URLEncoding.EncodeToString([]byte(s)))
		for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
			for k := range 3 {
				if f := base64Core(enc, k, s); len(f) >= minBase64Form {
					add(f)
				}
			}
		}
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

// minBase64Form is the shortest base64 fragment matched: shorter ones
// would turn up in ordinary text by chance.
const minBase64Form = 4

// base64Core returns the base64 characters (no padding) that encode s
// when s starts k bytes (0, 1 or 2) after a 3-byte boundary of the
// encoded data, keeping only the characters made of s's bits alone: the
// leading ones that also hold bits of the k bytes before s, and the
// trailing one that would hold bits of whatever follows, are dropped.
func base64Core(enc *base64.Encoding, k int, s string) string {
	data := make([]byte, k+len(s)) // k filler bytes, then s
	copy(data[k:], s)
	e := enc.EncodeToString(data)
	// Character i holds bits [6i, 6i+6) of data; s's bits are
	// [8k, 8(k+len(s))).
	start := (8*k + 5) / 6
	end := 8 * (k + len(s)) / 6
	if start >= end {
		return ""
	}
	return e[start:end]
}

// lowerHexEscapes returns a percent-escaped string with the hex digits of
// its escapes in lower case ("%2f"), as some encoders write them.
func lowerHexEscapes(s string) string {
	b := []byte(s)
	for i := 0; i+2 < len(b); i++ {
		if b[i] == '%' {
			for j := i + 1; j <= i+2; j++ {
				if b[j] >= 'A' && b[j] <= 'F' {
					b[j] += 'a' - 'A'
				}
			}
			i += 2
		}
	}
	return string(b)
}

// jsonForms returns s as it appears between the quotes of a JSON string,
// as the usual encoders write it: json.Marshal (which escapes <, > and &),
// without HTML escaping, and with every non-ASCII character as \uXXXX
// (Python's default).
func jsonForms(s string) []string {
	var out []string
	if b, err := json.Marshal(s); err == nil {
		out = append(out, string(b[1:len(b)-1]))
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err == nil {
		plain := strings.TrimSuffix(buf.String(), "\n")
		plain = plain[1 : len(plain)-1]
		out = append(out, plain)
		var a strings.Builder
		for _, r := range plain {
			switch {
			case r < utf8.RuneSelf:
				a.WriteRune(r)
			case r > 0xFFFF:
				r1, r2 := utf16.EncodeRune(r)
				fmt.Fprintf(&a, `\u%04x\u%04x`, r1, r2)
			default:
				fmt.Fprintf(&a, `\u%04x`, r)
			}
		}
		out = append(out, a.String())
	}
	return out
}

// Redact returns text with every secret replaced by [redacted].
func (r Redactor) Redact(text string) string {
	if r.r == nil {
		return text
	}
	return r.r.Replace(text)
}

// SecretsOfURL returns the secrets held in a connection string, for
// NewRedactor:
//   - in a URL: the password; the user of a redis:// or rediss:// URL
//     with a user and no password (redis://token@host, a token-style
//     URL), and no other bare user name, which is not a secret; and the
//     values of query parameters whose name holds pass, token, secret, key
//     or auth in any case (?password=, ?api_key=, ?sslpassword=).
//   - in a keyword/value string (a Postgres DSN such as
//     "host=db user=u password='x y'"): the values of the keywords named
//     by the same rule.
func SecretsOfURL(raw string) []string {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return nil
	}
	if !strings.Contains(raw, "://") {
		return secretsOfDSN(raw)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil
	}
	var out []string
	if u.User != nil {
		if p, ok := u.User.Password(); ok {
			out = append(out, p)
		} else if name := u.User.Username(); name != "" && (u.Scheme == "redis" || u.Scheme == "rediss") {
			// redis://token@host: the user is the token.
			out = append(out, name)
		}
	}
	for name, values := range u.Query() {
		if secretName(name) {
			out = append(out, values...)
		}
	}
	return out
}

// secretName reports whether a parameter or keyword named name holds a
// secret.
func secretName(name string) bool {
	name = strings.ToLower(name)
	for _, w := range []string{"pass", "token", "secret", "key", "auth"} {
		if strings.Contains(name, w) {
			return true
		}
	}
	return false
}

// secretsOfDSN returns the values of the secret keywords of a libpq
// keyword/value connection string: key = value pairs separated by spaces,
// a value in single quotes when it holds spaces, with \' and \\ escaped
// by a backslash.
func secretsOfDSN(s string) []string {
	var out []string
	isSpace := func(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v' }
	i := 0
	skip := func() {
		for i < len(s) && isSpace(s[i]) {
			i++
		}
	}
	for {
		skip()
		if i >= len(s) {
			return out
		}
		k := i
		for i < len(s) && s[i] != '=' && !isSpace(s[i]) {
			i++
		}
		key := s[k:i]
		skip()
		if i >= len(s) || s[i] != '=' {
			return out // not a keyword/value string
		}
		i++
		skip()
		var v strings.Builder
		if i < len(s) && s[i] == '\'' {
			i++
			for i < len(s) && s[i] != '\'' {
				if s[i] == '\\' && i+1 < len(s) {
					i++
				}
				v.WriteByte(s[i])
				i++
			}
			i++ // the closing quote
		} else {
			for i < len(s) && !isSpace(s[i]) {
				if s[i] == '\\' && i+1 < len(s) {
					i++
				}
				v.WriteByte(s[i])
				i++
			}
		}
		if secretName(key) {
			out = append(out, v.String())
		}
	}
}

// committable is tool output as it may be committed: the gateway's secrets
// redacted and NUL bytes shown as \x00. A log payload cannot hold NUL, and
// a command's output often does (/proc files, binary files): refusing the
// commit would leave an effect that ran with no result, reported later as
// "outcome unknown".
func (w *Worker) committable(text string) string {
	return strings.ReplaceAll(w.secrets.Redact(text), "\x00", `\x00`)
}
