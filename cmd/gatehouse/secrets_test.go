package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/gatehouse/gatehouse/cmd/gatehouse/internal/config"
)

// A credential is marked where its row is declared: every core row named
// like a key, a token or a URL (but the public address, which is no
// secret) is Secret (a platform's rows are its table's to mark), and Secrets derives from the marks, the core rows' and the
// platforms' alike.
func TestSecretRowsAreMarkedInTheTable(t *testing.T) {
	var marked []string
	for _, s := range config.Settings() {
		core := strings.HasPrefix(s.Env, "GATEHOUSE_") || strings.HasPrefix(s.Env, "OPENAI_") || strings.HasPrefix(s.Env, "ANTHROPIC_")
		credential := core && (strings.HasSuffix(s.Env, "_KEY") || strings.HasSuffix(s.Env, "_API_TOKEN") || strings.HasSuffix(s.Env, "_BOT_TOKEN") ||
			strings.HasSuffix(s.Env, "_SECRET") || strings.HasSuffix(s.Env, "_URL") && s.Env != "GATEHOUSE_PUBLIC_URL")
		if credential && !s.Secret() {
			t.Errorf("%s looks like a credential and is not marked Secret", s.Env)
		}
		if s.Secret() {
			marked = append(marked, s.Env)
		}
	}
	for _, want := range []string{"GATEHOUSE_API_TOKEN", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GATEHOUSE_EMBEDDINGS_API_KEY",
		"GATEHOUSE_DATABASE_URL", "GATEHOUSE_REDIS_URL", "GATEHOUSE_SMTP_URL", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", "GATEHOUSE_EMBEDDINGS_URL",
		"TELEGRAM_BOT_TOKEN", "SLACK_SIGNING_SECRET"} {
		if !slices.Contains(marked, want) {
			t.Errorf("%s is not marked Secret", want)
		}
	}
	if slices.Contains(marked, "GATEHOUSE_PUBLIC_URL") || slices.Contains(marked, "GATEHOUSE_ADDR") {
		t.Error("a setting that is no credential is marked Secret")
	}
	c := Config{EmbeddingsAPIKey: "emb-key-1", EmbeddingsURL: "https://u:emb-pass-2@emb.example/v1", PublicURL: "https://gh.example"}
	got := c.Secrets()
	if !slices.Contains(got, "emb-key-1") || !slices.Contains(got, "emb-pass-2") || slices.Contains(got, "https://gh.example") {
		t.Fatalf("Secrets %q", got)
	}
}
