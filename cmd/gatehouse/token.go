package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gatehouse/gatehouse/store"
)

// apiTokenSecret is the store's name for the generated API token.
const apiTokenSecret = "api-token"

// apiTokenFile is where each replica writes the token it serves, under the
// data directory, for local tools (the tests, a script, `cat`).
const apiTokenFile = "api-token"

// resolveAPIToken is the token every /v1 request must carry:
// GATEHOUSE_API_TOKEN when set, else the one kept in the store — made at
// the first start (256 bits from crypto/rand) and read back by every
// later start and every other replica on the same database. generated
// says it came from the store.
func resolveAPIToken(ctx context.Context, cfg Config, st store.Secrets) (token string, generated bool, err error) {
	if cfg.APIToken != "" {
		return cfg.APIToken, false, nil
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", false, fmt.Errorf("generate the API token: %w", err)
	}
	token, err = st.EnsureSecret(ctx, apiTokenSecret, base64.RawURLEncoding.EncodeToString(b), time.Now())
	if err != nil {
		return "", false, fmt.Errorf("keep the API token in the store: %w", err)
	}
	return token, true, nil
}

// writeTokenFile writes token to <dataDir>/api-token, readable by the
// gateway's user only, through a rename so a reader never sees half.
func writeTokenFile(dataDir, token string) error {
	path := filepath.Join(dataDir, apiTokenFile)
	tmp, err := os.CreateTemp(dataDir, ".api-token-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.WriteString(token + "\n"); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// loginURL is the link that trades token for the web UI's session cookie:
// on the public URL when one is set, else on the address the server is
// bound to (loopback when it listens on every address).
func loginURL(publicURL, addr, token string) string {
	base := strings.TrimRight(publicURL, "/")
	if base == "" {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			host, port = addr, ""
		}
		if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
			host = "127.0.0.1"
		}
		base = "http://" + net.JoinHostPort(host, port)
	}
	return base + "/login?token=" + url.QueryEscape(token)
}

// logLogin tells the operator how to open the web UI. A generated token's
// link is printed whole, as Jupyter does: whoever reads this log can run
// `gatehouse token` anyway. A configured token is the operator's own, and
// stays out of the log (it may be shipped elsewhere).
func logLogin(log *slog.Logger, publicURL, addr, token string, generated bool) {
	if generated {
		log.Info("open the web UI with this login link (it sets a session cookie; `gatehouse token` prints the API token)",
			"login", loginURL(publicURL, addr, token))
		return
	}
	log.Info("open the web UI with the login link, the token being GATEHOUSE_API_TOKEN",
		"login", loginURL(publicURL, addr, "<GATEHOUSE_API_TOKEN>"))
}

// localAPIToken is the API token the gateway configured by cfg serves:
// GATEHOUSE_API_TOKEN, or the one kept in the store (made now if no
// gateway has started yet). The store's warnings go to stderr.
func localAPIToken(ctx context.Context, cfg Config, stderr io.Writer) (string, error) {
	if cfg.APIToken != "" {
		return cfg.APIToken, nil
	}
	if err := privateDir(cfg.DataDir); err != nil {
		return "", fmt.Errorf("data directory: %w", err)
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	st, err := openStore(ctx, cfg, log)
	if err != nil {
		return "", err
	}
	defer st.Close()
	token, _, err := resolveAPIToken(ctx, cfg, st)
	return token, err
}

// runToken serves `gatehouse token [--url] [--config FILE]`: it prints the
// API token the gateway serves (GATEHOUSE_API_TOKEN, or the one kept in
// the store, made now if no gateway has started yet), or with --url the
// login link.
func runToken(args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	asURL := false
	rest := args[:0:0]
	for _, a := range args {
		if a == "--url" || a == "-url" {
			asURL = true
			continue
		}
		rest = append(rest, a)
	}
	cfg, code, ok := parseConfigFlags("token", rest, stdout, stderr, getenv, func(w io.Writer) {
		fmt.Fprintln(w, "\n  --url\tprint the web UI's login link instead of the token")
	})
	if !ok {
		return code
	}
	token, err := localAPIToken(context.Background(), cfg, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "gatehouse token:", err)
		return 1
	}
	if asURL {
		fmt.Fprintln(stdout, loginURL(cfg.PublicURL, cfg.Addr, token))
		return 0
	}
	fmt.Fprintln(stdout, token)
	return 0
}
