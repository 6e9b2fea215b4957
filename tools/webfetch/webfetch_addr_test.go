package webfetch

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"
)

// TestNonPublicAddressTable checks the address rule of web_fetch on its
// own, range by range: every special-purpose range is refused (and named),
// global unicast addresses pass. Nothing here is dialled.
func TestNonPublicAddressTable(t *testing.T) {
	for _, tc := range []struct {
		addr string
		want string // a word of the refusal; "" for allowed
	}{
		// IPv4 special-purpose registry, first and last address of each range where it matters.
		{"0.0.0.0", "this network"},
		{"0.255.255.255", "this network"},
		{"10.0.0.1", "private"},
		{"10.255.255.255", "private"},
		{"100.64.0.1", "shared"},
		{"100.127.255.255", "shared"},
		{"127.0.0.1", "loopback"},
		{"127.255.255.254", "loopback"},
		{"169.254.169.254", "link-local"},
		{"172.16.0.1", "private"},
		{"172.31.255.255", "private"},
		{"192.0.0.9", "IETF protocol assignment"},
		{"192.0.2.1", "documentation"},
		{"192.31.196.1", "AS112"},
		{"192.52.193.1", "AMT"},
		{"192.88.99.1", "6to4 relay"},
		{"192.168.1.1", "private"},
		{"192.175.48.1", "AS112"},
		{"198.18.0.1", "benchmarking"},
		{"198.19.255.255", "benchmarking"},
		{"198.51.100.7", "documentation"},
		{"203.0.113.7", "documentation"},
		{"224.0.0.1", "multicast"},
		{"239.255.255.250", "multicast"},
		{"240.0.0.1", "reserved"},
		{"255.255.255.255", "broadcast"},
		// IPv6 special-purpose registry and the rest outside 2000::/3.
		{"::", "unspecified"},
		{"::1", "loopback"},
		{"::ffff:127.0.0.1", "loopback"}, // mapped: the IPv4 address it is
		{"::ffff:10.1.2.3", "private"},
		{"::ffff:192.0.2.1", "documentation"},
		{"::7f00:1", "IPv4-compatible"},  // ::127.0.0.1
		{"::808:808", "IPv4-compatible"}, // ::8.8.8.8: the whole prefix is refused
		{"64:ff9b::7f00:1", "NAT64 form of 127.0.0.1, a loopback"},
		{"64:ff9b::a9fe:a9fe", "NAT64 form of 169.254.169.254, a link-local"},
		{"64:ff9b::a00:1", "NAT64 form of 10.0.0.1, a private"},
		{"64:ff9b:1::a00:1", "local-use NAT64"},
		{"64:ff9b:1:ffff::808:808", "local-use NAT64"},
		{"100::1", "discard-only"},
		{"2001::1", "Teredo"},
		{"2001:0:4136:e378:8000:63bf:3fff:fdd2", "Teredo"}, // RFC 4380's example
		{"2001:0:4136:e378:8000:63bf:80ff:fffe", "Teredo"}, // client XOR-ed to 127.0.0.1
		{"2001:1::1", "IETF protocol assignment"},
		{"2001:2::1", "benchmarking"},
		{"2001:3::1", "IETF protocol assignment"},
		{"2001:10::1", "ORCHID"},
		{"2001:20::1", "ORCHIDv2"},
		{"2001:1ff::1", "IETF protocol assignment"},
		{"2001:db8::1", "documentation"},
		{"2001:db8:ffff::1", "documentation"},
		{"2002::1", "6to4"},
		{"2002:c0a8:101::1", "6to4"}, // 6to4 of 192.168.1.1
		{"2002:808:808::1", "6to4"},  // 6to4 of 8.8.8.8: the whole prefix is refused
		{"3fff::1", "documentation"},
		{"3fff:fff::1", "documentation"},
		{"5f00::1", "SRv6"},
		{"fc00::1", "unique local"},
		{"fd12:3456::1", "unique local"},
		{"fe80::1", "link-local"},
		{"febf::1", "link-local"},
		{"fec0::1", "site-local"},
		{"feff::1", "site-local"},
		{"ff02::1", "multicast"},
		{"ff0e::1", "multicast"},
		{"fe80::1%eth0", "zoned"},
		{"2606:4700::1%eth0", "zoned"},
		{"100:0:0:1::1", "outside 2000::/3"},
		{"1::1", "outside 2000::/3"},
		{"4000::1", "outside 2000::/3"},
		{"e000::1", "outside 2000::/3"},
		// Public: allowed.
		{"8.8.8.8", ""},
		{"1.1.1.1", ""},
		{"93.184.216.34", ""},
		{"100.63.255.255", ""},   // just below shared space
		{"100.128.0.0", ""},      // just above it
		{"172.15.255.255", ""},   // just below 172.16/12
		{"172.32.0.0", ""},       // just above it
		{"192.0.1.255", ""},      // between 192.0.0/24 and 192.0.2/24
		{"198.20.0.0", ""},       // just above benchmarking
		{"223.255.255.255", ""},  // just below multicast
		{"::ffff:8.8.8.8", ""},   // mapped public IPv4
		{"64:ff9b::808:808", ""}, // NAT64 of 8.8.8.8 (an IPv6-only host behind DNS64)
		{"2606:4700::1", ""},
		{"2a00:1450:4001::200e", ""},
		{"2001:200::1", ""}, // just past 2001::/23
		{"2003::1", ""},     // just past 6to4
		{"3ffe::1", ""},
	} {
		a := netip.MustParseAddr(tc.addr)
		got := nonPublic(a)
		switch {
		case tc.want == "" && got != "":
			t.Errorf("%s: refused as %q, want allowed", tc.addr, got)
		case tc.want != "" && got == "":
			t.Errorf("%s: allowed, want refused as %s", tc.addr, tc.want)
		case tc.want != "" && !strings.Contains(got, tc.want):
			t.Errorf("%s: refused as %q, want %q", tc.addr, got, tc.want)
		}
	}
	if got := nonPublic(netip.Addr{}); got == "" {
		t.Error("the zero Addr is allowed")
	}
}

func TestOddNumericHostTable(t *testing.T) {
	for host, odd := range map[string]bool{
		"2130706433": true, "0x7f000001": true, "0X7F000001": true, "0x": true, "0": true,
		"0177.0.0.1": true, "127.0.0.01": true, "127.1": true, "127.0.1": true, "127.0.0.1.": true,
		"1.2.3.0x4": true, "0x7f.1": true, "256.1.1.1": true, "1.2.3.4.5": true, "foo.1": true,
		"127.0.0.1": false, "8.8.8.8": false, "0.0.0.0": false,
		"example.com": false, "1.2.3.example": false, "127.0.0.1.nip.io": false, "0x7g": false, "1e3": false,
		"::1": false, "2606:4700::1": false, "": false,
	} {
		if got := oddNumericHost(host); got != odd {
			t.Errorf("oddNumericHost(%q) = %v, want %v", host, got, odd)
		}
	}
}

// TestSpecialUseNameTable checks the special-use name rule of web_fetch on
// its own: reserved names and their subdomains are refused (and the rule
// named), in any case and with a trailing dot; names that merely look
// alike pass. Nothing here is looked up.
func TestSpecialUseNameTable(t *testing.T) {
	for _, tc := range []struct {
		host string
		want string // a word of the refusal; "" for allowed
	}{
		{"localhost", "RFC 6761"},
		{"LOCALHOST.", "RFC 6761"},
		{"LocalHost", "RFC 6761"},
		{"localhost..", "RFC 6761"},
		{"x.localhost", "RFC 6761"},
		{"a.b.localhost.", "RFC 6761"},
		{"ip6-localhost", "hosts files"},
		{"ip6-loopback", "hosts files"},
		{"IP6-LOOPBACK.", "hosts files"},
		{"localhost6", "hosts files"},
		{"ip6-allnodes", "hosts files"},
		{"example.invalid", ".invalid"},
		{"invalid", ".invalid"},
		{"foo.test", ".test"},
		{"FOO.TEST.", ".test"},
		{"printer.local", ".local"},
		{"printer.LOCAL.", ".local"},
		{"metadata.google.internal", ".internal"},
		{"host.docker.internal", ".internal"},
		{"router.home.arpa", "RFC 8375"},
		{"home.arpa", "RFC 8375"},
		{"nas.localdomain", ".localdomain"},
		{"localhost.localdomain", ".localdomain"},
		{"localhost4.localdomain4", ".localdomain"},
		// Allowed: public names that only look alike.
		{"example.com", ""},
		{"localhost.example.com", ""},
		{"mylocalhost", ""},
		{"local.example.com", ""},
		{"internal.example.com", ""},
		{"test.com", ""},
		{"testing", ""},
		{"localcafe", ""},
		{"home.arpa.example.com", ""},
		{"in-addr.arpa", ""},
		{"ip6-localhost.example", ""},
		{"", ""},
		{".", ""},
	} {
		got := specialUseName(tc.host)
		switch {
		case tc.want == "" && got != "":
			t.Errorf("%q: refused as %q, want allowed", tc.host, got)
		case tc.want != "" && got == "":
			t.Errorf("%q: allowed, want refused as %s", tc.host, tc.want)
		case tc.want != "" && !strings.Contains(got, tc.want):
			t.Errorf("%q: refused as %q, want %q", tc.host, got, tc.want)
		}
	}
}

// noLookups fails the test on any lookup.
type noLookups struct{ t *testing.T }

func (r noLookups) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	r.t.Errorf("looked up %q", host)
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// The dialer, which every redirect goes through, refuses special-use
// names before asking the resolver, unless private networks are allowed.
func TestFetchDialerRefusesSpecialUseNames(t *testing.T) {
	fd := &fetchDialer{d: &net.Dialer{}, resolver: noLookups{t}}
	for _, host := range []string{"localhost", "LOCALHOST.", "ip6-loopback", "x.localhost", "foo.test", "nas.local", "db.internal"} {
		_, err := fd.DialContext(context.Background(), "tcp", net.JoinHostPort(host, "80"))
		var ne *refusedNameError
		if !errors.As(err, &ne) || !strings.Contains(err.Error(), "special-use name") {
			t.Errorf("%s: %v, want refused as a special-use name", host, err)
		}
	}
	asked := 0
	fd = &fetchDialer{d: &net.Dialer{}, resolver: countLookups{&asked}, allowPrivate: true}
	if _, err := fd.DialContext(context.Background(), "tcp", "app.test:80"); err == nil || asked != 1 {
		t.Errorf("with private networks allowed: %v after %d lookups, want app.test looked up", err, asked)
	}
}

type countLookups struct{ n *int }

func (r countLookups) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	*r.n++
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}
