package main

import (
	"encoding/json"
	"strings"
	"syscall"
	"testing"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/adapters/adaptertest"
	"github.com/gatehouse/gatehouse/adapters/telegram/telegramtest"
	"github.com/gatehouse/gatehouse/gateway/chat"
	"github.com/gatehouse/gatehouse/models/modeltest"
)

// A stuck turn as a Telegram user and an operator meet it, with the real
// binary: an approved command that hangs gets an incident card in the
// chat after GATEHOUSE_STUCK_AFTER; Diagnose answers while the turn is
// still stuck; Close ends it and says the command's outcome is unknown;
// GET /v1/incidents lists both cards.
func TestAHangingCommandGetsAnIncidentThatDiagnosesAndCloses(t *testing.T) {
	tg := telegramtest.NewTelegram(t, telegramtest.TelegramOptions{})
	model := modeltest.NewOpenAI(t, "test-key")
	model.Push(modeltest.Reply{ToolCalls: []modeltest.ToolCall{{ID: "call_sleep", Name: "shell_exec", Arguments: `{"command":"sleep 45"}`}}},
		modeltest.Reply{Text: "The turn waits for shell_exec, which runs sleep 45 and has not returned."})
	model.SetDefault(modeltest.Reply{Text: "Done."})
	envs := append([]string{"GATEHOUSE_DATA_DIR=" + t.TempDir(), "GATEHOUSE_MODEL=openai:test-model", "OPENAI_API_KEY=test-key",
		"OPENAI_BASE_URL=" + model.BaseURL(), "GATEHOUSE_LEASE_TTL=1s", "GATEHOUSE_MODEL_RETRIES=1",
		"GATEHOUSE_SHELL=host", "GATEHOUSE_SHELL_TIMEOUT=60s", "GATEHOUSE_STUCK_AFTER=3s"}, telegramEnvs(tg)...)
	p := start(t, envs...)
	tg.Say("alice", "alice", "run the long job", false)

	card := func(what, words string) adaptertest.Message {
		t.Helper()
		var c adaptertest.Message
		waitUntil(t, what, func() bool {
			for _, m := range tg.Messages("alice") {
				if len(m.Buttons) >= 2 && strings.Contains(m.Text, words) {
					c = m
					return true
				}
			}
			return false
		})
		return c
	}
	button := func(c adaptertest.Message, label string) string {
		t.Helper()
		for _, b := range c.Buttons {
			if _, choice, ok := chat.ParseButtonData(b); ok && (label == "approve" && choice == chat.ChoiceApprove || strings.HasPrefix(choice, chat.ChoiceOption) && label == choice) {
				return b
			}
		}
		t.Fatalf("no %s button on %q: %q", label, c.Text, c.Buttons)
		return ""
	}
	approval := card("the approval card", "shell_exec")
	if reply, err := tg.Press("alice", approval.ID, button(approval, "approve"), "alice"); err != nil || !strings.Contains(reply, "Approved") {
		t.Fatalf("approve: %q %v", reply, err)
	}

	incident := card("the incident card", "no progress")
	if !strings.Contains(incident.Text, "`shell_exec`") || !strings.Contains(incident.Text, "started") {
		t.Fatalf("the incident card says %q", incident.Text)
	}
	// Options are Close (0) and Diagnose (1).
	if reply, err := tg.Press("alice", incident.ID, button(incident, chat.ChoiceOption+"1"), "alice"); err != nil || !strings.Contains(reply, "diagnose") {
		t.Fatalf("diagnose: %q %v", reply, err)
	}
	waitUntil(t, "the diagnosis in the chat", func() bool {
		return count(chatTexts(tg, "alice"), "Diagnosis of the stuck turn: The turn waits for shell_exec") == 1
	})
	session := sessionOf(t, p.addr)
	if r := latestRun(t, p.addr, session); r.State != gh.RunRunning {
		t.Fatalf("the turn is %s after the diagnosis; it should still be stuck", r.State)
	}
	again := card("the card after the diagnosis", "still stuck")
	if reply, err := tg.Press("alice", again.ID, button(again, chat.ChoiceOption+"0"), "alice"); err != nil || !strings.Contains(reply, "Closing") {
		t.Fatalf("close: %q %v", reply, err)
	}
	waitUntil(t, "the closing notice", func() bool {
		return count(chatTexts(tg, "alice"), "can't tell whether shell_exec ran") == 1
	})
	if r := latestRun(t, p.addr, session); r.State != gh.RunCancelled {
		t.Fatalf("the turn is %s after Close", r.State)
	}
	var result gh.ToolResult
	for _, e := range sessionEvents(t, p.addr, session) {
		if e.Kind == gh.KindToolResult {
			json.Unmarshal(e.Payload, &result)
		}
	}
	if !result.IsError || !strings.Contains(result.Content, "Outcome unknown") {
		t.Fatalf("the command's result: %+v", result)
	}
	waitUntil(t, "both cards edited to their outcome", func() bool {
		edited := 0
		for _, m := range tg.Messages("alice") {
			if (m.ID == incident.ID && strings.Contains(m.Text, "Diagnosis asked for by")) || (m.ID == again.ID && strings.Contains(m.Text, "Closed by")) {
				if len(m.Buttons) == 0 {
					edited++
				}
			}
		}
		return edited == 2
	})
	var listed struct{ Entries []map[string]any }
	json.Unmarshal([]byte(getText(t, "http://"+p.addr+"/v1/incidents")), &listed)
	if len(listed.Entries) != 2 || listed.Entries[0]["state"] != "closed" || listed.Entries[1]["state"] != "diagnosed" {
		t.Fatalf("GET /v1/incidents: %+v", listed.Entries)
	}
	p.stopWith(t, syscall.SIGTERM)
}

func sessionOf(t *testing.T, addr string) string {
	t.Helper()
	var out struct{ Sessions []gh.Session }
	json.Unmarshal([]byte(getText(t, "http://"+addr+"/v1/sessions")), &out)
	if len(out.Sessions) != 1 {
		t.Fatalf("sessions: %+v", out.Sessions)
	}
	return out.Sessions[0].ID
}

func latestRun(t *testing.T, addr, session string) gh.Run {
	t.Helper()
	var out struct {
		Run *gh.Run `json:"run"`
	}
	json.Unmarshal([]byte(getText(t, "http://"+addr+"/v1/sessions/"+session)), &out)
	if out.Run == nil {
		t.Fatalf("no run in GET /v1/sessions/%s", session)
	}
	return *out.Run
}
