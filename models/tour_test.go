package models_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/models"
)

// tourReg is a registry with nothing configured: the tour needs no
// script file and no key.
func tourReg(t *testing.T) *models.Registry {
	t.Helper()
	reg, err := models.New(models.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// tourSay asks the tour with msgs and returns its answer.
func tourSay(t *testing.T, reg *models.Registry, msgs ...models.Message) models.Response {
	t.Helper()
	chain, err := models.ParseSelection(models.TourSelection)
	if err != nil {
		t.Fatal(err)
	}
	// The supervisor's notes come first and must not confuse it.
	msgs = append([]models.Message{{Role: models.RoleSystem, Text: "The latest message to answer: …"}}, msgs...)
	resp, _, err := reg.Call(context.Background(), chain, models.Request{Messages: msgs}, nil)
	if err != nil {
		t.Fatalf("tour: %v", err)
	}
	if resp.Provider != "scripted" || resp.Model != models.TourModel {
		t.Fatalf("answered by %s:%s", resp.Provider, resp.Model)
	}
	return resp
}

func user(text string) models.Message { return models.Message{Role: models.RoleUser, Text: text} }

// asked returns the messages of a turn whose one call got result.
func asked(text string, call gh.ToolCall, result string, isError bool) []models.Message {
	return []models.Message{user(text),
		{Role: models.RoleAssistant, ToolCalls: []gh.ToolCall{call}},
		{Role: models.RoleTool, ToolCallID: call.ID, Text: result, IsError: isError}}
}

func oneCall(t *testing.T, resp models.Response, name string) gh.ToolCall {
	t.Helper()
	if len(resp.ToolCalls) != 1 || resp.ToolCalls[0].Name != name || resp.StopReason != models.StopToolUse {
		t.Fatalf("want one call of %s, got %+v (stop %s)", name, resp.ToolCalls, resp.StopReason)
	}
	if !strings.HasPrefix(resp.Text, "Tour:") {
		t.Errorf("the tour's words are not labelled: %q", resp.Text)
	}
	return resp.ToolCalls[0]
}

func TestTourEmailAsksForEmailSendAndAnswersEachDecision(t *testing.T) {
	reg := tourReg(t)
	const ask = "Email Sara that the report is ready."
	call := oneCall(t, tourSay(t, reg, user(ask)), "email_send")
	var args struct{ To, Subject, Body string }
	if err := json.Unmarshal(call.Arguments, &args); err != nil {
		t.Fatal(err)
	}
	if args.To != "Sara" || !strings.Contains(args.Subject, "tour") || !strings.Contains(args.Body, "report is ready") {
		t.Fatalf("email_send arguments: %+v", args)
	}
	if claims, genuine := reg.TourCall(call.ID, call.Name); !claims || !genuine {
		t.Fatalf("TourCall(%q) = %v, %v: the tour's own call must be genuine", call.ID, claims, genuine)
	}
	if got := reg.TourContacts()["Sara"]; got != "sara@example.com" {
		t.Fatalf("demo contact Sara = %q", got)
	}

	for _, c := range []struct {
		result  string
		isError bool
		want    string
	}{
		{"delivered to the dev mailbox (tour only, not sent): to sara@example.com, file mail-x.eml", false, "mail-x.eml"},
		{"The user denied this call (local, via web); it did not run.", true, "you denied it"},
		{"The approval request expired after 5m0s without a decision; the call did not run. It can be asked for again.", true, "expired"},
		{"email_send cannot run: no SMTP", true, "not delivered: email_send cannot run"},
	} {
		resp := tourSay(t, reg, asked(ask, call, c.result, c.isError)...)
		if len(resp.ToolCalls) != 0 || !strings.Contains(resp.Text, c.want) || !strings.HasPrefix(resp.Text, "Tour:") {
			t.Errorf("after %q the tour said %q (calls %v), want %q", c.result, resp.Text, resp.ToolCalls, c.want)
		}
	}
}

func TestTourCallIDsCannotBeForged(t *testing.T) {
	reg, other := tourReg(t), tourReg(t)
	call := oneCall(t, tourSay(t, reg, user("email Sara")), "email_send")
	for _, c := range []struct {
		id, tool        string
		claims, genuine bool
	}{
		{call.ID, "email_send", true, true},
		{"u3-a1_0_" + call.ID, "email_send", true, true}, // as the supervisor commits it
		{"u3-a1_0_" + call.ID[:len(call.ID)-1], "email_send", true, false},
		{call.ID, "shell_exec", true, false},                    // bound to its tool
		{"tour_0011223344556677_00", "email_send", true, false}, // a made-up mac
		{"tour_nothing", "email_send", true, false},
		{"call_abc", "email_send", false, false}, // a real model's id
		{"", "email_send", false, false},
	} {
		if claims, genuine := reg.TourCall(c.id, c.tool); claims != c.claims || genuine != c.genuine {
			t.Errorf("TourCall(%q, %s) = %v, %v; want %v, %v", c.id, c.tool, claims, genuine, c.claims, c.genuine)
		}
	}
	if len(call.ID) > 40 {
		t.Errorf("the tour's id %q is longer than the 40 characters the supervisor keeps", call.ID)
	}
	// Another process (another registry, another key) does not honour it.
	if _, genuine := other.TourCall(call.ID, call.Name); genuine {
		t.Error("a tour call was genuine for another registry")
	}
	if again := oneCall(t, tourSay(t, reg, user("email Sara")), "email_send"); again.ID == call.ID {
		t.Error("two calls got one id")
	}
}

func TestTourMemory(t *testing.T) {
	reg := tourReg(t)
	const tell = "Remember that I prefer short answers."
	call := oneCall(t, tourSay(t, reg, user(tell)), "remember")
	if string(call.Arguments) != `{"fact": "I prefer short answers"}` && !strings.Contains(string(call.Arguments), `"I prefer short answers"`) {
		t.Fatalf("remember arguments: %s", call.Arguments)
	}
	if resp := tourSay(t, reg, asked(tell, call, "Remembered.", false)...); !strings.Contains(resp.Text, "I prefer short answers") {
		t.Errorf("after remembering: %q", resp.Text)
	}

	const ask = "What do you remember?"
	list := oneCall(t, tourSay(t, reg, user(ask)), "memory_list")
	resp := tourSay(t, reg, asked(ask, list, "- I prefer short answers\n- Sara's email is sara@example.com", false)...)
	for _, want := range []string{"| # | What I remember |", "| --- | --- |", "| 1 | I prefer short answers |", "| 2 | Sara's email is sara@example.com |"} {
		if !strings.Contains(resp.Text, want) {
			t.Errorf("the table answer lacks %q:\n%s", want, resp.Text)
		}
	}
	if resp := tourSay(t, reg, asked(ask, list, "Nothing is remembered about this person yet.", false)...); strings.Contains(resp.Text, "|") || !strings.Contains(resp.Text, "nothing") {
		t.Errorf("with nothing remembered: %q", resp.Text)
	}
}

func TestTourTableAndIntro(t *testing.T) {
	reg := tourReg(t)
	resp := tourSay(t, reg, user("Show me a table"))
	if len(resp.ToolCalls) != 0 || !strings.Contains(resp.Text, "| Step | What happens | Where |") {
		t.Fatalf("table answer: %q %v", resp.Text, resp.ToolCalls)
	}
	resp = tourSay(t, reg, user("hello"))
	if len(resp.ToolCalls) != 0 || !strings.Contains(resp.Text, "scripted:tour") || !strings.Contains(resp.Text, "Email Sara") {
		t.Fatalf("intro: %q", resp.Text)
	}
}

// The tour is one model of the scripted provider; scripted:demo still
// needs its file.
func TestTourNeedsNoScriptFileButDemoDoes(t *testing.T) {
	reg := tourReg(t)
	chain, _ := models.ParseSelection("scripted:demo")
	_, _, err := reg.Call(context.Background(), chain, models.Request{Messages: []models.Message{user("hi")}}, nil)
	if models.ErrorCode(err) != models.CodeNotConfigured {
		t.Fatalf("scripted:demo without a file: %v", err)
	}
}

// The one no-model message names the tour and how to configure a model.
func TestNotConfiguredHintIsOneMessage(t *testing.T) {
	reg := tourReg(t)
	_, _, err := reg.Call(context.Background(), nil, models.Request{Messages: []models.Message{user("hi")}}, nil)
	var me *models.Error
	if !errors.As(err, &me) || me.Code != models.CodeNotConfigured || me.Message != models.NotConfiguredHint {
		t.Fatalf("no selection: %v", err)
	}
	for _, want := range []string{"No model is configured.", "Set GATEHOUSE_MODEL", models.TourSelection, "Try the tour"} {
		if strings.Count(models.NotConfiguredHint, want) != 1 {
			t.Errorf("the hint should say %q once: %s", want, models.NotConfiguredHint)
		}
	}
}
