package models_test

import (
	"context"
	"strings"
	"testing"

	"github.com/gatehouse/gatehouse/models"
	"github.com/gatehouse/gatehouse/models/modeltest"
)

// The forms the SDKs' documentation and common tools write reach the
// fake servers; anything else is refused at start, naming the setting.
func TestProviderBaseURLsTakeTheDocumentedForms(t *testing.T) {
	for _, form := range []struct{ name, openai, anthropic string }{
		{"as the fakes give them", "", ""},
		{"trailing slashes", "/", "/"},
		{"the endpoints themselves", "/chat/completions", "/v1/messages"},
		{"anthropic with /v1 (the SDK adds it)", "", "/v1/"},
	} {
		t.Run(form.name, func(t *testing.T) {
			e := newEnv(t, func(c *models.Config) {
				c.OpenAIBaseURL += form.openai
				c.AnthropicBaseURL += form.anthropic
			})
			e.oa.SetDefault(modeltest.Reply{Text: "ok"})
			e.an.SetDefault(modeltest.Reply{Text: "ok"})
			for _, sel := range []string{"openai:a", "anthropic:b"} {
				if resp, _, err := e.reg.Call(context.Background(), chain(t, sel), userReq("hi"), nil); err != nil || resp.Text == "" {
					t.Fatalf("%s with %q / %q: %+v %v", sel, form.openai, form.anthropic, resp, err)
				}
			}
		})
	}
}

func TestProviderBaseURLsRefuseOtherForms(t *testing.T) {
	for _, tc := range []struct{ openai, anthropic, want string }{
		{"api.openai.com/v1", "", "OPENAI_BASE_URL"},
		{"ftp://127.0.0.1/v1", "", "OPENAI_BASE_URL"},
		{"http://127.0.0.1:11434/v1?key=x", "", "no query"},
		{"", "https://user:pw@api.anthropic.com", "ANTHROPIC_BASE_URL"},
		{"", "https://api.anthropic.com#x", "ANTHROPIC_BASE_URL"},
	} {
		_, err := models.New(models.Config{OpenAIBaseURL: tc.openai, AnthropicBaseURL: tc.anthropic})
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "pw@") || strings.Contains(err.Error(), ":pw") {
			t.Errorf("%q / %q: %v, want a refusal naming %s", tc.openai, tc.anthropic, err, tc.want)
		}
	}
}
