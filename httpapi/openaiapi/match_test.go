package openaiapi

import (
	"encoding/json"
	"testing"

	gh "github.com/gatehouse/gatehouse"
)

// logOf builds a conversation from events: "u:<text>" a user message,
// "a:<text>" an answer to the latest one, "t:<text>" an answer that asks
// for a tool, "f:<text>" a failed answer, "g:<id>" a gate opened, "d:<id>"
// its decision.
func logOf(t *testing.T, entries ...string) *conversation {
	t.Helper()
	c := newConversation()
	var evs []gh.Event
	last := int64(0)
	for i, e := range entries {
		seq := int64(i + 1)
		kind, text := e[:1], e[2:]
		var ev gh.Event
		mk := func(k gh.Kind, v any) gh.Event {
			b, _ := json.Marshal(v)
			return gh.Event{Seq: seq, Kind: k, Payload: b}
		}
		switch kind {
		case "u":
			ev, last = mk(gh.KindUserMessage, gh.UserMessage{Text: text}), seq
		case "a":
			ev = mk(gh.KindAssistantMessage, gh.AssistantMessage{Text: text, InputSeqs: []int64{last}, StopReason: gh.StopEndTurn})
		case "t":
			ev = mk(gh.KindAssistantMessage, gh.AssistantMessage{Text: text, InputSeqs: []int64{last}, StopReason: gh.StopToolUse,
				ToolCalls: []gh.ToolCall{{ID: "c", Name: "post_note"}}})
		case "f":
			ev = mk(gh.KindAssistantMessage, gh.AssistantMessage{Text: text, InputSeqs: []int64{last}, StopReason: gh.StopError})
		case "g":
			ev = mk(gh.KindGateOpened, gh.GateOpened{GateID: text, Tool: "post_note"})
		case "d":
			ev = mk(gh.KindGateDecided, gh.GateDecided{GateID: text, Decision: gh.GateApproved})
		}
		evs = append(evs, ev)
	}
	c.add(evs)
	return c
}

func msgs(texts ...string) []message {
	var out []message
	for i, s := range texts {
		role := roleUser
		if i%2 == 1 {
			role = roleAssistant
		}
		out = append(out, message{role: role, text: s})
	}
	return out
}

func TestMatch(t *testing.T) {
	approval := approvalText([]gh.GateOpened{{GateID: "g1", Tool: "post_note"}}, "https://gate.example")
	for _, c := range []struct {
		name    string
		log     []string
		history []string
		last    string
		want    position
		fail    bool
	}{
		{name: "first message", last: "hi", want: position{turn: -1, place: 1}},
		{name: "next message", log: []string{"u:hi", "a:hello"}, history: []string{"hi", "hello"}, last: "bye", want: position{turn: -1, place: 2, owedFrom: 1}},
		{name: "the same again", log: []string{"u:hi", "a:hello"}, last: "hi", want: position{turn: 0}},
		{name: "white space aside", log: []string{"u:hi", "a:hello"}, history: []string{" hi\r\n", "hello\n"}, last: "bye", want: position{turn: -1, place: 2, owedFrom: 1}},
		{name: "another answer", log: []string{"u:hi", "a:hello"}, history: []string{"hi", "howdy"}, last: "bye", fail: true},
		{name: "another question", log: []string{"u:hi", "a:hello"}, history: []string{"hey", "hello"}, last: "bye", fail: true},
		{name: "an edited last message", log: []string{"u:hi", "a:hello"}, last: "hey", fail: true},
		{name: "behind the log", log: []string{"u:hi", "a:hello", "u:bye", "a:ciao"}, last: "hi", fail: true},
		{name: "ahead of the log", log: []string{"u:hi", "a:hello"}, history: []string{"hi", "hello", "more", "sure"}, last: "bye", fail: true},
		{
			name: "an approval status owes the answer", log: []string{"u:post it", "t:Posting.", "g:g1", "d:g1", "a:Posted."},
			history: []string{"post it", "Posting.\n\n" + approval}, last: "continue", want: position{turn: -1, place: 2, owedFrom: 0},
		},
		{
			name: "the owed answer held in full", log: []string{"u:post it", "t:Posting.", "g:g1", "d:g1", "a:Posted.", "u:continue", "a:Done."},
			history: []string{"post it", approval, "continue", "Posting.\n\nPosted.\n\nDone."}, last: "thanks", want: position{turn: -1, place: 3, owedFrom: 2},
		},
		{name: "a failure held", log: []string{"u:hi", "f:⚠️ failed", "a:hello"}, history: []string{"hi", "⚠️ failed"}, last: "bye", want: position{turn: -1, place: 2}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := logOf(t, c.log...).match(msgs(c.history...), c.last)
			if c.fail {
				if err == nil {
					t.Fatalf("matched %+v, want a mismatch", got)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("match %+v %v, want %+v", got, err, c.want)
			}
		})
	}
	// A frontend's greeting before the first user message is ignored.
	greeting := []message{{role: roleAssistant, text: "How can I help?"}, {role: roleUser, text: "hi"}, {role: roleAssistant, text: "hello"}}
	if got, err := logOf(t, "u:hi", "a:hello").match(greeting, "bye"); err != nil || got.place != 2 {
		t.Fatalf("with a greeting: %+v %v", got, err)
	}
}

func TestConversationStates(t *testing.T) {
	c := logOf(t, "u:post it", "t:Posting.", "g:g1")
	if c.turns[0].state != turnWorking || len(c.pendingGates(0)) != 1 {
		t.Fatalf("waiting for a decision: %+v %v", c.turns[0], c.pendingGates(0))
	}
	c = logOf(t, "u:post it", "t:Posting.", "g:g1", "d:g1", "a:Posted.")
	if c.turns[0].state != turnAnswered || len(c.pendingGates(0)) != 0 || c.text(0, 0) != "Posting.\n\nPosted." {
		t.Fatalf("answered: %+v %v %q", c.turns[0], c.pendingGates(0), c.text(0, 0))
	}
	c = logOf(t, "u:hi", "f:⚠️ failed")
	if c.turns[0].state != turnFailed || c.turns[0].failure != "⚠️ failed" || c.text(0, 0) != "" {
		t.Fatalf("failed: %+v", c.turns[0])
	}
}
