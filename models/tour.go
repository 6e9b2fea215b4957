package models

import (
	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/models/internal/tourscript"
)

// TourModel is the scripted provider's built-in model: the guided tour,
// selected as TourSelection. It needs no script file and no key.
const TourModel = "tour"

// TourSelection is the selection that runs the tour ("scripted:tour").
const TourSelection = providerScripted + ":" + TourModel

// tour is the built-in tour (its script: models/internal/tourscript). It
// keeps no position: each answer is decided by the request's messages
// alone (the newest user message and the tool result after it), so any
// number of chats take it at once and a turn resumed after an approval,
// on any replica, picks up where it stood.
type tour struct {
	script tourscript.Script
	signer tourscript.Signer
}

func newTour() (*tour, error) {
	s, err := tourscript.Load()
	if err != nil {
		return nil, err
	}
	signer, err := tourscript.NewSigner()
	if err != nil {
		return nil, err
	}
	return &tour{script: s, signer: signer}, nil
}

// verify reports whether id claims to be a tour call and whether this
// tour made it, for this tool.
func (t *tour) verify(id, tool string) (claims, genuine bool) { return t.signer.Verify(id, tool) }

// answer is the tour's response to req.
func (t *tour) answer(req Request) Response {
	user, after := lastUser(req.Messages)
	sc, rest := t.script.Pick(user)
	resp := Response{StopReason: StopEndTurn, Applied: Applied{Thinking: req.Thinking, MaxTokens: req.MaxTokens}}
	result, answered := lastToolResult(after)
	switch {
	case sc.Call == nil || !answered:
		resp.Text = tourscript.Fill(sc.Say, rest, "")
		if sc.Call != nil {
			resp.ToolCalls = []gh.ToolCall{{ID: t.signer.CallID(sc.Call.Name), Name: sc.Call.Name, Arguments: sc.Arguments(rest)}}
			resp.StopReason = StopToolUse
		}
	default:
		resp.Text = sc.Closing(result.Text, result.IsError, rest)
	}
	return resp
}

// lastUser returns the newest user message's text and the messages after it.
func lastUser(msgs []Message) (string, []Message) {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == RoleUser {
			return msgs[i].Text, msgs[i+1:]
		}
	}
	return "", msgs
}

// lastToolResult is the newest tool message among msgs.
func lastToolResult(msgs []Message) (Message, bool) {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == RoleTool {
			return msgs[i], true
		}
	}
	return Message{}, false
}
