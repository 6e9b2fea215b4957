package models_test

import (
	"slices"
	"testing"

	"github.com/gatehouse/gatehouse/models"
)

// The list a chat picks from: selections with their fallbacks, separated
// by semicolons or lines; a pick by selection, number or model name; no
// pick of anything not listed.
func TestChatChoices(t *testing.T) {
	c, err := models.ParseChatChoices("openai:gpt-4.1-mini,anthropic:claude-sonnet-4-5; OpenAI:o3\nanthropic:claude-opus-4-1;openai:o3")
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Strings(); !slices.Equal(got, []string{"openai:gpt-4.1-mini,anthropic:claude-sonnet-4-5", "openai:o3", "anthropic:claude-opus-4-1"}) {
		t.Fatalf("choices %q", got)
	}
	for name, want := range map[string]string{
		"openai:o3": "openai:o3", " OPENAI:o3 ": "openai:o3", "2": "openai:o3", "o3": "openai:o3",
		"openai:gpt-4.1-mini, anthropic:claude-sonnet-4-5": "openai:gpt-4.1-mini,anthropic:claude-sonnet-4-5",
		"claude-opus-4-1": "anthropic:claude-opus-4-1",
	} {
		if got, ok := c.Find(name); !ok || got.String() != want {
			t.Errorf("Find(%q) = %v %v, want %s", name, got, ok, want)
		}
	}
	for _, name := range []string{"openai:gpt-4.1-mini", "anthropic:claude-sonnet-4-5", "openai:o3-pro", "gpt-5", "0", "4", "", "openai:"} {
		if got, ok := c.Find(name); ok {
			t.Errorf("Find(%q) picked %v, which is not listed", name, got)
		}
	}
	if !c.Allows("openai:o3") || c.Allows("openai:gpt-4.1-mini") || c.Allows("") {
		t.Fatal("Allows must take exactly the listed selections")
	}
	if _, err := models.ParseChatChoices("openai:o3; gpt-5"); err == nil {
		t.Fatal("a selection without its provider must be refused")
	}
	if c, err := models.ParseChatChoices(" ; \n"); err != nil || len(c) != 0 {
		t.Fatalf("an empty list: %v %v", c, err)
	}
}
