package main

import (
	"github.com/gatehouse/gatehouse/cmd/gatehouse/internal/config"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestConfigDefaults(t *testing.T) {
	c, err := loadConfig("", env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.Addr != "127.0.0.1:8080" || c.DataDir != "./data" || c.DatabaseURL != "" || c.LeaseTTL != 30*time.Second || c.MaxAttempts != 3 || c.SQLiteSynchronous != "FULL" {
		t.Fatalf("defaults: %+v", c)
	}
}

func TestConfigFileThenEnvironmentWins(t *testing.T) {
	file := filepath.Join(t.TempDir(), "gatehouse.yaml")
	os.WriteFile(file, []byte("addr: 127.0.0.1:9999\nlease_ttl: 10s\nmax_attempts: 5\n"), 0o644)
	c, err := loadConfig(file, env(map[string]string{"GATEHOUSE_ADDR": "127.0.0.1:7777"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Addr != "127.0.0.1:7777" || c.LeaseTTL != 10*time.Second || c.MaxAttempts != 5 {
		t.Fatalf("precedence: %+v", c)
	}
}

func TestConfigRejectsBadValuesByName(t *testing.T) {
	file := filepath.Join(t.TempDir(), "gatehouse.yaml")
	os.WriteFile(file, []byte("adr: x\n"), 0o644)
	if _, err := loadConfig(file, env(nil)); err == nil || !strings.Contains(err.Error(), `unknown setting "adr"`) {
		t.Fatalf("unknown key: %v", err)
	}
	for name, value := range map[string]string{
		"GATEHOUSE_LEASE_TTL":    "soon",
		"GATEHOUSE_MAX_ATTEMPTS": "-1",
		"GATEHOUSE_DATABASE_URL": "mysql://x",
		"GATEHOUSE_LOG_LEVEL":    "loud",
		// A model name without its provider.
		"GATEHOUSE_THINKING_MODELS": "o3*",
	} {
		_, err := loadConfig("", env(map[string]string{name: value}))
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s=%s: %v", name, value, err)
		}
	}
}

// Every setting is documented in docs/configuration.md with its default.
func TestConfigurationDocListsEverySetting(t *testing.T) {
	doc, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range config.Settings() {
		def := s.Default
		if def == "" {
			def = "(empty)"
		}
		row := ""
		for _, line := range strings.Split(string(doc), "\n") {
			if strings.HasPrefix(line, "| `"+s.Env+"`") {
				row = line
			}
		}
		if !strings.Contains(row, "| "+def+" |") {
			t.Errorf("docs/configuration.md does not document %s (default %s)", s.Env, def)
		}
	}
}

// An address beyond loopback needs no configured token any more: every
// /v1 request carries a credential anyway (the generated one when none is
// set), so there is no open address to refuse.
func TestNonLoopbackAddressIsAccepted(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:8080", "127.0.0.1:9", "[::1]:9", "localhost:9"} {
		if _, err := loadConfig("", env(map[string]string{"GATEHOUSE_ADDR": addr})); err != nil {
			t.Fatalf("%s: %v", addr, err)
		}
	}
}

func TestPrices(t *testing.T) {
	p, err := parsePrices("openai:gpt-4.1-mini=0.4/1.6, anthropic:claude=3/15")
	if err != nil || p["openai:gpt-4.1-mini"].OutputPerMTok != 1.6 || p["anthropic:claude"].InputPerMTok != 3 {
		t.Fatalf("prices %+v %v", p, err)
	}
	if _, err := loadConfig("", env(map[string]string{"GATEHOUSE_PRICES": "gpt=cheap"})); err == nil {
		t.Fatal("bad price table accepted")
	}
}
