// Package filefetch downloads a file a chat message carried, the way
// every adapter must (chat.FileFetcher): only from the hosts the
// platform serves files from, redirects included, never more than the
// bound, the HTTP status turned into a typed error, and no error that
// quotes the URL (a Telegram file URL holds the bot's token).
package filefetch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"

	gh "github.com/gatehouse/gatehouse"
)

// maxRedirects bounds the redirects a download follows.
const maxRedirects = 5

// Request is one download.
type Request struct {
	// Client makes the request; redirects are checked against Allowed
	// on a copy of it. nil: http.DefaultClient.
	Client *http.Client
	// URL is the file's address.
	URL string
	// Allowed reports whether a URL (the first, and every redirect) is
	// one of the platform's file hosts. Required.
	Allowed func(*url.URL) bool
	// Header is sent with the request (a bearer token, only to allowed
	// hosts).
	Header http.Header
	// What names the file in errors ("slack file \"a.pdf\"").
	What string
	// Max is the most bytes taken; more is CodePayloadTooLarge, after
	// reading at most Max+1.
	Max int64
}

// Fetch downloads r's file: its bytes and the media type the server
// gave it.
func Fetch(ctx context.Context, r Request) ([]byte, string, error) {
	u, err := url.Parse(r.URL)
	if err != nil || !r.Allowed(u) {
		return nil, "", gh.Errorf(gh.CodeInvalid, "%s is not on the platform's file hosts; not fetched", r.What)
	}
	client := http.DefaultClient
	if r.Client != nil {
		client = r.Client
	}
	c := *client
	c.CheckRedirect = func(next *http.Request, via []*http.Request) error {
		if len(via) >= maxRedirects {
			return errors.New("too many redirects")
		}
		if !r.Allowed(next.URL) {
			return fmt.Errorf("redirected off the platform's file hosts to %s", next.URL.Host)
		}
		return nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, "", gh.Errorf(gh.CodeInvalid, "%s: its address does not make a request", r.What)
	}
	for k, vs := range r.Header {
		req.Header[k] = vs
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, "", gh.Wrap(gh.CodeUnavailable, withoutURL(err), "%s not fetched", r.What)
	}
	defer resp.Body.Close()
	if err := status(r.What, resp.StatusCode); err != nil {
		return nil, "", err
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	body, err := readAtMost(r.What, resp, r.Max)
	return body, mt, err
}

// withoutURL is err without the URL a *url.Error quotes.
func withoutURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("%s: %w", ue.Op, ue.Err)
	}
	return err
}

// status turns a download's HTTP status into a *gh.Error, nil for a 2xx.
func status(what string, code int) error {
	switch {
	case code >= 200 && code < 300:
		return nil
	case code == http.StatusTooManyRequests || code == http.StatusRequestTimeout || code >= 500:
		return gh.Errorf(gh.CodeUnavailable, "%s: HTTP %d; try again later", what, code)
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		return gh.Errorf(gh.CodeUnauthorized, "%s: HTTP %d; the bot may not download it", what, code)
	case code == http.StatusNotFound || code == http.StatusGone:
		return gh.Errorf(gh.CodeNotFound, "%s: HTTP %d; it is gone (or its link expired)", what, code)
	}
	return gh.Errorf(gh.CodeInvalid, "%s: HTTP %d", what, code)
}

// readAtMost reads resp's body, refusing more than max bytes (by its
// Content-Length, or after reading max+1).
func readAtMost(what string, resp *http.Response, max int64) ([]byte, error) {
	tooLarge := func(size string) error {
		return gh.Errorf(gh.CodePayloadTooLarge, "%s is %s bytes, over %d", what, size, max)
	}
	if resp.ContentLength > max {
		return nil, tooLarge(strconv.FormatInt(resp.ContentLength, 10))
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	if err != nil {
		return nil, gh.Wrap(gh.CodeUnavailable, withoutURL(err), "%s: reading it failed", what)
	}
	if int64(len(body)) > max {
		return nil, tooLarge("more than " + strconv.FormatInt(max, 10))
	}
	return body, nil
}
