package main

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/adapters/telegram/telegramtest"
	"github.com/gatehouse/gatehouse/models/modeltest"
)

// Choosing in the chat through the binary, on the fake Bot API: /model
// refuses a model GATEHOUSE_CHAT_MODELS does not list, /model o3 sends
// the chat's next turn to o3, /think high reaches the request as
// reasoning_effort, and both are kept in the database: a restarted
// gateway still answers with them.
func TestChatPicksItsModelAndThinkingThroughTheBinary(t *testing.T) {
	tg := telegramtest.NewTelegram(t, telegramtest.TelegramOptions{})
	model := modeltest.NewOpenAI(t, "test-key")
	model.SetDefault(modeltest.Reply{Text: "Answered."})
	envs := append([]string{"GATEHOUSE_DATA_DIR=" + t.TempDir(), "GATEHOUSE_MODEL=openai:test-model", "OPENAI_API_KEY=test-key",
		"OPENAI_BASE_URL=" + model.BaseURL(), "GATEHOUSE_CHAT_MODELS=openai:test-model;openai:o3"}, telegramEnvs(tg)...)
	p := start(t, envs...)
	command := func(name, args string) string {
		t.Helper()
		reply, err := tg.CommandArgs("alice", "alice", name, args)
		if err != nil {
			t.Fatalf("/%s %s: %v", name, args, err)
		}
		return reply.Text
	}
	turn := func(text string) modeltest.Request {
		t.Helper()
		before, answers := len(model.Requests()), count(chatTexts(tg, "alice"), "Answered.")
		tg.Say("alice", "alice", text, false)
		waitUntil(t, "the answer to "+text, func() bool { return count(chatTexts(tg, "alice"), "Answered.") > answers })
		return model.Requests()[before]
	}

	if r := turn("hello"); r.Model != "test-model" || r.JSON()["reasoning_effort"] != nil {
		t.Fatalf("before any pick the turn went to %s with reasoning_effort %v", r.Model, r.JSON()["reasoning_effort"])
	}
	if got := command("model", "openai:gpt-5"); !strings.Contains(got, "not a model this chat may pick") || !strings.Contains(got, "openai:o3") {
		t.Fatalf("/model openai:gpt-5: %q", got)
	}
	if r := turn("still the default?"); r.Model != "test-model" {
		t.Fatalf("a refused /model changed the model to %s", r.Model)
	}
	if got := command("model", "o3"); !strings.Contains(got, "now answers with openai:o3") {
		t.Fatalf("/model o3: %q", got)
	}
	if got := command("think", "high"); !strings.Contains(got, "now high") {
		t.Fatalf("/think high: %q", got)
	}
	if r := turn("think it over"); r.Model != "o3" || r.JSON()["reasoning_effort"] != "high" {
		t.Fatalf("after /model o3 and /think high the turn went to %s with reasoning_effort %v", r.Model, r.JSON()["reasoning_effort"])
	}

	// Kept with the chat, not the process.
	p.stopWith(t, syscall.SIGTERM)
	start(t, envs...)
	if r := turn("after the restart"); r.Model != "o3" || r.JSON()["reasoning_effort"] != "high" {
		t.Fatalf("after a restart the turn went to %s with reasoning_effort %v", r.Model, r.JSON()["reasoning_effort"])
	}
	if got := command("model", ""); !strings.Contains(got, "This chat's model: openai:o3") || !strings.Contains(got, "thinking level: high") {
		t.Fatalf("/model after the restart:\n%s", got)
	}
}

// A list a chat could pick a broken model from is refused at start, with
// the setting named: a selection that does not parse, and one whose
// provider is not there.
func TestChatModelsAreCheckedAtStart(t *testing.T) {
	for _, tc := range []struct{ list, want string }{
		{"openai:test-model;gpt-5", "GATEHOUSE_CHAT_MODELS"},
		{"openai:test-model;nosuch:model", "nosuch"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cmd := exec.CommandContext(ctx, binary(t), "serve")
		cmd.Env = append(cmd.Environ(), "GATEHOUSE_ADDR="+freeAddr(t), "GATEHOUSE_DATA_DIR="+filepath.Join(t.TempDir(), "data"),
			"GATEHOUSE_MODEL=openai:test-model", "OPENAI_API_KEY=k", "GATEHOUSE_CHAT_MODELS="+tc.list)
		out, err := cmd.CombinedOutput()
		timedOut := ctx.Err() != nil
		cancel()
		if err == nil || timedOut || !strings.Contains(string(out), "GATEHOUSE_CHAT_MODELS") || !strings.Contains(string(out), tc.want) {
			t.Fatalf("GATEHOUSE_CHAT_MODELS=%s: exit %v, output:\n%s", tc.list, err, out)
		}
	}
}
