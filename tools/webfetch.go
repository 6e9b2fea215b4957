package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"
)

// NameWebFetch is the name of the web fetch tool.
const NameWebFetch = "web_fetch"

// WebFetchConfig configures web_fetch.
type WebFetchConfig struct {
	// Client makes the requests. Defaults to a client with no proxy that
	// connects only to public addresses (see AllowPrivateNetworks). A
	// Client given here is used as it is: the address check is then its
	// owner's business.
	Client *http.Client
	// MaxBytes caps how much of a response body is read; a longer page is
	// cut and the result says so. Defaults to 1 MiB.
	MaxBytes int64
	// Timeout bounds one fetch, body included. Defaults to 15s.
	Timeout time.Duration
	// AllowPrivateNetworks lets the default client reach loopback, private,
	// link-local and other non-public addresses. Defaults to false: a safe
	// tool runs without a person's approval, so a page or a prompt must not
	// be able to make it read the gateway's own admin endpoints, a cloud
	// metadata service or the LAN.
	AllowPrivateNetworks bool
	// UserAgent is sent with each request. Defaults to "Gatehouse web_fetch".
	UserAgent string
}

// WebFetch is the web_fetch tool: GET one http(s) URL and return its text.
type WebFetch struct {
	cfg WebFetchConfig
}

// NewWebFetch returns web_fetch with cfg.
func NewWebFetch(cfg WebFetchConfig) *WebFetch {
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = 1 << 20
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 15 * time.Second
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = "Gatehouse web_fetch"
	}
	if cfg.Client == nil {
		cfg.Client = newFetchClient(cfg.AllowPrivateNetworks)
	}
	return &WebFetch{cfg: cfg}
}

func newFetchClient(allowPrivate bool) *http.Client {
	d := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	if !allowPrivate {
		// The check runs on the address actually dialled, after DNS, so a
		// name that resolves to 127.0.0.1 (or changes its answer between
		// two lookups) cannot slip through; redirects are dialled the same way.
		d.ControlContext = func(_ context.Context, network, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("web_fetch: cannot check address %q: %v", address, err)
			}
			if reason := nonPublic(ap.Addr()); reason != "" {
				return &refusedAddrError{addr: ap.Addr(), reason: reason}
			}
			return nil
		}
	}
	tr := &http.Transport{
		Proxy:                 nil, // no proxy from the environment: the package reads none
		DialContext:           d.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          10,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 15 * time.Second,
	}
	return &http.Client{
		Transport: tr,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= 5 {
				return errors.New("stopped after 5 redirects")
			}
			if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
				return fmt.Errorf("refused a redirect to a %s: URL", req.URL.Scheme)
			}
			return nil
		},
	}
}

type refusedAddrError struct {
	addr   netip.Addr
	reason string
}

func (e *refusedAddrError) Error() string {
	return fmt.Sprintf("refused to connect to %s: it is a %s address, and web_fetch reaches only public addresses", e.addr, e.reason)
}

// nonPublic says what kind of non-public address a is, or "" for a public one.
func nonPublic(a netip.Addr) string {
	a = a.Unmap()
	switch {
	case a.IsLoopback():
		return "loopback"
	case a.IsPrivate():
		return "private"
	case a.IsLinkLocalUnicast(), a.IsLinkLocalMulticast():
		return "link-local"
	case a.IsUnspecified():
		return "unspecified"
	case a.IsMulticast(), a.IsInterfaceLocalMulticast():
		return "multicast"
	}
	for _, p := range reservedPrefixes {
		if p.Contains(a) {
			return "reserved"
		}
	}
	return ""
}

var reservedPrefixes = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"), // carrier-grade NAT
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("64:ff9b::/96"), // NAT64 can reach IPv4 private space
	netip.MustParsePrefix("64:ff9b:1::/48"),
}

// Name implements Tool.
func (t *WebFetch) Name() string { return NameWebFetch }

// Description implements Tool.
func (t *WebFetch) Description() string {
	return fmt.Sprintf("Fetch a web page (http or https, GET) and return its text, at most %d bytes.", t.cfg.MaxBytes)
}

// Schema implements Tool.
func (t *WebFetch) Schema() json.RawMessage {
	return json.RawMessage(`{
  "type": "object",
  "properties": {
    "url": {"type": "string", "description": "The http:// or https:// URL to fetch."}
  },
  "required": ["url"],
  "additionalProperties": false
}`)
}

// Tier implements Tool: a GET only reads.
func (t *WebFetch) Tier() Tier { return Safe }

// Runnable implements Tool.
func (t *WebFetch) Runnable() error { return nil }

// Idempotent implements Tool: a GET has no effect to repeat.
func (t *WebFetch) Idempotent() bool { return true }

// Run implements Tool.
func (t *WebFetch) Run(ctx context.Context, call Call) (Result, error) {
	var a struct {
		URL string `json:"url"`
	}
	if err := json.Unmarshal(call.Arguments, &a); err != nil {
		return errorResult("web_fetch: bad arguments: %v", err), nil
	}
	u, err := url.Parse(strings.TrimSpace(a.URL))
	if err != nil {
		return errorResult("web_fetch: %q is not a URL: %v", a.URL, err), nil
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return errorResult("web_fetch: refused: only http and https URLs can be fetched, not %q", u.Scheme+":"), nil
	}
	if u.Host == "" {
		return errorResult("web_fetch: %q has no host", a.URL), nil
	}

	fctx, cancel := context.WithTimeout(ctx, t.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(fctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return errorResult("web_fetch: %v", err), nil
	}
	req.Header.Set("User-Agent", t.cfg.UserAgent)
	req.Header.Set("Accept", "text/html, text/plain;q=0.9, application/json;q=0.8, */*;q=0.5")
	resp, err := t.cfg.Client.Do(req)
	if err != nil {
		return t.failure(ctx, fctx, u, err)
	}
	defer resp.Body.Close()

	body, err := io.ReadAll(io.LimitReader(resp.Body, t.cfg.MaxBytes+1))
	if err != nil {
		return t.failure(ctx, fctx, u, err)
	}
	truncated := int64(len(body)) > t.cfg.MaxBytes
	if truncated {
		body = body[:t.cfg.MaxBytes]
		// Do not cut a UTF-8 sequence in half.
		for i := 0; i < utf8.UTFMax-1 && len(body) > 0; i++ {
			if r, size := utf8.DecodeLastRune(body); r != utf8.RuneError || size != 1 {
				break
			}
			body = body[:len(body)-1]
		}
	}

	ctype := resp.Header.Get("Content-Type")
	if ctype == "" {
		ctype = http.DetectContentType(body)
	}
	mt, _, _ := mime.ParseMediaType(ctype)
	if !isTextual(mt) {
		return errorResult("web_fetch: %s answered with %s, which is not text", resp.Request.URL, mt), nil
	}
	text := strings.ToValidUTF8(string(body), "\uFFFD")
	if mt == "text/html" || mt == "application/xhtml+xml" {
		text = htmlToText(text)
	}

	var b strings.Builder
	fmt.Fprintf(&b, "URL: %s\nStatus: %s\n\n", resp.Request.URL, resp.Status)
	b.WriteString(text)
	if truncated {
		fmt.Fprintf(&b, "\n\n[truncated: the response is longer than %d bytes; only the first %d were read]", t.cfg.MaxBytes, t.cfg.MaxBytes)
	}
	return Result{Content: b.String(), IsError: resp.StatusCode >= 400, External: true}, nil
}

func (t *WebFetch) failure(parent, fctx context.Context, u *url.URL, err error) (Result, error) {
	if parent.Err() != nil {
		return errorResult("web_fetch: %s: %v", u, parent.Err()), parent.Err()
	}
	if errors.Is(fctx.Err(), context.DeadlineExceeded) {
		return errorResult("web_fetch: %s did not answer within the time limit of %s", u, t.cfg.Timeout), nil
	}
	var re *refusedAddrError
	if errors.As(err, &re) {
		return errorResult("web_fetch: %s: %v", u, re), nil
	}
	return errorResult("web_fetch: %s: %v", u, err), nil
}

func isTextual(mt string) bool {
	switch {
	case strings.HasPrefix(mt, "text/"),
		strings.HasSuffix(mt, "+json"), strings.HasSuffix(mt, "+xml"):
		return true
	}
	switch mt {
	case "application/json", "application/xml", "application/javascript",
		"application/x-javascript", "application/ecmascript", "application/x-ndjson",
		"application/yaml", "application/x-yaml", "application/toml":
		return true
	}
	return false
}
