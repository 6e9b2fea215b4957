// Package knowledgetool is the search_library tool: the model searches the
// knowledge library itself mid-turn, in the asking chat's and person's
// scope (the shared collection, the chat's, the person's; never another
// chat's), and reads the passages that clear the library's evidence
// floors, each with its document, heading path, collection and evidence.
//
// It is Safe: it reads, and reads only what the turn's own recall may. A
// result holding a passage that is not from the shared collection is
// marked External: the tool worker fences it as data and the turn counts
// as having read outside text, so memory writes after it wait for a
// person, as after a fetched page. The operator's shared collection is
// trusted and comes back unfenced.
package knowledgetool

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/knowledge"
	"github.com/gatehouse/gatehouse/tools"
)

// Name is the tool's name as the model calls it.
const Name = "search_library"

// Recaller is what the tool asks of the library (*knowledge.Library is one).
type Recaller interface {
	Recall(ctx context.Context, q knowledge.Query) (knowledge.Found, error)
}

// New returns search_library over the library.
func New(lib Recaller) tools.Tool { return tool{lib: lib} }

type tool struct{ lib Recaller }

func (tool) Name() string { return Name }

func (tool) Description() string {
	return "Search the knowledge library (the operator's documents, and files added to this chat) for passages that answer a question. " +
		"Returns each passage with its document name, heading path and evidence; cite the document names you use."
}

func (tool) Schema() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","description":"what to look for, in words the documents would use"}},"required":["query"],"additionalProperties":false}`)
}

func (tool) Tier() tools.Tier { return tools.Safe }
func (tool) Idempotent() bool { return true }

func (t tool) Runnable() error {
	if t.lib == nil {
		return gh.Errorf(gh.CodeUnavailable, "search_library: no knowledge library is configured")
	}
	return nil
}

func (t tool) Run(ctx context.Context, call tools.Call) (tools.Result, error) {
	var a struct {
		Query string `json:"query"`
	}
	if err := json.Unmarshal(call.Arguments, &a); err != nil || strings.TrimSpace(a.Query) == "" {
		return tools.ErrorResult("query must be a non-empty string"), nil
	}
	found, err := t.lib.Recall(ctx, knowledge.Query{Text: a.Query, Scope: knowledge.Scope{SessionID: call.SessionID, UserKey: call.User}})
	if err != nil {
		if ctx.Err() != nil {
			// The turn is stopping: say nothing happened rather than
			// blame the library (a safe read has no outcome to lose).
			return tools.Result{}, context.Cause(ctx)
		}
		return tools.ErrorResult("the library could not be searched: %v", err), nil
	}
	return Format(found.Passages), nil
}

// Format is the tool's answer for the recalled passages: numbered, each
// with its document, heading path, collection and evidence, then its
// text. External when any passage is not the operator's.
func Format(ps []knowledge.Recalled) tools.Result {
	if len(ps) == 0 {
		return tools.Result{Content: "No passage in the library bears on that (none cleared the evidence floor)."}
	}
	var b strings.Builder
	external := false
	for i, r := range ps {
		if i > 0 {
			b.WriteString("\n\n")
		}
		if !knowledge.Trusted(r.Passage.Collection) {
			external = true
		}
		doc := r.Document.Name
		if r.Document.Title != "" && r.Document.Title != doc {
			doc += " (" + r.Document.Title + ")"
		}
		fmt.Fprintf(&b, "[%d] document: %s\nheading: %s\ncollection: %s\nevidence: %s\n%s",
			i+1, doc, strings.Join(r.Passage.Heading, " > "), r.Passage.Collection, evidence(r.Evidence), r.Passage.Text)
	}
	return tools.Result{Content: b.String(), External: external}
}

// evidence says in one line why a passage was given: each retriever's
// evidence that cleared its floor, and the fused score.
func evidence(e knowledge.Evidence) string {
	var parts []string
	if l := e.Lexical; l != nil {
		parts = append(parts, fmt.Sprintf("lexical %.2f (closeness %.2f + coverage %.2f)", l.Evidence, l.Closeness, l.Coverage))
	}
	if m := e.Embeddings; m != nil {
		parts = append(parts, fmt.Sprintf("embeddings closeness %.2f (similarity %.2f, background %.2f)", m.Closeness, m.Similarity, m.Background))
	}
	parts = append(parts, fmt.Sprintf("fused %.4f", e.Fused))
	return strings.Join(parts, "; ")
}
