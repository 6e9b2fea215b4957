package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/gatehouse/gatehouse/tools"
)

// Tools returns the remember and forget tools, and memory_list (listtool.go). Each call reads and writes
// the memory of the person asking (tools.Call.User) and no one else's; a
// call that names no person is refused. They are safe (they touch only
// what is kept about the person talking) and memory writers: in a turn
// that has read outside text the tool worker asks a person first.
func (m *Memory) Tools() []tools.Tool {
	return []tools.Tool{memTool{m: m, forget: false}, memTool{m: m, forget: true}, listTool{m: m}}
}

type memTool struct {
	m      *Memory
	forget bool
}

func (t memTool) Name() string {
	if t.forget {
		return "forget"
	}
	return "remember"
}

func (t memTool) Description() string {
	if t.forget {
		return "Forget what is kept about the user that matches the given text (every fact holding all its words)."
	}
	return "Remember a fact the user told you, for later conversations (e.g. \"Sara's email is sara@example.com\", \"prefers short answers\")."
}

func (t memTool) Schema() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"fact":{"type":"string","description":"the fact, in a short sentence"}},"required":["fact"],"additionalProperties":false}`)
}

func (t memTool) Tier() tools.Tier { return tools.Safe }
func (t memTool) Runnable() error  { return nil }
func (t memTool) Idempotent() bool { return true }

// WritesMemory implements tools.MemoryWriter.
func (t memTool) WritesMemory() bool { return true }

func (t memTool) Run(ctx context.Context, call tools.Call) (tools.Result, error) {
	var a struct{ Fact string }
	if err := json.Unmarshal(call.Arguments, &a); err != nil || strings.TrimSpace(a.Fact) == "" {
		return tools.Result{Content: "fact must be a non-empty string", IsError: true}, nil
	}
	user := call.User
	if checkUser(user) != nil {
		return tools.Result{Content: "this call names no person whose memory it could use", IsError: true}, nil
	}
	if t.forget {
		gone, err := t.m.ForgetMatching(ctx, user, a.Fact)
		if err != nil {
			return tools.Result{Content: err.Error(), IsError: true}, nil
		}
		if len(gone) == 0 {
			return tools.Result{Content: "Nothing kept matched that."}, nil
		}
		return tools.Result{Content: fmt.Sprintf("Forgot %d fact(s).", len(gone))}, nil
	}
	// What the rules recognise (a contact, a name, a preference) keeps its
	// kind; anything else is a note.
	facts := Rules(Turn{UserText: "remember that " + a.Fact})
	if len(facts) == 0 {
		facts = []Fact{{Kind: KindNote, Text: a.Fact}}
	}
	for _, f := range facts {
		if _, _, err := t.m.Add(ctx, user, f); err != nil {
			return tools.Result{Content: err.Error(), IsError: true}, nil
		}
	}
	return tools.Result{Content: "Remembered."}, nil
}
