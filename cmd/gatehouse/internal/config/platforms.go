package config

import (
	"strings"

	"github.com/gatehouse/gatehouse/adapters/discord"
	"github.com/gatehouse/gatehouse/adapters/slackchat"
	"github.com/gatehouse/gatehouse/adapters/telegram"
	"github.com/gatehouse/gatehouse/gateway/chat"
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
// land in Config.Platform under their environment names, and a setting the
// platform marks Secret is secret here too (its value and its SecretParts).
func platformSettings() []Setting {
	var out []Setting
	for _, p := range Platforms {
		for _, s := range p.Settings {
			env := s.Env
			v := fn(func(c *Config, v string) error {
				if c.Platform == nil {
					c.Platform = map[string]string{}
				}
				c.Platform[env] = v
				return nil
			})
			if s.Secret {
				parts := s.SecretParts
				v.secret = func(c *Config) []string {
					val := c.Platform[env]
					if parts == nil {
						return []string{val}
					}
					return append([]string{val}, parts(val)...)
				}
			}
			out = append(out, Setting{Env: env, Key: s.Key, Default: s.Default, Help: s.Help, val: v})
		}
	}
	return out
}

// Secrets are the values tool output must never carry: what every row of
// the settings table marked secret holds (Setting.Secret: every token, key
// and password the gateway holds, including those inside URLs). Empty
// values are the redactor's to skip.
func (c Config) Secrets() []string {
	var out []string
	for _, s := range settings {
		if s.val.secret != nil {
			out = append(out, s.val.secret(&c)...)
		}
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
