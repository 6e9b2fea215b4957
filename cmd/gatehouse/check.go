package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gatehouse/gatehouse/gateway"
)

const checkUsage = `Usage:
  gatehouse check [--config FILE] telegram|discord|slack

Asks the running gateway (GATEHOUSE_ADDR, with its API token) to walk the
Test of one chat platform and prints each step: token (the platform
accepts it), lease (which replica runs the connection), receiving (the
webhook or the poll/socket answers), last_message (handed on, or dropped
and why) and reply (the newest reply delivered, pending or dead), with
what to do for each that fails. Exits 0 when every step passes (a skipped
step counts as passed), 1 otherwise, 2 on a bad command line.
`

// checkTimeout bounds the whole Test: its calls to the platform are each
// bounded by the gateway's send timeout (30s) too.
const checkTimeout = 90 * time.Second

// runCheck is `gatehouse check PLATFORM`: the Test, from the command line.
func runCheck(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	var platform string
	var rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-h" || a == "--help" || a == "-help":
			fmt.Fprint(stdout, checkUsage)
			return 0
		case (a == "--config" || a == "-config") && i+1 < len(args):
			rest = append(rest, a, args[i+1])
			i++
		case strings.HasPrefix(a, "-"):
			rest = append(rest, a)
		case platform == "":
			platform = a
		default:
			fmt.Fprint(stderr, checkUsage)
			return 2
		}
	}
	switch platform {
	case "telegram", "discord", "slack":
	default:
		fmt.Fprint(stderr, checkUsage)
		return 2
	}
	cfg, code, ok := parseConfigFlags("check", rest, stdout, stderr, getenv, func(w io.Writer) { fmt.Fprint(w, "\n"+checkUsage) })
	if !ok {
		return code
	}
	base, err := localBaseURL(cfg.Addr)
	if err != nil {
		fmt.Fprintln(stderr, "gatehouse check:", err)
		return 1
	}
	token, err := localAPIToken(ctx, cfg, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "gatehouse check: the API token:", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	res, err := askCheck(ctx, base, token, platform)
	if err != nil {
		fmt.Fprintln(stderr, "gatehouse check:", err)
		return 1
	}
	printCheck(stdout, res)
	if !res.OK {
		return 1
	}
	return 0
}

// askCheck is POST /v1/adapters/{platform}/check.
func askCheck(ctx context.Context, base, token, platform string) (gateway.CheckResult, error) {
	var res gateway.CheckResult
	u := base + "/v1/adapters/" + url.PathEscape(platform) + "/check"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, nil)
	if err != nil {
		return res, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("User-Agent", "gatehouse-check")
	// The gateway itself, never a proxy from the environment.
	client := &http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}
	resp, err := client.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return res, fmt.Errorf("%s: no answer within %s", u, checkTimeout)
		}
		return res, fmt.Errorf("is the gateway running? %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return res, fmt.Errorf("%s: %w", u, err)
	}
	if resp.StatusCode != http.StatusOK {
		var e struct{ Message string }
		if json.Unmarshal(body, &e) == nil && e.Message != "" {
			return res, fmt.Errorf("%s answered %s: %s", u, resp.Status, e.Message)
		}
		return res, fmt.Errorf("%s answered %s", u, resp.Status)
	}
	if err := json.Unmarshal(body, &res); err != nil {
		return res, fmt.Errorf("%s: the answer is not a Test result: %w", u, err)
	}
	return res, nil
}

// printCheck prints one line per step and the fix under a failing one.
func printCheck(w io.Writer, res gateway.CheckResult) {
	fmt.Fprintf(w, "Test of %s on replica %s\n", res.Platform, res.Replica)
	for _, s := range res.Steps {
		fmt.Fprintf(w, "  %-4s  %-12s  %s\n", s.Result, s.Name, s.Detail)
		if s.Fix != "" {
			fmt.Fprintf(w, "        %-12s  what to do: %s\n", "", s.Fix)
		}
	}
	if res.OK {
		fmt.Fprintf(w, "%s: every step passed\n", res.Platform)
		return
	}
	fmt.Fprintf(w, "%s: failed at %s\n", res.Platform, res.Failed)
}
