package web_test

import (
	"context"
	"testing"

	"github.com/chromedp/chromedp"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/internal/testing/stacktest"
)

// The web chat's selectors: the models GATEHOUSE_CHAT_MODELS lists (and
// nothing else) and the thinking levels; a pick is kept for the chat in
// the store, the next turn goes to the picked model with the level, the
// run line says which model and level answered, and a reload shows the
// picks again.
func TestBrowserModelAndThinkingSelectors(t *testing.T) {
	s, url := startStack(t, nil, stacktest.EnvOptions{ChatModels: "openai:test-model;openai:o3"})
	ctx := browser(t)
	id := newChat(t, ctx, url)

	until(t, ctx, "the model selector with the listed models", `(() => {
		const s = document.querySelector('[data-testid="model-select"]');
		return !!s && !s.hidden && !s.disabled && JSON.stringify(Array.from(s.options).map(o => o.value)) === JSON.stringify(["", "openai:test-model", "openai:o3"]);
	})()`)
	until(t, ctx, "the thinking selector with the levels", `JSON.stringify(Array.from(document.querySelector('[data-testid="think-select"]').options).map(o => o.value)) === JSON.stringify(["", "off", "low", "medium", "high"])`)
	pick := func(testid, value string) {
		t.Helper()
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => {
			const s = document.querySelector('[data-testid="`+testid+`"]');
			s.value = "`+value+`";
			s.dispatchEvent(new Event("change"));
			return s.value === "`+value+`";
		})()`))
		if err != nil || !ok {
			t.Fatalf("pick %s in %s: %v %v", value, testid, ok, err)
		}
	}
	pick("model-select", "openai:o3")
	stacktest.Eventually(t, "the model kept for the chat", func() bool {
		cs, _, _ := s.Store.SessionChatSettings(context.Background(), id)
		return cs.Selection == "openai:o3"
	})
	pick("think-select", "high")
	stacktest.Eventually(t, "the level kept for the chat", func() bool {
		cs, _, _ := s.Store.SessionChatSettings(context.Background(), id)
		return cs.Thinking == gh.ThinkingHigh && cs.Selection == "openai:o3" && cs.UpdatedBy == "web"
	})

	sendMessage(t, ctx, "think it over")
	until(t, ctx, "the run line naming o3 and the level", `Array.from(document.querySelectorAll('[data-testid="run-meta"]')).some(m => m.textContent.includes("o3") && m.textContent.includes("thinking high"))`)
	reqs := s.Model.Requests()
	if r := reqs[len(reqs)-1]; r.Model != "o3" || r.JSON()["reasoning_effort"] != "high" {
		t.Fatalf("the turn went to %s with reasoning_effort %v", r.Model, r.JSON()["reasoning_effort"])
	}
	screenshot(t, ctx, "chat-settings.png")

	do(t, ctx, "reload", chromedp.Reload())
	until(t, ctx, "the picks shown after the reload", `document.querySelector('[data-testid="model-select"]').value === "openai:o3" &&
		document.querySelector('[data-testid="think-select"]').value === "high"`)
	// Back to the default.
	pick("model-select", "")
	stacktest.Eventually(t, "the model cleared", func() bool {
		cs, _, _ := s.Store.SessionChatSettings(context.Background(), id)
		return cs.Selection == "" && cs.Thinking == gh.ThinkingHigh
	})
}
