package models

import (
	"fmt"
	"strings"

	gh "github.com/gatehouse/gatehouse"
)

// DefaultThinkingModels are the models that take a thinking level when
// Config.ThinkingModels is nil: OpenAI's reasoning models (reasoning_effort)
// and the Anthropic models with extended thinking. Anthropic's names since
// Claude 4 are claude-<family>-<version>, all of which think; older ones
// (claude-3-5-…) do not. OpenAI's o1-mini and o1-preview do not take
// reasoning_effort, hence the exact o1 entries.
var DefaultThinkingModels = []string{
	"openai:o1", "openai:o1-2024-12-17", "openai:o3*", "openai:o4*", "openai:gpt-5*",
	"anthropic:claude-3-7-sonnet*", "anthropic:claude-sonnet-*", "anthropic:claude-opus-*", "anthropic:claude-haiku-*",
}

// Anthropic extended thinking budgets (budget_tokens) by level. The API
// wants at least 1024 and less than max_tokens.
var anthropicThinkingBudget = map[string]int{
	gh.ThinkingLow:    2048,
	gh.ThinkingMedium: 8192,
	gh.ThinkingHigh:   24576,
}

// Applied is what a provider actually sent of a Request's options, for the
// run's execution record.
type Applied struct {
	// Thinking is the level the model was run with: "" when none was asked
	// or the model cannot take it.
	Thinking string
	// ThinkingBudget is Anthropic's budget_tokens, 0 if none was sent.
	ThinkingBudget int
	// MaxTokens is the output limit sent, 0 if none (the provider's default).
	MaxTokens int
	// Note says what was asked for and not applied, and why.
	Note string
}

// thinkingModels matches "provider:model" against a list of entries: an
// entry ending in "*" matches every model starting with the rest, any other
// entry matches its own name only. "provider:*" matches every model of the
// provider (a local server whose models all take reasoning_effort).
type thinkingModels []string

func (l thinkingModels) takes(provider, model string) bool {
	name := provider + ":" + model
	for _, e := range l {
		e = strings.TrimSpace(e)
		if prefix, ok := strings.CutSuffix(e, "*"); ok {
			if strings.HasPrefix(name, prefix) {
				return true
			}
		} else if e == name {
			return true
		}
	}
	return false
}

// notTaken is the Applied of a level the model cannot take: nothing is sent
// and the note says so.
func notTaken(provider, model, level, option string) Applied {
	if level == "" || level == gh.ThinkingOff {
		// Nothing was asked, or "off" for a model that never thinks:
		// that is what it runs with.
		return Applied{Thinking: level}
	}
	return Applied{Note: fmt.Sprintf("thinking %s not applied: %s:%s does not take %s (GATEHOUSE_THINKING_MODELS lists the models that do)",
		level, provider, model, option)}
}
