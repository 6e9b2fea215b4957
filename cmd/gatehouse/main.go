package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"

	"github.com/gatehouse/gatehouse/kernel"
	"github.com/gatehouse/gatehouse/store"
	"github.com/gatehouse/gatehouse/store/postgres"
	"github.com/gatehouse/gatehouse/store/sqlite"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

func main() {
	// Before anything reads the environment: serve and guard hold the
	// same keys, and so does every other subcommand given them.
	if err := sealProcess(); err != nil {
		fmt.Fprintln(os.Stderr, "gatehouse: could not mark the process non-dumpable:", err)
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr, os.Getenv))
}

const usage = `gatehouse — a chat gateway for LLM agents with human approval gates

Usage:
  gatehouse serve   [--config FILE]   run the gateway (HTTP, workers)
  gatehouse guard   [--config FILE]   run serve as a child; restart it if it exits or /livez fails
  gatehouse reload  [--config FILE]   ask the guard to restart serve once no turn runs (or SIGHUP it)
  gatehouse migrate [--config FILE]   apply database migrations and exit
  gatehouse pair approve CODE         let in the person a pairing code was sent to
  gatehouse pair list                 pending pairing codes and the people let in
  gatehouse pair revoke PLATFORM USER let a person out again
  gatehouse check   PLATFORM          walk a platform's Test (telegram|discord|slack); exit 0 when every step passes
  gatehouse probe [URL]               exit 0 when URL (default: this gateway's /healthz) answers 2xx
  gatehouse token   [--url]           print the API token (--url: the web UI's login link)
  gatehouse version                   print the version

Run "gatehouse serve --help" for every setting and its default.
`

func run(args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "version", "--version", "-v":
		fmt.Fprintln(stdout, "gatehouse", versionString())
		return 0
	case "help", "--help", "-h":
		fmt.Fprint(stdout, usage)
		return 0
	case "pair":
		return runPair(args[1:], stdout, stderr, getenv)
	case "guard":
		return runGuard(args[1:], stdout, stderr, getenv)
	case "reload":
		return runReload(args[1:], stdout, stderr, getenv)
	case "probe":
		return runProbe(context.Background(), args[1:], stdout, stderr, getenv)
	case "token":
		return runToken(args[1:], stdout, stderr, getenv)
	case "check":
		return runCheck(context.Background(), args[1:], stdout, stderr, getenv)
	case "serve", "migrate":
	default:
		fmt.Fprintf(stderr, "unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	cmd := args[0]
	cfg, code, ok := parseConfigFlags(cmd, args[1:], stdout, stderr, getenv, func(w io.Writer) {
		fmt.Fprintln(w, "\nSettings (environment variable, or key in the config file):")
		printSettings(w)
	})
	if !ok {
		return code
	}
	log := newLogger(cfg, stderr)
	ctx := context.Background()
	if cmd == "migrate" {
		st, err := openStore(ctx, cfg, log)
		if err != nil {
			log.Error("migrate failed", "err", err)
			return 1
		}
		defer st.Close()
		log.Info("migrations applied", "store", st.Dialect())
		return 0
	}
	if err := serve(ctx, cfg, log); err != nil {
		log.Error("gatehouse stopped with an error", "err", err)
		return 1
	}
	return 0
}

func versionString() string {
	if version != "dev" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return version
}

func newLogger(cfg Config, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.LogLevel))
	opts := &slog.HandlerOptions{Level: level}
	var h slog.Handler = slog.NewTextHandler(w, opts)
	if cfg.LogFormat == "json" {
		h = slog.NewJSONHandler(w, opts)
	}
	return slog.New(h)
}

// openStore opens the configured backend; opening applies migrations.
func openStore(ctx context.Context, cfg Config, log *slog.Logger) (store.Store, error) {
	if strings.HasPrefix(cfg.DatabaseURL, "postgres") {
		return postgres.Open(ctx, postgres.Config{URL: cfg.DatabaseURL, MaxConns: int32(cfg.DatabaseMaxConns), Logger: log})
	}
	return sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(cfg.DataDir, "gatehouse.db"), Synchronous: cfg.SQLiteSynchronous})
}

func kernelConfig(cfg Config, log *slog.Logger) kernel.Config {
	return kernel.Config{
		LeaseTTL:        cfg.LeaseTTL,
		MaxAttempts:     cfg.MaxAttempts,
		MaxPayloadBytes: cfg.MaxPayloadBytes,
		RetryBackoff:    cfg.RetryBackoff,
		SessionCache:    cfg.SessionCache,
		Logger:          log,
	}
}
