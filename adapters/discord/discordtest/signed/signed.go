// Package signed makes the requests Discord sends to an application's
// HTTP interactions endpoint: the body signed with the application's
// Ed25519 key over X-Signature-Timestamp followed by the body, or one of
// the forgeries Discord sends on purpose to check the endpoint refuses
// them. It holds no state; discordtest sends with it.
package signed

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"
)

// Forgery says how a request departs from a genuine one.
type Forgery int

const (
	// Genuine is signed with the application's key.
	Genuine Forgery = iota
	// WrongKey is signed with another key.
	WrongKey
	// Tampered is signed, then its body changed.
	Tampered
	// Unsigned has no signature headers.
	Unsigned
)

func (f Forgery) String() string {
	switch f {
	case Genuine:
		return "genuine"
	case WrongKey:
		return "signed with another key"
	case Tampered:
		return "body changed after signing"
	case Unsigned:
		return "unsigned"
	}
	return "forgery " + strconv.Itoa(int(f))
}

// Request is body as Discord would send it at at, departing from a
// genuine request as forgery says: the body to send and its headers.
func Request(key ed25519.PrivateKey, body []byte, at time.Time, forgery Forgery) ([]byte, http.Header) {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", "Discord-Interactions/1.0 (+https://discord.com)")
	if forgery == Unsigned {
		return body, h
	}
	ts := strconv.FormatInt(at.Unix(), 10)
	if forgery == WrongKey {
		_, key, _ = ed25519.GenerateKey(rand.Reader)
	}
	sig := ed25519.Sign(key, append([]byte(ts), body...))
	h.Set("X-Signature-Ed25519", hex.EncodeToString(sig))
	h.Set("X-Signature-Timestamp", ts)
	if forgery == Tampered {
		body = append(bytes.Clone(body), ' ')
	}
	return body, h
}

// Answer is what the endpoint answered.
type Answer struct {
	Status      int
	ContentType string
	Body        []byte
}

// Post sends body with header to url and reads the answer. err is set
// when no answer came (refused connection, ctx ended).
func Post(ctx context.Context, client *http.Client, url string, body []byte, header http.Header) (Answer, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return Answer{}, err
	}
	req.Header = header.Clone()
	resp, err := client.Do(req)
	if err != nil {
		return Answer{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return Answer{}, err
	}
	return Answer{Status: resp.StatusCode, ContentType: resp.Header.Get("Content-Type"), Body: b}, nil
}

// CheckEndpoint does what the developer portal does before it saves an
// Interactions Endpoint URL, sending with post: the PING ping signed with
// the application's key must be answered 200 {"type":1}, and badly
// signed ones (another key, a changed body, no signature) 401. It returns
// what failed.
func CheckEndpoint(ping []byte, post func(body []byte, forgery Forgery) (Answer, error)) error {
	var errs []error
	for _, forgery := range []Forgery{Genuine, WrongKey, Tampered, Unsigned} {
		ans, err := post(ping, forgery)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("%s PING: %w", forgery, err))
		case forgery != Genuine && ans.Status != http.StatusUnauthorized:
			errs = append(errs, fmt.Errorf("%s PING answered %d, want 401", forgery, ans.Status))
		case forgery == Genuine:
			if typ, _, err := ans.Response(); err != nil || typ != 1 {
				errs = append(errs, fmt.Errorf("genuine PING answered %d %q, want 200 {\"type\":1}", ans.Status, ans.Body))
			}
		}
	}
	return errors.Join(errs...)
}

// Response reads an answer as an interaction response: its type and
// data.content.
func (a Answer) Response() (typ int, content string, err error) {
	var resp struct {
		Type *int `json:"type"`
		Data struct {
			Content string `json:"content"`
		} `json:"data"`
	}
	if a.Status != http.StatusOK || json.Unmarshal(a.Body, &resp) != nil || resp.Type == nil {
		return 0, "", fmt.Errorf("answered %d %q, not an interaction response", a.Status, a.Body)
	}
	return *resp.Type, resp.Data.Content, nil
}
