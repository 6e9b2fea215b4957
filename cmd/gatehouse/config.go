package main

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"gopkg.in/yaml.v3"
)

// Config is every setting of the gateway. Each comes from the optional
// config file (--config gatehouse.yaml, keys as below) and from the
// environment, which wins. `gatehouse serve --help` prints this list.
type Config struct {
	// Addr is where HTTP listens. Defaults to 127.0.0.1:8080.
	Addr string
	// DataDir holds the SQLite database and spool files. Defaults to ./data.
	DataDir string
	// DatabaseURL selects Postgres when it starts with postgres:// or
	// postgresql://. Defaults to empty: SQLite at DataDir/gatehouse.db.
	DatabaseURL string
	// DatabaseMaxConns bounds the Postgres pool. Defaults to 40.
	DatabaseMaxConns int
	// SQLiteSynchronous is SQLite's synchronous pragma. Defaults to FULL.
	SQLiteSynchronous string
	// LogLevel is debug, info, warn or error. Defaults to info.
	LogLevel string
	// LogFormat is text or json. Defaults to text.
	LogFormat string
	// LeaseTTL is how long a worker's claim lasts unrenewed. Defaults to 30s.
	LeaseTTL time.Duration
	// MaxAttempts is how many attempts a run gets. Defaults to 3.
	MaxAttempts int
	// RetryBackoff is the delay before retrying a failed attempt, times the
	// attempt number. Defaults to 1s.
	RetryBackoff time.Duration
	// MaxPayloadBytes bounds one event's payload. Defaults to 1048576.
	MaxPayloadBytes int
	// DrainTimeout bounds the drain on SIGTERM. Defaults to 30s.
	DrainTimeout time.Duration
}

// setting is one row of the settings table: its names, default and help,
// and how to store a value. The table is the single source for loading,
// --help and the configuration doc test.
type setting struct {
	env, key, def, help string
	set                 func(c *Config, v string) error
}

func str(dst func(*Config) *string) func(*Config, string) error {
	return func(c *Config, v string) error { *dst(c) = v; return nil }
}

func integer(dst func(*Config) *int) func(*Config, string) error {
	return func(c *Config, v string) error {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n <= 0 {
			return fmt.Errorf("want a positive whole number, got %q", v)
		}
		*dst(c) = n
		return nil
	}
}

func duration(dst func(*Config) *time.Duration) func(*Config, string) error {
	return func(c *Config, v string) error {
		d, err := time.ParseDuration(strings.TrimSpace(v))
		if err != nil || d <= 0 {
			return fmt.Errorf("want a positive duration such as 30s or 5m, got %q", v)
		}
		*dst(c) = d
		return nil
	}
}

func oneOf(dst func(*Config) *string, allowed ...string) func(*Config, string) error {
	return func(c *Config, v string) error {
		for _, a := range allowed {
			if strings.EqualFold(v, a) {
				*dst(c) = a
				return nil
			}
		}
		return fmt.Errorf("want one of %s, got %q", strings.Join(allowed, ", "), v)
	}
}

var settings = []setting{
	{"GATEHOUSE_ADDR", "addr", "127.0.0.1:8080", "HTTP listen address", str(func(c *Config) *string { return &c.Addr })},
	{"GATEHOUSE_DATA_DIR", "data_dir", "./data", "directory of the SQLite database and spool files", str(func(c *Config) *string { return &c.DataDir })},
	{"GATEHOUSE_DATABASE_URL", "database_url", "", "postgres://… selects Postgres; empty selects SQLite at $GATEHOUSE_DATA_DIR/gatehouse.db", func(c *Config, v string) error {
		if v != "" && !strings.HasPrefix(v, "postgres://") && !strings.HasPrefix(v, "postgresql://") {
			return fmt.Errorf("want a postgres:// URL or nothing (SQLite), got a URL of another scheme")
		}
		c.DatabaseURL = v
		return nil
	}},
	{"GATEHOUSE_DATABASE_MAX_CONNS", "database_max_conns", "40", "Postgres connection pool size", integer(func(c *Config) *int { return &c.DatabaseMaxConns })},
	{"GATEHOUSE_SQLITE_SYNCHRONOUS", "sqlite_synchronous", "FULL", "SQLite synchronous pragma: FULL survives power loss, NORMAL only process crashes", oneOf(func(c *Config) *string { return &c.SQLiteSynchronous }, "FULL", "NORMAL")},
	{"GATEHOUSE_LOG_LEVEL", "log_level", "info", "debug, info, warn or error", oneOf(func(c *Config) *string { return &c.LogLevel }, "debug", "info", "warn", "error")},
	{"GATEHOUSE_LOG_FORMAT", "log_format", "text", "text or json", oneOf(func(c *Config) *string { return &c.LogFormat }, "text", "json")},
	{"GATEHOUSE_LEASE_TTL", "lease_ttl", "30s", "how long a worker's claim on a run lasts without renewal (renewed every third)", duration(func(c *Config) *time.Duration { return &c.LeaseTTL })},
	{"GATEHOUSE_MAX_ATTEMPTS", "max_attempts", "3", "attempts a run gets before it fails for good", integer(func(c *Config) *int { return &c.MaxAttempts })},
	{"GATEHOUSE_RETRY_BACKOFF", "retry_backoff", "1s", "delay before retrying a failed attempt, times the attempt number", duration(func(c *Config) *time.Duration { return &c.RetryBackoff })},
	{"GATEHOUSE_MAX_PAYLOAD_BYTES", "max_payload_bytes", "1048576", "largest event payload accepted", integer(func(c *Config) *int { return &c.MaxPayloadBytes })},
	{"GATEHOUSE_DRAIN_TIMEOUT", "drain_timeout", "30s", "how long SIGTERM waits for work in flight before stopping", duration(func(c *Config) *time.Duration { return &c.DrainTimeout })},
}

// loadConfig applies defaults, then the file (if any), then the
// environment. Every bad value is reported with the setting's name.
func loadConfig(file string, getenv func(string) string) (Config, error) {
	var c Config
	for _, s := range settings {
		if err := s.set(&c, s.def); err != nil && s.def != "" {
			return c, fmt.Errorf("default of %s: %w", s.env, err)
		}
	}
	if file != "" {
		raw, err := os.ReadFile(file)
		if err != nil {
			return c, fmt.Errorf("config file: %w", err)
		}
		var values map[string]any
		if err := yaml.Unmarshal(raw, &values); err != nil {
			return c, fmt.Errorf("config file %s: %w", file, err)
		}
		byKey := map[string]setting{}
		for _, s := range settings {
			byKey[s.key] = s
		}
		keys := make([]string, 0, len(values))
		for k := range values {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			s, ok := byKey[k]
			if !ok {
				return c, fmt.Errorf("config file %s: unknown setting %q (see gatehouse serve --help)", file, k)
			}
			if err := s.set(&c, fmt.Sprint(values[k])); err != nil {
				return c, fmt.Errorf("config file %s: %s: %w", file, k, err)
			}
		}
	}
	for _, s := range settings {
		if v, ok := lookup(getenv, s.env); ok {
			if err := s.set(&c, v); err != nil {
				return c, fmt.Errorf("%s: %w", s.env, err)
			}
		}
	}
	return c, nil
}

func lookup(getenv func(string) string, name string) (string, bool) {
	v := getenv(name)
	return v, v != ""
}

// printSettings writes the settings table for --help.
func printSettings(w io.Writer) {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ENVIRONMENT\tFILE KEY\tDEFAULT\tMEANING")
	for _, s := range settings {
		def := s.def
		if def == "" {
			def = "(empty)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", s.env, s.key, def, s.help)
	}
	tw.Flush()
}
