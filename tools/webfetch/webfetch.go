package webfetch

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

	"github.com/gatehouse/gatehouse/tools"
)

// ToolName is the name of the web fetch tool.
const ToolName = "web_fetch"

// Resolver looks up the addresses of a host name. *net.Resolver is one.
type Resolver interface {
	// LookupNetIP returns the addresses of host; network is "ip", "ip4"
	// or "ip6".
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Config configures web_fetch.
type Config struct {
	// Client makes the requests. Defaults to a client with no proxy that
	// connects only to public addresses (see AllowPrivateNetworks). A
	// Client given here is used as it is: the address check is then its
	// owner's business.
	Client *http.Client
	// Resolver looks up host names for the default client. Defaults to
	// net.DefaultResolver. Unused when Client is set.
	Resolver Resolver
	// MaxBytes caps how much of a response body is read; a longer page is
	// cut and the result says so. Defaults to 1 MiB.
	MaxBytes int64
	// Timeout bounds one fetch, body included. Defaults to 15s.
	Timeout time.Duration
	// AllowPrivateNetworks lets the default client reach loopback, private,
	// link-local and every other address that is not global unicast
	// (see nonPublic). Defaults to false: a safe tool runs without a
	// person's approval, so a page or a prompt must not be able to make it
	// read the gateway's own admin endpoints, a cloud metadata service or
	// the LAN. With it false, special-use names (localhost, *.local,
	// *.internal, *.test, … see specialUseName) are refused before any
	// lookup too. Hosts written as numbers in any form but a plain dotted
	// quad (2130706433, 0x7f000001, 0177.0.0.1, 127.1) are refused either
	// way.
	AllowPrivateNetworks bool
	// UserAgent is sent with each request. Defaults to "Gatehouse web_fetch".
	UserAgent string
}

// Tool is the web_fetch tool: GET one http(s) URL and return its text.
type Tool struct {
	cfg Config
}

// New returns web_fetch with cfg.
func New(cfg Config) *Tool {
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = 1 << 20
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 15 * time.Second
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = "Gatehouse web_fetch"
	}
	if cfg.Resolver == nil {
		cfg.Resolver = net.DefaultResolver
	}
	if cfg.Client == nil {
		cfg.Client = newFetchClient(cfg.Resolver, cfg.AllowPrivateNetworks)
	}
	return &Tool{cfg: cfg}
}

// dialTimeout bounds connecting to one host, all its addresses together.
const dialTimeout = 10 * time.Second

func newFetchClient(r Resolver, allowPrivate bool) *http.Client {
	d := &net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}
	if !allowPrivate {
		// The last word: the check runs on the address actually dialled,
		// after DNS, so a name that resolves to 127.0.0.1 (or changes its
		// answer between two lookups) cannot slip through; redirects are
		// dialled the same way. fetchDialer checks the resolved addresses
		// first only to skip refused ones and to say why.
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
	fd := &fetchDialer{d: d, resolver: r, allowPrivate: allowPrivate}
	tr := &http.Transport{
		Proxy:                 nil, // no proxy from the environment: the package reads none
		DialContext:           fd.DialContext,
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

// fetchDialer resolves host names with the configured Resolver and dials
// the addresses one by one. It does the lookup itself (rather than leave
// it to net.Dialer) so that tests can inject a resolver, and so that a
// numeric host in an odd form is refused before any lookup: the transport
// hands it the host after IDNA mapping, so "２１３０７０６４３３" is seen as
// the "2130706433" it becomes.
type fetchDialer struct {
	d            *net.Dialer
	resolver     Resolver
	allowPrivate bool
}

func (f *fetchDialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return f.d.DialContext(ctx, network, address) // a literal: the Control check sees it as it is
	}
	if oddNumericHost(host) {
		return nil, &refusedHostError{host: host}
	}
	if !f.allowPrivate {
		// Here as well as in Run: a redirect's host comes only here, and
		// the transport hands over the host after IDNA mapping, so
		// "ｌｏｃａｌｈｏｓｔ" is seen as "localhost".
		if why := specialUseName(host); why != "" {
			return nil, &refusedNameError{host: host, why: why}
		}
	}
	lookup := "ip"
	switch network {
	case "tcp4":
		lookup = "ip4"
	case "tcp6":
		lookup = "ip6"
	}
	addrs, err := f.resolver.LookupNetIP(ctx, lookup, host)
	if err != nil {
		return nil, err
	}
	// Refused addresses are skipped, as net.Dialer skips one that fails:
	// a name with one stray private address still reaches its public ones.
	var candidates []netip.Addr
	var refused error
	for _, a := range addrs {
		a = a.Unmap() // net.Resolver gives IPv4 answers in the mapped form
		if !f.allowPrivate {
			if reason := nonPublic(a); reason != "" {
				if refused == nil {
					refused = &refusedAddrError{addr: a, reason: reason}
				}
				continue
			}
		}
		candidates = append(candidates, a)
	}
	if len(candidates) == 0 {
		if refused != nil {
			return nil, refused
		}
		return nil, &net.DNSError{Err: "no addresses", Name: host, IsNotFound: true}
	}
	deadline := time.Now().Add(dialTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	var firstErr error
	for i, a := range candidates {
		// Each address gets its share of the time left (at least 2s), as
		// net.Dialer does, so one that swallows packets does not use up
		// the time of the next.
		share := time.Until(deadline) / time.Duration(len(candidates)-i)
		share = max(share, min(2*time.Second, time.Until(deadline)))
		actx, cancel := context.WithTimeout(ctx, share)
		c, err := f.d.DialContext(actx, network, net.JoinHostPort(a.String(), port))
		cancel()
		if err == nil {
			return c, nil
		}
		if firstErr == nil {
			firstErr = err
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil, firstErr
}

type refusedAddrError struct {
	addr   netip.Addr
	reason string
}

func (e *refusedAddrError) Error() string {
	return fmt.Sprintf("refused to connect to %s: it is %s, and web_fetch reaches only public (global unicast) addresses", e.addr, e.reason)
}

// refusedHostError is a host written as a number in a form other than a
// plain dotted quad.
type refusedHostError struct {
	host string
}

func (e *refusedHostError) Error() string {
	return fmt.Sprintf("refused host %q: a numeric host must be a dotted quad of four decimal numbers 0-255 without leading zeros (like 93.184.216.34); "+
		"integer, hex, octal and short forms (2130706433, 0x7f000001, 0177.0.0.1, 127.1) are read differently by different resolvers, so web_fetch does not look them up", e.host)
}

// refusedNameError is a special-use host name.
type refusedNameError struct {
	host string
	why  string
}

func (e *refusedNameError) Error() string {
	return fmt.Sprintf("refused host %q: it is a special-use name (%s), and web_fetch reaches only the public internet, so it does not look such names up", e.host, e.why)
}

// specialUseName says why host is a special-use name that web_fetch does
// not look up when it may reach only public addresses, or "" for any other
// name. Case is ignored and so is a trailing dot. Such a name answers from
// /etc/hosts, multicast DNS or a local resolver with a local address: the
// address check would refuse the answer anyway, but the lookup itself
// (an mDNS query on the LAN, a query the local resolver forwards to an
// internal zone) is already a reach into the private network.
//
// Refused, with their subdomains:
//   - localhost (RFC 6761 §6.3), and, as exact names only, the loopback
//     aliases hosts files carry (ip6-localhost, ip6-loopback, localhost4,
//     localhost6, …);
//   - invalid and test (RFC 6761 §6.4, §6.2);
//   - local (RFC 6762, multicast DNS);
//   - home.arpa (RFC 8375, home networks);
//   - internal (reserved by ICANN for private use) and localdomain (the
//     customary local domain of hosts files and home routers).
func specialUseName(host string) string {
	h := strings.TrimRight(strings.ToLower(host), ".")
	if h == "" {
		return ""
	}
	in := func(domain string) bool { return h == domain || strings.HasSuffix(h, "."+domain) }
	switch h {
	case "ip6-localhost", "ip6-loopback", "localhost4", "localhost6",
		"ip6-localnet", "ip6-mcastprefix", "ip6-allnodes", "ip6-allrouters":
		return "a loopback or link-local alias of hosts files"
	}
	switch {
	case in("localhost"):
		return "localhost names the loopback interface, RFC 6761"
	case in("invalid"):
		return ".invalid never resolves, RFC 6761"
	case in("test"):
		return ".test is reserved for testing, RFC 6761"
	case in("local"):
		return ".local is multicast DNS on the local link, RFC 6762"
	case in("home.arpa"):
		return ".home.arpa is for home networks, RFC 8375"
	case in("internal"):
		return ".internal is reserved for private networks"
	case in("localdomain"), in("localdomain4"), in("localdomain6"):
		return ".localdomain is the local domain of hosts files"
	}
	return ""
}

// oddNumericHost reports whether host is written as a number but is not a
// canonical dotted quad. The rule is the WHATWG URL standard's: a host
// whose last label is all digits, or 0x and hex digits, is an IPv4
// address, and inet_aton reads such a host as decimal, octal or hex parts
// of any count. Go's resolver would look "0177.0.0.1" up as a name, the C
// library reads it as 127.0.0.1, a browser as well: refusing every form but
// the one all of them read alike keeps what is checked and what is
// reached the same.
func oddNumericHost(host string) bool {
	if strings.Contains(host, ":") {
		return false // an IPv6 literal, checked as an address
	}
	labels := strings.Split(host, ".")
	last := labels[len(labels)-1]
	if last == "" && len(labels) > 1 {
		last = labels[len(labels)-2] // a trailing dot
	}
	if !numericLabel(last) {
		return false
	}
	a, err := netip.ParseAddr(host) // four decimal parts, no leading zeros
	return err != nil || !a.Is4()
}

func numericLabel(s string) bool {
	if s == "" {
		return false
	}
	digits, isHex := s, false
	if len(s) >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') {
		digits, isHex = s[2:], true // "0x" alone is a number too (zero)
	}
	for _, c := range digits {
		switch {
		case c >= '0' && c <= '9':
		case isHex && (c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'):
		default:
			return false
		}
	}
	return true
}

// nonPublic says what kind of non-public address a is ("a loopback
// address"), or "" for a global unicast one web_fetch may reach.
//
// Refused: every range of the IANA IPv4 and IPv6 special-purpose address
// registries, whatever their "globally reachable" column says (none is a
// place to fetch a web page from), and in IPv6 everything outside
// 2000::/3, the only block allocated for global unicast.
//
// IPv6 forms that carry an IPv4 address:
//   - IPv4-mapped (::ffff:a.b.c.d) is that IPv4 address itself on the
//     wire (a dual-stack socket sends IPv4 packets), so the IPv4 address is
//     taken out and checked.
//   - NAT64 with the well-known prefix (64:ff9b::/96) is checked by its
//     embedded IPv4 address too: on an IPv6-only host behind DNS64 every
//     IPv4-only site has such an address, so refusing the prefix would cut
//     those hosts off the IPv4 web, while a NAT64 gateway in a cloud VPC
//     turns 64:ff9b::a9fe:a9fe into the metadata service 169.254.169.254,
//     which the embedded check refuses.
//   - Everything else is refused as a whole prefix: IPv4-compatible ::/96
//     (deprecated by RFC 4291, and some stacks tunnel it to the embedded
//     IPv4), local-use NAT64 64:ff9b:1::/48 (its translator is local by
//     definition, and the operator's prefix length moves the embedded
//     address), 6to4 2002::/16 (deprecated by RFC 7526; a relay picked by
//     the network unwraps it) and Teredo 2001::/32 (obsolete; the client
//     address is XOR-ed and reached through a relay and the client's NAT).
//     Reading the embedded address out of these would be more parsing for
//     no web site anyone serves from them.
//
// A NAT64 translator on a network-specific prefix (RFC 6052) looks like
// any global address and cannot be told apart here; the network that
// runs one must not route it to private space.
func nonPublic(a netip.Addr) string {
	switch {
	case !a.IsValid():
		return "an invalid address"
	case a.Zone() != "":
		// Prefix.Contains never matches a zoned address, and only
		// link-local and multicast addresses need a zone.
		return "an interface-scoped (zoned) address"
	case a.Is4In6():
		return nonPublic4(a.Unmap())
	case a.Is4():
		return nonPublic4(a)
	}
	if nat64WellKnown.Contains(a) {
		b := a.As16()
		v4 := netip.AddrFrom4([4]byte(b[12:16]))
		if r := nonPublic4(v4); r != "" {
			return fmt.Sprintf("the NAT64 form of %s, %s", v4, r)
		}
		return ""
	}
	for _, s := range special6 {
		if s.prefix.Contains(a) {
			return s.kind
		}
	}
	if !globalUnicast6.Contains(a) {
		return "an address outside 2000::/3, the IPv6 global unicast block"
	}
	return ""
}

func nonPublic4(a netip.Addr) string {
	for _, s := range special4 {
		if s.prefix.Contains(a) {
			return s.kind
		}
	}
	return ""
}

type specialRange struct {
	prefix netip.Prefix
	kind   string
}

func special(prefix, kind string) specialRange {
	return specialRange{netip.MustParsePrefix(prefix), kind}
}

// special4 is the IANA IPv4 special-purpose address registry, plus
// multicast and the reserved 240/4. The first match names the kind, so a
// narrower range comes before a wider one.
var special4 = []specialRange{
	special("0.0.0.0/8", `a "this network" address`),
	special("10.0.0.0/8", "a private address"),
	special("100.64.0.0/10", "a shared (carrier-grade NAT) address"),
	special("127.0.0.0/8", "a loopback address"),
	special("169.254.0.0/16", "a link-local address"),
	special("172.16.0.0/12", "a private address"),
	special("192.0.0.0/24", "an IETF protocol assignment address"),
	special("192.0.2.0/24", "a documentation address"),
	special("192.31.196.0/24", "an AS112 service address"),
	special("192.52.193.0/24", "an AMT address"),
	special("192.88.99.0/24", "a 6to4 relay anycast address"),
	special("192.168.0.0/16", "a private address"),
	special("192.175.48.0/24", "an AS112 direct delegation address"),
	special("198.18.0.0/15", "a benchmarking address"),
	special("198.51.100.0/24", "a documentation address"),
	special("203.0.113.0/24", "a documentation address"),
	special("224.0.0.0/4", "a multicast address"),
	special("255.255.255.255/32", "the broadcast address"),
	special("240.0.0.0/4", "a reserved address"),
}

// nat64WellKnown is RFC 6052's prefix, checked by its embedded IPv4.
var nat64WellKnown = netip.MustParsePrefix("64:ff9b::/96")

// globalUnicast6 is the only IPv6 block allocated for global unicast.
var globalUnicast6 = netip.MustParsePrefix("2000::/3")

// special6 is the IANA IPv6 special-purpose address registry, plus the
// other non-global blocks, named before the catch-all outside 2000::/3.
// IPv4-mapped and the NAT64 well-known prefix are handled before it.
var special6 = []specialRange{
	special("::/128", "the unspecified address"),
	special("::1/128", "a loopback address"),
	special("::/96", "an IPv4-compatible address (deprecated)"),
	special("64:ff9b:1::/48", "a local-use NAT64 address"),
	special("100::/64", "a discard-only address"),
	special("2001::/32", "a Teredo address"),
	special("2001:2::/48", "a benchmarking address"),
	special("2001:db8::/32", "a documentation address"),
	special("2001:10::/28", "an ORCHID address"),
	special("2001:20::/28", "an ORCHIDv2 address"),
	special("2001::/23", "an IETF protocol assignment address"),
	special("2002::/16", "a 6to4 address"),
	special("3fff::/20", "a documentation address"),
	special("5f00::/16", "an SRv6 SID address"),
	special("fc00::/7", "a unique local (private) address"),
	special("fe80::/10", "a link-local address"),
	special("fec0::/10", "a site-local address (deprecated)"),
	special("ff00::/8", "a multicast address"),
}

// Name implements Tool.
func (t *Tool) Name() string { return ToolName }

// Description implements Tool.
func (t *Tool) Description() string {
	return fmt.Sprintf("Fetch a web page (http or https, GET) and return its text, at most %d bytes.", t.cfg.MaxBytes)
}

// Schema implements Tool.
func (t *Tool) Schema() json.RawMessage {
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
func (t *Tool) Tier() tools.Tier { return tools.Safe }

// Runnable implements Tool.
func (t *Tool) Runnable() error { return nil }

// Idempotent implements Tool: a GET has no effect to repeat.
func (t *Tool) Idempotent() bool { return true }

// Run implements Tool.
//
// Every result that holds a string the remote side chose (the URL after
// redirects, the status line, the Content-Type, the body, a transport error
// that quotes the server) is External, error results included, so the
// toolworker fences it. Results made only of our words and the model's own
// URL are not.
func (t *Tool) Run(ctx context.Context, call tools.Call) (tools.Result, error) {
	var a struct {
		URL string `json:"url"`
	}
	if err := json.Unmarshal(call.Arguments, &a); err != nil {
		return tools.ErrorResult("web_fetch: bad arguments: %v", err), nil
	}
	u, err := url.Parse(strings.TrimSpace(a.URL))
	if err != nil {
		return tools.ErrorResult("web_fetch: %q is not a URL: %v", a.URL, err), nil
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return tools.ErrorResult("web_fetch: refused: only http and https URLs can be fetched, not %q", u.Scheme+":"), nil
	}
	if u.Host == "" {
		return tools.ErrorResult("web_fetch: %q has no host", a.URL), nil
	}
	if oddNumericHost(u.Hostname()) {
		// Before any lookup, whatever AllowPrivateNetworks says: the form
		// is ambiguous, not merely private.
		return tools.ErrorResult("web_fetch: %s: %v", u, &refusedHostError{host: u.Hostname()}), nil
	}
	if !t.cfg.AllowPrivateNetworks {
		if why := specialUseName(u.Hostname()); why != "" {
			return tools.ErrorResult("web_fetch: %s: %v", u, &refusedNameError{host: u.Hostname(), why: why}), nil
		}
	}

	fctx, cancel := context.WithTimeout(ctx, t.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(fctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return tools.ErrorResult("web_fetch: %v", err), nil
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
		r := tools.ErrorResult("web_fetch: %s answered with Content-Type %q, which is not text", resp.Request.URL, ctype)
		r.External = true // the final URL and the Content-Type are the server's words
		return r, nil
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
	return tools.Result{Content: b.String(), IsError: resp.StatusCode >= 400, External: true}, nil
}

func (t *Tool) failure(parent, fctx context.Context, u *url.URL, err error) (tools.Result, error) {
	if parent.Err() != nil {
		return tools.ErrorResult("web_fetch: %s: %v", u, parent.Err()), parent.Err()
	}
	if errors.Is(fctx.Err(), context.DeadlineExceeded) {
		return tools.ErrorResult("web_fetch: %s did not answer within the time limit of %s", u, t.cfg.Timeout), nil
	}
	// A redirect makes the failing URL the server's choice. (The client
	// names the first URL with its password as "***".)
	var hop string
	first := u.String()
	if _, ok := u.User.Password(); ok {
		first = strings.Replace(first, u.User.String()+"@", u.User.Username()+":***@", 1)
	}
	if ue := (*url.Error)(nil); errors.As(err, &ue) && ue.URL != first {
		hop = ue.URL
	}
	var re *refusedAddrError
	var he *refusedHostError
	var ne *refusedNameError
	var refused error
	switch {
	case errors.As(err, &re):
		refused = re
	case errors.As(err, &he):
		refused = he
	case errors.As(err, &ne):
		refused = ne
	}
	switch {
	case refused != nil && hop == "":
		return tools.ErrorResult("web_fetch: %s: %v", u, refused), nil
	case refused != nil:
		return tools.Result{Content: fmt.Sprintf("web_fetch: %s redirected to %s: %v", u, hop, refused), IsError: true, External: true}, nil
	}
	// Any other error may quote the server: a malformed response, a
	// certificate's names, a redirect's target.
	return tools.Result{Content: fmt.Sprintf("web_fetch: %s: %v", u, err), IsError: true, External: true}, nil
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
