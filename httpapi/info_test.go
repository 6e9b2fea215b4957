package httpapi_test

import (
	"testing"

	"github.com/gatehouse/gatehouse/httpapi"
)

// What is not configured comes in /v1/info as cmd listed it, each with its
// one message; nothing missing is an empty list, not null.
func TestInfoListsMissingConfiguration(t *testing.T) {
	missing := []httpapi.MissingSetting{
		{Setting: "GATEHOUSE_MODEL", Message: "No model is configured. Set GATEHOUSE_MODEL."},
		{Setting: "GATEHOUSE_SMTP_URL", Message: "No mail server is configured."},
	}
	run(t, httpapi.Config{ModelHint: missing[0].Message, Missing: missing}, func(t *testing.T, e *env) {
		var info struct {
			ModelConfigured bool                     `json:"modelConfigured"`
			Missing         []httpapi.MissingSetting `json:"missing"`
		}
		e.do("GET", "/v1/info", nil).expect(t, 200, "").decode(t, &info)
		if info.ModelConfigured || len(info.Missing) != 2 || info.Missing[0] != missing[0] || info.Missing[1] != missing[1] {
			t.Fatalf("info: %+v", info)
		}
	})
	run(t, httpapi.Config{Model: "openai:gpt-4.1-mini"}, func(t *testing.T, e *env) {
		var info map[string]any
		e.do("GET", "/v1/info", nil).expect(t, 200, "").decode(t, &info)
		if m, ok := info["missing"].([]any); !ok || len(m) != 0 {
			t.Fatalf("missing with everything configured: %#v", info["missing"])
		}
	})
}

// GET /v1/devmail says whether there is a dev mailbox; without one it is
// not an error.
func TestDevMailWithoutMailbox(t *testing.T) {
	run(t, httpapi.Config{}, func(t *testing.T, e *env) {
		var body struct {
			Enabled bool  `json:"enabled"`
			Entries []any `json:"entries"`
		}
		e.do("GET", "/v1/devmail", nil).expect(t, 200, "").decode(t, &body)
		if body.Enabled || body.Entries == nil || len(body.Entries) != 0 {
			t.Fatalf("devmail: %+v", body)
		}
	})
}
