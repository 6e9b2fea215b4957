package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/gatehouse/gatehouse/cmd/gatehouse/internal/config"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

const probeUsage = `Usage:
  gatehouse probe [--timeout 3s] [URL]

GETs URL and exits 0 when it answers 2xx, 1 otherwise (refused, timed out,
or any other status), printing one line saying why. It is the container's
healthcheck: the image has no shell and no curl.

Without URL it asks /healthz of the gateway configured by GATEHOUSE_ADDR
(default 127.0.0.1:8080; an unspecified host such as 0.0.0.0 is asked on
loopback). A bad command line exits 1 too: container engines reserve 2.
`

// runProbe is `gatehouse probe [--timeout D] [URL]`: one GET, for
// healthchecks in an image without a shell.
func runProbe(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	fs := flag.NewFlagSet("probe", flag.ContinueOnError)
	fs.SetOutput(stderr)
	timeout := fs.Duration("timeout", 3*time.Second, "how long to wait for the whole answer")
	fs.Usage = func() { fmt.Fprint(stdout, probeUsage) }
	// Flags may come before or after the URL.
	var pos []string
	rest := args
	for {
		if err := fs.Parse(rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return 0
			}
			return 1
		}
		if fs.NArg() == 0 {
			break
		}
		pos, rest = append(pos, fs.Arg(0)), fs.Args()[1:]
	}
	if len(pos) > 1 || *timeout <= 0 {
		fmt.Fprint(stderr, probeUsage)
		return 1
	}
	var target string
	if len(pos) == 1 {
		target = pos[0]
	} else {
		var err error
		if target, err = defaultProbeURL(getenv); err != nil {
			fmt.Fprintln(stderr, "probe:", err)
			return 1
		}
	}
	status, err := probeOnce(ctx, target, *timeout)
	if err != nil {
		fmt.Fprintln(stderr, "probe:", err)
		return 1
	}
	fmt.Fprintf(stdout, "probe: %s answered %s\n", target, status)
	return 0
}

// probeOnce GETs target within timeout and returns its status line when it is
// 2xx; anything else is an error saying why, on one line.
func probeOnce(ctx context.Context, target string, timeout time.Duration) (string, error) {
	u, err := url.Parse(target)
	if err != nil {
		return "", fmt.Errorf("URL %q: %w", target, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("URL %q: want http://host:port/path", target)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return "", fmt.Errorf("URL %q: %w", target, err)
	}
	req.Header.Set("User-Agent", "gatehouse-probe")
	// No proxy (a probe asks the gateway itself, never a proxy in the
	// environment) and no idle connection left behind on the gateway.
	client := &http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}
	resp, err := client.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return "", fmt.Errorf("%s: no answer within %s", target, timeout)
		}
		return "", fmt.Errorf("%s: %w", target, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		msg := strings.Join(strings.Fields(string(body)), " ")
		if len(msg) > 200 {
			msg = msg[:200] + "…"
		}
		if msg != "" {
			return "", fmt.Errorf("%s answered %s: %s", target, resp.Status, msg)
		}
		return "", fmt.Errorf("%s answered %s", target, resp.Status)
	}
	return resp.Status, nil
}

// defaultProbeURL is /healthz on the address the gateway listens on
// (GATEHOUSE_ADDR, or its default), asked on loopback when the gateway
// listens on every address.
func defaultProbeURL(getenv func(string) string) (string, error) {
	addr := getenv("GATEHOUSE_ADDR")
	if addr == "" {
		for _, s := range config.Settings() {
			if s.Env == "GATEHOUSE_ADDR" {
				addr = s.Default
			}
		}
	}
	base, err := localBaseURL(addr)
	if err != nil {
		return "", err
	}
	return base + "/healthz", nil
}

// localBaseURL is the gateway's own address as a URL, asked on loopback
// when it listens on every address: for probe, check and the guard.
func localBaseURL(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("GATEHOUSE_ADDR %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
		if ip != nil && ip.To4() == nil {
			host = "::1"
		}
	}
	return "http://" + net.JoinHostPort(host, port), nil
}
