package gateway_test

import (
	"strings"
	"testing"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/adapters/telegram/telegramtest"
	"github.com/gatehouse/gatehouse/gateway/chat"
	"github.com/gatehouse/gatehouse/internal/testing/stacktest"
	"github.com/gatehouse/gatehouse/models/modeltest"
	"github.com/gatehouse/gatehouse/store"
)

// /model and /think at the gateway: /model lists what the chat may pick
// and which it has, picks only a listed model, refuses anything else with
// the list; /think takes the API's levels only; a stranger changes
// nothing; the chat's next turns go to the picked model with the picked
// level, and "default" goes back.
func TestModelAndThinkCommands(t *testing.T) {
	e, fake := telegramEnv(t, telegramtest.TelegramOptions{}, stacktest.EnvOptions{Allowed: []string{"alice"},
		ChatModels: "openai:test-model; openai:o3; openai:other-model,openai:test-model"})
	session(e, "alice")
	n := 0
	cmd := func(name, args string) chat.CommandReply {
		t.Helper()
		n++
		in := gh.Inbound{Platform: gh.PlatformTelegram, UpdateID: "cmd" + strings.Repeat("x", n), ChatID: fake.ChatID("alice"), UserID: e.Fake.UserID("alice"),
			UserName: "alice", MessageID: "7", Text: args}
		reply, err := e.Gateway.Command(e.Ctx, name, in)
		if err != nil || reply.Refused {
			t.Fatalf("/%s %s: %+v %v", name, args, reply, err)
		}
		return reply
	}
	stored := func() store.ChatSettings {
		t.Helper()
		s, _, err := e.Store.ChatSettings(e.Ctx, store.ChatKey{Platform: gh.PlatformTelegram, ChatID: fake.ChatID("alice")})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	ask := func(text string) modeltest.Request {
		t.Helper()
		before := len(e.Model.Requests())
		e.Fake.Say("alice", "alice", text, false)
		e.Eventually("the model request for "+text, func() bool { return len(e.Model.Requests()) > before })
		e.Eventually("the answer to "+text, func() bool {
			ms := e.Fake.Messages("alice")
			return len(ms) > 0 && ms[len(ms)-1].Text == "ok"
		})
		return e.Model.Requests()[before]
	}

	list := cmd(chat.CommandModel, "").Text
	for _, want := range []string{"the configured model (openai:test-model)", "1. openai:test-model", "2. openai:o3", "3. openai:other-model,openai:test-model", "/think"} {
		if !strings.Contains(list, want) {
			t.Fatalf("/model must say %q:\n%s", want, list)
		}
	}
	refused := cmd(chat.CommandModel, "openai:gpt-5").Text
	if !strings.Contains(refused, "not a model this chat may pick") || !strings.Contains(refused, "openai:o3") || stored().Selection != "" {
		t.Fatalf("an unlisted model: %q, stored %+v", refused, stored())
	}
	if row := e.Receive("cmd" + strings.Repeat("x", n)); row.Reason != chat.ReasonCommand || !strings.Contains(row.Detail, "refused") {
		t.Fatalf("the refusal in the receive log: %+v", row)
	}
	if got := cmd(chat.CommandModel, "o3").Text; !strings.Contains(got, "now answers with openai:o3") || stored().Selection != "openai:o3" {
		t.Fatalf("/model o3: %q, stored %+v", got, stored())
	}
	if got := cmd(chat.CommandThink, "maximum").Text; !strings.Contains(got, "off, low, medium, high") || stored().Thinking != "" {
		t.Fatalf("/think maximum: %q, stored %+v", got, stored())
	}
	if got := cmd(chat.CommandThink, "HIGH").Text; !strings.Contains(got, "now high") || stored().Thinking != gh.ThinkingHigh || stored().Selection != "openai:o3" {
		t.Fatalf("/think HIGH: %q, stored %+v", got, stored())
	}
	if got := cmd(chat.CommandModel, "").Text; !strings.Contains(got, "This chat's model: openai:o3 (picked by alice)") || !strings.Contains(got, "2. openai:o3 (this chat's)") ||
		!strings.Contains(got, "thinking level: high") {
		t.Fatalf("/model after the picks:\n%s", got)
	}
	// A stranger is refused and changes nothing.
	stranger := gh.Inbound{Platform: gh.PlatformTelegram, UpdateID: "u-stranger", ChatID: fake.ChatID("alice"), UserID: "424242", UserName: "mallory", Text: "openai:test-model"}
	if reply, err := e.Gateway.Command(e.Ctx, chat.CommandModel, stranger); err != nil || !reply.Refused || stored().Selection != "openai:o3" {
		t.Fatalf("a stranger's /model: %+v %v, stored %+v", reply, err, stored())
	}

	r := ask("think hard")
	if r.Model != "o3" || r.JSON()["reasoning_effort"] != "high" {
		t.Fatalf("the chat's turn went to %s with reasoning_effort %v: %s", r.Model, r.JSON()["reasoning_effort"], r.Body)
	}
	cmd(chat.CommandModel, "3")
	if r := ask("and now"); r.Model != "other-model" {
		t.Fatalf("/model 3 must pick the third, other-model; the turn went to %s", r.Model)
	}
	cmd(chat.CommandModel, "default")
	cmd(chat.CommandThink, "default")
	if s := stored(); s.Selection != "" || s.Thinking != "" {
		t.Fatalf("default must clear both: %+v", s)
	}
	if r := ask("plain"); r.Model != "test-model" || r.JSON()["reasoning_effort"] != nil {
		t.Fatalf("after default the turn went to %s with reasoning_effort %v", r.Model, r.JSON()["reasoning_effort"])
	}
	if unknown := cmd("frobnicate", "").Text; !strings.Contains(unknown, "/model") || !strings.Contains(unknown, "/think") {
		t.Fatalf("an unknown command's answer must list /model and /think: %q", unknown)
	}
}
