package adaptertest

import (
	"strings"
	"testing"
)

// /model and /think as people on the platform meet them: /model lists
// the models the chat may pick, refuses one not listed (saying which
// are), picks a listed one; /think sets the level; the chat's next turn
// goes to the picked model with the level (reasoning_effort).
func testModelAndThinkInTheChat(t *testing.T, mk func(StackOptions) *env) {
	e := mk(StackOptions{Allowed: []string{"alice"}, ChatModels: "openai:test-model;openai:o3"})
	command := func(user, name, args string) string {
		t.Helper()
		reply, err := e.Fake.CommandArgs("room", user, name, args)
		if err != nil {
			t.Fatalf("/%s %s: %v", name, args, err)
		}
		return reply.Text
	}
	// A platform that registers commands at run time (Discord) offers
	// them once registered.
	var list string
	e.Eventually("/model offered", func() bool {
		reply, err := e.Fake.CommandArgs("room", "alice", "model", "")
		list = reply.Text
		return err == nil
	})
	if !strings.Contains(list, "1. openai:test-model") || !strings.Contains(list, "2. openai:o3") {
		t.Fatalf("/model must list what the chat may pick:\n%s", list)
	}
	if refused := command("alice", "model", "openai:gpt-5"); !strings.Contains(refused, "not a model this chat may pick") || !strings.Contains(refused, "openai:o3") {
		t.Fatalf("/model of an unlisted model: %q", refused)
	}
	if picked := command("alice", "model", "o3"); !strings.Contains(picked, "now answers with openai:o3") {
		t.Fatalf("/model o3: %q", picked)
	}
	if set := command("alice", "think", "high"); !strings.Contains(set, "now high") {
		t.Fatalf("/think high: %q", set)
	}
	before := len(e.Model.Requests())
	e.ask("room", "alice", "think it over")
	e.reply("room", "ok")
	reqs := e.Model.Requests()
	if len(reqs) <= before {
		t.Fatal("no model request for the chat's turn")
	}
	if r := reqs[before]; r.Model != "o3" || r.JSON()["reasoning_effort"] != "high" {
		t.Fatalf("the chat's turn went to %s with reasoning_effort %v, want o3 and high", r.Model, r.JSON()["reasoning_effort"])
	}
	e.noFakeErrors()
}
