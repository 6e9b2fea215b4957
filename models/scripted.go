package models

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"

	gh "github.com/gatehouse/gatehouse"
)

const providerScripted = "scripted"

// ScriptStep is one canned response of a script file.
type ScriptStep struct {
	// Match, if set, selects this step when the request's last message is a
	// user message containing it (case-insensitive).
	Match string `json:"match,omitempty"`
	// Text is the answer, streamed in a few chunks.
	Text string `json:"text,omitempty"`
	// ToolCalls are the calls to ask for; an empty id gets "call_<step>_<n>".
	ToolCalls []ScriptToolCall `json:"toolCalls,omitempty"`
	// Error, if set, makes this step fail with that code (e.g.
	// "model-rate-limited"); codes that are retried over HTTP are retried.
	Error string `json:"error,omitempty"`
}

// ScriptToolCall is a tool call of a ScriptStep.
type ScriptToolCall struct {
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// ParseScript decodes and checks a script file's content.
func ParseScript(data []byte) ([]ScriptStep, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var steps []ScriptStep
	if err := dec.Decode(&steps); err != nil {
		return nil, fmt.Errorf("script: want a JSON list of steps: %w", err)
	}
	if len(steps) == 0 {
		return nil, fmt.Errorf("script: no steps")
	}
	for i, s := range steps {
		if s.Text == "" && len(s.ToolCalls) == 0 && s.Error == "" {
			return nil, fmt.Errorf("script: step %d has none of text, toolCalls, error", i+1)
		}
		for j, tc := range s.ToolCalls {
			if tc.Name == "" {
				return nil, fmt.Errorf("script: step %d tool call %d has no name", i+1, j+1)
			}
			if len(tc.Arguments) > 0 && !json.Valid(tc.Arguments) {
				return nil, fmt.Errorf("script: step %d tool call %d: arguments are not JSON", i+1, j+1)
			}
		}
	}
	return steps, nil
}

// scriptedProvider replays canned responses. It is used only when a
// selection names it.
type scriptedProvider struct {
	file  string
	steps []ScriptStep
	tour  *tour // the built-in model TourModel, which needs no file

	mu   sync.Mutex
	next int // index of the step after the one last chosen
}

func newScripted(file string) (*scriptedProvider, error) {
	t, err := newTour()
	if err != nil {
		return nil, newError(CodeNotConfigured, false, err, "the built-in tour does not load")
	}
	p := &scriptedProvider{file: file, tour: t}
	if file == "" {
		return p, nil
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, newError(CodeNotConfigured, false, err, "cannot read the script file")
	}
	steps, err := ParseScript(data)
	if err != nil {
		return nil, newError(CodeNotConfigured, false, err, "bad script file %s", file)
	}
	p.steps = steps
	return p, nil
}

func (p *scriptedProvider) Name() string { return providerScripted }

func (p *scriptedProvider) Stream(ctx context.Context, req Request, onDelta func(string)) (Response, error) {
	if req.Model == TourModel {
		if err := ctx.Err(); err != nil {
			return Response{}, err
		}
		resp := p.tour.answer(req)
		for _, c := range chunks(resp.Text, 3) {
			if onDelta != nil {
				onDelta(c)
			}
		}
		return resp, nil
	}
	if p.steps == nil {
		return Response{}, newError(CodeNotConfigured, false, nil, "scripted needs a script file (GATEHOUSE_SCRIPT_FILE)")
	}
	if err := ctx.Err(); err != nil {
		return Response{}, err
	}
	idx, err := p.choose(req.Messages)
	if err != nil {
		return Response{}, err
	}
	step := p.steps[idx]
	if step.Error != "" {
		return Response{}, &Error{Code: step.Error, Message: fmt.Sprintf("scripted failure (step %d)", idx+1), Retryable: retryableCode(step.Error)}
	}
	for _, c := range chunks(step.Text, 3) {
		if onDelta != nil {
			onDelta(c)
		}
	}
	// Every level is taken and reported back, so a test or a demo sees the
	// level its turn asked for in the run's execution.
	resp := Response{Text: step.Text, StopReason: StopEndTurn, Applied: Applied{Thinking: req.Thinking, MaxTokens: req.MaxTokens}}
	for j, tc := range step.ToolCalls {
		id := tc.ID
		if id == "" {
			id = fmt.Sprintf("call_%d_%d", idx+1, j+1)
		}
		args := tc.Arguments
		if len(args) == 0 {
			args = json.RawMessage("{}")
		}
		resp.ToolCalls = append(resp.ToolCalls, gh.ToolCall{ID: id, Name: tc.Name, Arguments: args})
	}
	if len(resp.ToolCalls) > 0 {
		resp.StopReason = StopToolUse
	}
	return resp, nil
}

// choose picks a step: a matching step if the last message is from the user,
// else the step after the previous one.
func (p *scriptedProvider) choose(msgs []Message) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := len(msgs); n > 0 && msgs[n-1].Role == RoleUser {
		text := strings.ToLower(msgs[n-1].Text)
		for i, s := range p.steps {
			if s.Match != "" && s.Match != "*" && strings.Contains(text, strings.ToLower(s.Match)) {
				p.next = i + 1
				return i, nil
			}
		}
		// "*" answers any user message no other step matched.
		for i, s := range p.steps {
			if s.Match == "*" {
				p.next = i + 1
				return i, nil
			}
		}
	}
	if p.next >= len(p.steps) {
		return 0, newError(CodeBadResponse, false, nil, "script %s exhausted after %d steps", p.file, len(p.steps))
	}
	p.next++
	return p.next - 1, nil
}

// chunks splits s into at most n pieces at spaces (whole if short).
func chunks(s string, n int) []string {
	if s == "" {
		return nil
	}
	words := strings.SplitAfter(s, " ")
	if len(words) < n {
		return []string{s}
	}
	per := (len(words) + n - 1) / n
	var out []string
	for i := 0; i < len(words); i += per {
		out = append(out, strings.Join(words[i:min(i+per, len(words))], ""))
	}
	return out
}
