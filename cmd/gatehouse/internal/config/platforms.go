package config

import (
	"strings"

	"github.com/gatehouse/gatehouse/adapters/discord"
	"github.com/gatehouse/gatehouse/adapters/slackchat"
	"github.com/gatehouse/gatehouse/adapters/telegram"
	"github.com/gatehouse/gatehouse/gateway/chat"
	"github.com/gatehouse/gatehouse/toolworker"
)

// Platforms are the chat platforms this binary offers, in the order of
// their settings in --help. A new platform is its adapter package and one
// row here.
var Platforms = []chat.Platform{
	telegram.Platform,
	discord.Platform,
	slackchat.Platform,
}

// platformSettings are the settings rows of every platform; their values
// land in Config.Platform under their environment names.
func platformSettings() []Setting {
	var out []Setting
	for _, p := range Platforms {
		for _, s := range p.Settings {
			env := s.Env
			out = append(out, Setting{Env: env, Key: s.Key, Default: s.Default, Help: s.Help, set: func(c *Config, v string) error {
				if c.Platform == nil {
					c.Platform = map[string]string{}
				}
				c.Platform[env] = v
				return nil
			}})
		}
	}
	return out
}

// platformSecrets are the values of the platform settings marked secret,
// and their secret parts.
func (c Config) platformSecrets() []string {
	var out []string
	for _, p := range Platforms {
		for _, s := range p.Settings {
			if !s.Secret {
				continue
			}
			v := c.Platform[s.Env]
			out = append(out, v)
			if s.SecretParts != nil {
				out = append(out, s.SecretParts(v)...)
			}
		}
	}
	return out
}

// Secrets are the values tool output must never carry: every token, key
// and password the gateway holds, including those inside URLs.
func (c Config) Secrets() []string {
	out := []string{
		c.APIToken, c.OpenAIAPIKey, c.AnthropicAPIKey, c.EmbeddingsAPIKey,
	}
	out = append(out, c.platformSecrets()...)
	for _, u := range []string{c.DatabaseURL, c.RedisURL, c.SMTPURL, c.OpenAIBaseURL, c.AnthropicBaseURL, c.EmbeddingsURL} {
		out = append(out, toolworker.SecretsOfURL(u)...)
	}
	return out
}

// NoPlatformHint tells the admin how to turn a platform on, naming the
// token setting of each platform this binary offers.
func NoPlatformHint() string {
	var names []string
	for _, p := range Platforms {
		names = append(names, p.Token)
	}
	switch len(names) {
	case 0:
		return "No chat platform is configured."
	case 1:
		return "No chat platform is configured: set " + names[0] + "."
	}
	return "No chat platform is configured: set " + strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1] + "."
}
