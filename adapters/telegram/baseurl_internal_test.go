package telegram

import (
	"strings"
	"testing"
)

const testToken = "123456:AAH-secret_part"

func TestServerURLForms(t *testing.T) {
	for raw, want := range map[string]string{
		"":                              "https://api.telegram.org",
		"https://api.telegram.org":      "https://api.telegram.org",
		"https://api.telegram.org/":     "https://api.telegram.org",
		"https://api.telegram.org/bot":  "https://api.telegram.org",
		"https://api.telegram.org/bot/": "https://api.telegram.org",
		"https://api.telegram.org/bot" + testToken:       "https://api.telegram.org",
		"https://api.telegram.org/bot" + testToken + "/": "https://api.telegram.org",
		"http://127.0.0.1:8081":                          "http://127.0.0.1:8081",
		" http://127.0.0.1:8081/ ":                       "http://127.0.0.1:8081",
	} {
		got, err := serverURL(raw, testToken)
		if err != nil || got != want {
			t.Errorf("%q: %q, %v; want %s", raw, got, err, want)
		}
	}
}

func TestServerURLRefusals(t *testing.T) {
	for _, raw := range []string{
		"api.telegram.org",       // no scheme
		"tcp://api.telegram.org", // not http(s)
		"https://",               // no host
		"https://api.telegram.org/bot999:other-bots-token",
		"https://api.telegram.org/bot" + testToken + "/getMe",
		"https://api.telegram.org/telegram",
		"https://api.telegram.org/?x=1",
		"https://api.telegram.org/#x",
		"https://u:p@api.telegram.org",
	} {
		_, err := serverURL(raw, testToken)
		if err == nil {
			t.Errorf("%q was accepted", raw)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, "TELEGRAM_API_URL") || !strings.Contains(msg, `"https://api.telegram.org"`) {
			t.Errorf("%q: the refusal %q does not name the setting and the form expected", raw, msg)
		}
		if strings.Contains(msg, "secret_part") || strings.Contains(msg, "other-bots-token") {
			t.Errorf("%q: the refusal %q repeats a token", raw, msg)
		}
	}
}
