package main

import (
	"slices"
	"testing"
)

// Every secret the gateway is configured with is handed to the redactor,
// including passwords inside URLs and an MCP server's own credentials.
func TestSecretsCoverEveryConfiguredCredential(t *testing.T) {
	c := Config{
		APIToken: "api-token-1", OpenAIAPIKey: "sk-openai-2", AnthropicAPIKey: "sk-ant-3",
		Platform:    map[string]string{"TELEGRAM_BOT_TOKEN": "123456:tg-secret-4", "SLACK_SIGNING_SECRET": "slack-sign-5"},
		DatabaseURL: "postgres://gh:db-pass-6@127.0.0.1/x", RedisURL: "redis://:redis-pass-7@127.0.0.1:6379",
		SMTPURL: "smtp://agent:smtp-pass-8@127.0.0.1:587",
	}
	got := append(c.Secrets(), credentialValues([]string{"GITHUB_TOKEN=ghp-9", "PATH=/usr/bin", "LANG=C.UTF-8"})...)
	for _, want := range []string{"api-token-1", "sk-openai-2", "sk-ant-3", "123456:tg-secret-4", "tg-secret-4", "slack-sign-5", "db-pass-6", "redis-pass-7", "smtp-pass-8", "ghp-9"} {
		if !slices.Contains(got, want) {
			t.Errorf("%q is not treated as a secret", want)
		}
	}
	for _, notSecret := range []string{"/usr/bin", "C.UTF-8"} {
		if slices.Contains(got, notSecret) {
			t.Errorf("%q is treated as a secret: every path would be redacted", notSecret)
		}
	}
}
