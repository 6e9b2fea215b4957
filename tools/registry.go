package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"

	gh "github.com/gatehouse/gatehouse"
)

// Check error codes.
const (
	CodeUnknownTool      = "unknown-tool"      // no tool of that name
	CodeToolUnavailable  = "tool-unavailable"  // this install cannot run it (Runnable failed)
	CodeInvalidArguments = "invalid-arguments" // arguments fail the tool's schema
)

// CheckError is why Registry.Check refused a call. Message is written for
// the model: it names the tool, the argument and what is wrong, so the model
// can correct the call.
type CheckError struct {
	Code    string
	Message string
}

func (e *CheckError) Error() string { return e.Code + ": " + e.Message }

// Registry holds the tools of an install by name. It is safe for concurrent use.
type Registry struct {
	mu    sync.RWMutex
	tools map[string]*entry
}

type entry struct {
	tool     Tool
	schema   *jsonschema.Schema   // nil when the schema did not parse
	resolved *jsonschema.Resolved // nil when the schema did not resolve
}

// NewRegistry returns a registry holding tools.
func NewRegistry(tools ...Tool) *Registry {
	r := &Registry{tools: make(map[string]*entry, len(tools))}
	for _, t := range tools {
		r.Register(t)
	}
	return r
}

// Register adds t. A later registration of the same name replaces the earlier.
//
// The tool's schema is compiled here. A schema this package cannot compile
// (a remote MCP server may send one in a draft it does not know) does not
// stop the tool from being registered: Check then only makes sure the
// arguments are a JSON object and leaves the rest to the tool.
func (r *Registry) Register(t Tool) {
	e := &entry{tool: t}
	var s jsonschema.Schema
	if err := json.Unmarshal(t.Schema(), &s); err == nil {
		if rs, err := s.Resolve(nil); err == nil {
			e.schema, e.resolved = &s, rs
		}
	}
	r.mu.Lock()
	r.tools[t.Name()] = e
	r.mu.Unlock()
}

// Get returns the tool called name.
func (r *Registry) Get(name string) (Tool, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	e, ok := r.tools[name]
	if !ok {
		return nil, false
	}
	return e.tool, true
}

// Names returns the names of all tools, sorted.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]string, 0, len(r.tools))
	for n := range r.tools {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// Specs describes every registered tool to a model, sorted by name. Tools
// this install cannot run are included: a call to one is refused by Check
// at once with the reason, which tells the model more than silence would.
func (r *Registry) Specs() []gh.ToolSpec {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]gh.ToolSpec, 0, len(r.tools))
	for _, e := range r.tools {
		out = append(out, gh.ToolSpec{Name: e.tool.Name(), Description: e.tool.Description(), Schema: e.tool.Schema()})
	}
	slices.SortFunc(out, func(a, b gh.ToolSpec) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Check validates a call before anything else happens: unknown tool, not
// runnable on this install, or arguments that fail the tool's schema → a
// *CheckError{Code, Message} (codes "unknown-tool", "tool-unavailable",
// "invalid-arguments") whose message a model can act on (name the field).
// Empty or null arguments count as an empty object.
func (r *Registry) Check(name string, args json.RawMessage) error {
	return r.CheckCall(gh.ToolCall{Name: name, Arguments: args})
}

// CallChecker is implemented by a tool whose runnability depends on the
// call, not only on the install: email_send runs the tour's calls without
// SMTP (TourMail). CheckCall asks it instead of Runnable.
type CallChecker interface {
	RunnableFor(c gh.ToolCall) error
}

// CheckCall is Check for one call: as Check, except that a CallChecker
// tool decides whether this call can run.
func (r *Registry) CheckCall(c gh.ToolCall) error {
	name, args := c.Name, c.Arguments
	r.mu.RLock()
	e, ok := r.tools[name]
	r.mu.RUnlock()
	if !ok {
		return &CheckError{Code: CodeUnknownTool, Message: fmt.Sprintf("there is no tool called %q; the tools are: %s", name, strings.Join(r.Names(), ", "))}
	}
	runnable := e.tool.Runnable
	if cc, ok := e.tool.(CallChecker); ok {
		runnable = func() error { return cc.RunnableFor(c) }
	}
	if err := runnable(); err != nil {
		return &CheckError{Code: CodeToolUnavailable, Message: fmt.Sprintf("%s cannot run on this install: %v", name, err)}
	}
	invalid := func(format string, a ...any) error {
		return &CheckError{Code: CodeInvalidArguments, Message: name + ": " + fmt.Sprintf(format, a...)}
	}
	args = bytes.TrimSpace(args)
	if len(args) == 0 || bytes.Equal(args, []byte("null")) {
		args = []byte("{}")
	}
	var v any
	if err := json.Unmarshal(args, &v); err != nil {
		return invalid("the arguments are not valid JSON: %v", err)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return invalid("the arguments must be a JSON object, not %s", jsonTypeOf(v))
	}
	if e.resolved == nil {
		return nil
	}
	if msg := checkTopLevel(e.schema, obj); msg != "" {
		return invalid("%s", msg)
	}
	if err := e.resolved.Validate(obj); err != nil {
		return invalid("%s", humanizeSchemaError(err))
	}
	return nil
}

// checkTopLevel checks required arguments, known names and top-level types
// itself, so the most common mistakes get a plain message naming the
// argument. Deeper mistakes are left to the schema validator.
func checkTopLevel(s *jsonschema.Schema, obj map[string]any) string {
	var missing []string
	for _, req := range s.Required {
		if _, ok := obj[req]; !ok {
			missing = append(missing, req)
		}
	}
	if len(missing) > 0 {
		parts := make([]string, len(missing))
		for i, m := range missing {
			parts[i] = fmt.Sprintf("%q", m)
			if p := s.Properties[m]; p != nil && p.Type != "" {
				parts[i] += " (" + p.Type + ")"
			}
		}
		word := "argument"
		if len(missing) > 1 {
			word = "arguments"
		}
		return fmt.Sprintf("missing required %s %s", word, strings.Join(parts, ", "))
	}
	if ap := s.AdditionalProperties; ap != nil && ap.Not != nil && reflect.ValueOf(*ap.Not).IsZero() && len(s.PatternProperties) == 0 {
		known := make([]string, 0, len(s.Properties))
		for k := range s.Properties {
			known = append(known, k)
		}
		slices.Sort(known)
		var extra []string
		for k := range obj {
			if _, ok := s.Properties[k]; !ok {
				extra = append(extra, k)
			}
		}
		if len(extra) > 0 {
			slices.Sort(extra)
			return fmt.Sprintf("unknown argument %q; the arguments are: %s", extra[0], strings.Join(known, ", "))
		}
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		p := s.Properties[k]
		if p == nil {
			continue
		}
		want := p.Types
		if p.Type != "" {
			want = []string{p.Type}
		}
		if len(want) == 0 {
			continue
		}
		got := jsonTypeOf(obj[k])
		if slices.Contains(want, got) || (got == "integer" && slices.Contains(want, "number")) {
			continue
		}
		return fmt.Sprintf("argument %q must be %s, not %s", k, article(strings.Join(want, " or ")), got)
	}
	return ""
}

// humanizeSchemaError turns "validating root: validating /properties/a/items:
// type: …" into `argument "a[]": type: …`.
func humanizeSchemaError(err error) string {
	msg := err.Error()
	path := ""
	for strings.HasPrefix(msg, "validating ") {
		head, rest, ok := strings.Cut(msg, ": ")
		if !ok {
			break
		}
		if p := strings.TrimPrefix(head, "validating "); strings.HasPrefix(p, "/") {
			path = p
		}
		msg = rest
	}
	field := pointerToField(path)
	if field == "" {
		return msg
	}
	return fmt.Sprintf("argument %q: %s", field, msg)
}

// pointerToField turns a schema path such as /properties/a/items/properties/b
// into the argument's name as a person would write it: "a[].b".
func pointerToField(ptr string) string {
	segs := strings.Split(strings.TrimPrefix(ptr, "/"), "/")
	var b strings.Builder
	for i := 0; i < len(segs); i++ {
		switch segs[i] {
		case "properties":
			if i+1 < len(segs) {
				if b.Len() > 0 {
					b.WriteByte('.')
				}
				name := strings.ReplaceAll(strings.ReplaceAll(segs[i+1], "~1", "/"), "~0", "~")
				b.WriteString(name)
				i++
			}
		case "items", "prefixItems", "additionalItems":
			b.WriteString("[]")
		}
	}
	return b.String()
}

func jsonTypeOf(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case float64:
		if _, f := math.Modf(x); f == 0 {
			return "integer"
		}
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

func article(typ string) string {
	switch typ {
	case "array", "integer", "object":
		return "an " + typ
	}
	return "a " + typ
}

// Sourced is implemented by a tool that is not an in-process built-in, or
// runs a program: Source names where it comes from and how it runs, for
// the tool list an operator reads (GET /v1/tools).
type Sourced interface {
	// Source is the tool's server ("builtin", or the MCP server's name)
	// and its isolation: sandbox (bubblewrap), host (unisolated, as the
	// gateway's user), remote (an MCP server reached by URL), off or
	// unavailable.
	Source() (server, isolation string)
}

// Availability is implemented by a tool whose availability changes while
// the gateway runs (an MCP server's tool, whose connection may be lost and
// come back). Available says whether it can run right now; Runnable may
// still let a call through that will wait for a reconnect.
type Availability interface {
	Available() error
}

// Approval says when a call of a tool waits for a person.
const (
	ApprovalNever = "never" // a safe tool: it runs at once
	// ApprovalAfterOutsideText: a safe tool that writes memory, held for
	// approval in a turn that has read outside text.
	ApprovalAfterOutsideText = "after outside text"
	ApprovalAlways           = "always" // a danger tool
)

// Listing is one tool as an operator sees it in the tool list.
type Listing struct {
	Name string `json:"name"`
	// Server is "builtin" or the MCP server's name.
	Server string `json:"server"`
	// Tier is safe or danger.
	Tier Tier `json:"tier"`
	// Approval is never, always or "after outside text".
	Approval string `json:"approval"`
	// Isolation is none (in the gateway's process), sandbox, host,
	// remote, off or unavailable.
	Isolation string `json:"isolation"`
	// Available says whether it can run now; Error says why not.
	Available bool   `json:"available"`
	Error     string `json:"error,omitempty"`
}

// List lists every tool, sorted by name: every tool the agent is offered.
func (r *Registry) List() []Listing {
	r.mu.RLock()
	ts := make([]Tool, 0, len(r.tools))
	for _, e := range r.tools {
		ts = append(ts, e.tool)
	}
	r.mu.RUnlock()
	out := make([]Listing, 0, len(ts))
	for _, t := range ts {
		l := Listing{Name: t.Name(), Server: "builtin", Tier: t.Tier(), Isolation: "none", Approval: ApprovalNever}
		if s, ok := t.(Sourced); ok {
			l.Server, l.Isolation = s.Source()
		}
		switch {
		case t.Tier() != Safe:
			l.Approval = ApprovalAlways
		case func() bool { mw, ok := t.(MemoryWriter); return ok && mw.WritesMemory() }():
			l.Approval = ApprovalAfterOutsideText
		}
		err := t.Runnable()
		if a, ok := t.(Availability); ok {
			err = a.Available()
		}
		if err != nil {
			l.Error = err.Error()
		} else {
			l.Available = true
		}
		out = append(out, l)
	}
	slices.SortFunc(out, func(a, b Listing) int { return strings.Compare(a.Name, b.Name) })
	return out
}
