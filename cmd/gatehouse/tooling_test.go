package main

import (
	"slices"
	"strings"
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

// GATEHOUSE_REDIS_URL with master_name names Sentinels (go-redis's
// failover form); without it, one server. A URL that is neither says which
// setting is wrong and never quotes its password.
func TestRedisURLPicksSentinelOrOneServer(t *testing.T) {
	plain, failover, err := redisOptions("redis://:redis-pass@127.0.0.1:6380/2")
	if err != nil || failover != nil || plain.Addr != "127.0.0.1:6380" || plain.DB != 2 || plain.Password != "redis-pass" {
		t.Fatalf("one server: %+v %+v %v", plain, failover, err)
	}

	plain, failover, err = redisOptions("redis://sentinel-user:sentinel-pass@127.0.0.1:26379/1?master_name=gatehouse&addr=127.0.0.1:26380&addr=[::1]:26381&password=master-pass")
	if err != nil || plain != nil || failover == nil {
		t.Fatalf("Sentinel form: %+v %+v %v", plain, failover, err)
	}
	if failover.MasterName != "gatehouse" || failover.DB != 1 || failover.Password != "master-pass" ||
		failover.SentinelUsername != "sentinel-user" || failover.SentinelPassword != "sentinel-pass" ||
		!slices.Equal(failover.SentinelAddrs, []string{"127.0.0.1:26379", "127.0.0.1:26380", "[::1]:26381"}) {
		t.Fatalf("Sentinel form parsed as %+v", failover)
	}
	// The master's password in the query is a secret like the userinfo's.
	secrets := Config{RedisURL: "redis://:sentinel-pass@127.0.0.1:26379?master_name=m&password=master-pass"}.Secrets()
	for _, want := range []string{"sentinel-pass", "master-pass"} {
		if !slices.Contains(secrets, want) {
			t.Errorf("%q is not treated as a secret", want)
		}
	}

	for _, bad := range []string{
		"redis://:pw@127.0.0.1:26379?master_name=",                     // no master to ask for
		"redis://:pw@127.0.0.1:26379?master_name=m&addr=nohostport",    // a Sentinel without a port
		"redis://:pw@127.0.0.1:26379?master_name=m&sentinel_pass=typo", // an option go-redis does not know
		"redis://:pw@127.0.0.1:26379/x",                                // not a database number
		"redis://:pw@127.0.0.1:bad port",                               // not a URL
	} {
		_, _, err := redisOptions(bad)
		if err == nil || !strings.Contains(err.Error(), "GATEHOUSE_REDIS_URL") || strings.Contains(err.Error(), ":pw@") {
			t.Errorf("%s: %v; want an error naming GATEHOUSE_REDIS_URL, without the password", bad, err)
		}
	}
}
