package tools

import (
	"context"
	"encoding/json"
)

// VerdictKind is what a commitment check decides about one call.
type VerdictKind string

// Verdicts.
const (
	// Allow lets the call through as the model wrote it.
	Allow VerdictKind = "allow"
	// Rewrite replaces the call's arguments (a name resolved to an
	// address, a relative date to an absolute one, a saved draft's hash
	// bound): the card shows each change, before and after, and the
	// approval is bound to the new arguments.
	Rewrite VerdictKind = "rewrite"
	// Clarify asks the person a question with options before anything
	// else; each option carries the arguments it stands for, and the
	// chosen one resumes the turn as that call.
	Clarify VerdictKind = "clarify"
	// Refuse answers the call with Reason: nobody is asked and nothing
	// runs.
	Refuse VerdictKind = "refuse"
)

// Change is one argument a Rewrite changed, as the card shows it:
// "when: tomorrow 9:00 → Sat 5 Dec 2026 09:00 Europe/Berlin".
type Change struct {
	// Field is the argument's name.
	Field string `json:"field"`
	// Before is what the model wrote; After is what the call will act on,
	// in words (not necessarily the argument's new JSON value).
	Before string `json:"before"`
	After  string `json:"after"`
}

// Option is one answer of a Clarify: the button's label and the whole
// arguments object the call gets when it is chosen.
type Option struct {
	Label     string          `json:"label"`
	Arguments json.RawMessage `json:"arguments"`
}

// Verdict is a commitment check's answer for one call.
type Verdict struct {
	Kind VerdictKind
	// Arguments are the call's new arguments (Rewrite).
	Arguments json.RawMessage
	// Changes say what a Rewrite changed, for the card.
	Changes []Change
	// Question and Options ask the person (Clarify). Labels are distinct.
	Question string
	Options  []Option
	// Reason says why, for every kind: it is logged, and a Refuse answers
	// the call with it (the model reads it).
	Reason string
}

// Committer is implemented by a tool that resolves a call against what
// the agent knows before anyone is asked to approve it: the asker's
// contacts, the asker's time zone, a saved file. The tool worker runs it
// after the registry's checks and before the tier, and again when an
// approved call is about to run: the second run must come to the same
// arguments (call.Now is then the first run's time, so a relative date
// resolves alike), or the call does not run.
//
// An error means the check could not be made (a store it reads is down):
// the call is answered with it and nothing runs.
type Committer interface {
	Commit(ctx context.Context, call Call) (Verdict, error)
}

// CommitFunc is a check as a function, for tools built from functions
// (toolworker.FuncTool).
type CommitFunc func(ctx context.Context, call Call) (Verdict, error)

// CommitmentOf is the commitment check of t: its own when it is a
// [Committer], else the generic date check of its schema ([CheckDates]),
// which lets a call without date arguments through.
func CommitmentOf(t Tool) CommitFunc {
	if c, ok := t.(Committer); ok {
		return c.Commit
	}
	return func(ctx context.Context, call Call) (Verdict, error) {
		return CheckDates(ctx, t.Schema(), call)
	}
}
