package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/gatehouse/gatehouse/tools"
	"github.com/gatehouse/gatehouse/tools/builtin"
)

// stubTool is a tool with a given name, schema and runnability, for the
// registry's own tests (the registry is ours; this is not a network fake).
type stubTool struct {
	name, desc string
	schema     string
	runnable   error
}

func (s stubTool) Name() string            { return s.name }
func (s stubTool) Description() string     { return s.desc }
func (s stubTool) Schema() json.RawMessage { return json.RawMessage(s.schema) }
func (s stubTool) Tier() tools.Tier        { return tools.Safe }
func (s stubTool) Runnable() error         { return s.runnable }
func (s stubTool) Idempotent() bool        { return true }
func (s stubTool) Run(context.Context, tools.Call) (tools.Result, error) {
	return tools.Result{Content: s.name}, nil
}

func checkCode(t *testing.T, err error, code string, mentions ...string) {
	t.Helper()
	var ce *tools.CheckError
	if !errors.As(err, &ce) {
		t.Fatalf("Check: %v, want a *CheckError %s", err, code)
	}
	if ce.Code != code {
		t.Fatalf("Check: code %s (%s), want %s", ce.Code, ce.Message, code)
	}
	for _, m := range mentions {
		if !strings.Contains(ce.Message, m) {
			t.Errorf("message %q does not mention %q", ce.Message, m)
		}
	}
}

func TestRegistryCheck(t *testing.T) {
	r := tools.NewRegistry(builtin.Tools(builtin.Config{})...)
	r.Register(stubTool{name: "nested", schema: `{"type":"object","properties":{"items":{"type":"array","items":{"type":"object","properties":{"n":{"type":"integer","minimum":1}},"required":["n"]}}},"required":["items"]}`})

	checkCode(t, r.Check("launch_rockets", nil), tools.CodeUnknownTool, "launch_rockets", "web_fetch")
	checkCode(t, r.Check("shell_exec", json.RawMessage(`{"command":"ls"}`)), tools.CodeToolUnavailable, "GATEHOUSE_SHELL=on")
	checkCode(t, r.Check("email_send", json.RawMessage(`{"to":"a@example.com","subject":"s","body":"b"}`)), tools.CodeToolUnavailable, "GATEHOUSE_SMTP_URL")

	checkCode(t, r.Check("web_fetch", json.RawMessage(`{}`)), tools.CodeInvalidArguments, `"url"`, "missing")
	checkCode(t, r.Check("web_fetch", nil), tools.CodeInvalidArguments, `"url"`)
	checkCode(t, r.Check("web_fetch", json.RawMessage(`{"url": 42}`)), tools.CodeInvalidArguments, `"url"`, "string", "integer")
	checkCode(t, r.Check("web_fetch", json.RawMessage(`{"url":"https://example.com","depth":2}`)), tools.CodeInvalidArguments, `"depth"`)
	checkCode(t, r.Check("web_fetch", json.RawMessage(`["https://example.com"]`)), tools.CodeInvalidArguments, "JSON object")
	checkCode(t, r.Check("web_fetch", json.RawMessage(`{"url":`)), tools.CodeInvalidArguments, "not valid JSON")
	checkCode(t, r.Check("workspace_write", json.RawMessage(`{"path":"a.txt"}`)), tools.CodeInvalidArguments, `"content"`)
	checkCode(t, r.Check("nested", json.RawMessage(`{"items":[{"n":0}]}`)), tools.CodeInvalidArguments, `items[].n`, "minimum")
	checkCode(t, r.Check("nested", json.RawMessage(`{"items":[{}]}`)), tools.CodeInvalidArguments, `items[]`, `"n"`)

	for name, a := range map[string]string{
		"web_fetch":       `{"url":"https://example.com"}`,
		"workspace_list":  ``,
		"workspace_read":  `{"path":"a.txt"}`,
		"workspace_write": `{"path":"a.txt","content":""}`,
		"nested":          `{"items":[{"n":1}]}`,
	} {
		if err := r.Check(name, json.RawMessage(a)); err != nil {
			t.Errorf("Check(%s, %s): %v", name, a, err)
		}
	}
}

func TestRegistryUncompilableSchemaOnlyNeedsAnObject(t *testing.T) {
	r := tools.NewRegistry(stubTool{name: "odd", schema: `{"$schema":"http://json-schema.org/draft-04/schema#","type":"object","$ref":"https://example.com/remote.json"}`})
	if err := r.Check("odd", json.RawMessage(`{"anything":1}`)); err != nil {
		t.Errorf("Check: %v", err)
	}
	checkCode(t, r.Check("odd", json.RawMessage(`"x"`)), tools.CodeInvalidArguments, "JSON object")
}

func TestRegistryNamesSpecsReplace(t *testing.T) {
	r := tools.NewRegistry(stubTool{name: "b", desc: "first", schema: `{"type":"object"}`}, stubTool{name: "a", schema: `{"type":"object"}`})
	r.Register(stubTool{name: "b", desc: "second", schema: `{"type":"object"}`})
	if got := strings.Join(r.Names(), ","); got != "a,b" {
		t.Fatalf("Names %s", got)
	}
	specs := r.Specs()
	if len(specs) != 2 || specs[0].Name != "a" || specs[1].Description != "second" {
		t.Fatalf("Specs %+v", specs)
	}
	if _, ok := r.Get("c"); ok {
		t.Fatal("Get found a tool never registered")
	}
	if tl, ok := r.Get("b"); !ok || tl.Description() != "second" {
		t.Fatal("a later registration did not replace the earlier")
	}
}

// List says of every tool where it comes from, when it needs a person,
// how it runs and whether it can run now.
func TestRegistryList(t *testing.T) {
	reg := tools.NewRegistry(
		fakeListed{name: "web_fetch", tier: tools.Safe},
		fakeListed{name: "remember", tier: tools.Safe, memory: true},
		fakeListed{name: "email_send", tier: tools.Danger, err: errors.New("no SMTP configured")},
		fakeListed{name: "crm__lookup", tier: tools.Safe, server: "crm", isolation: "remote", avail: errors.New("connection lost: EOF")},
	)
	got := reg.List()
	want := []tools.Listing{
		{Name: "crm__lookup", Server: "crm", Tier: tools.Safe, Approval: tools.ApprovalNever, Isolation: "remote", Error: "connection lost: EOF"},
		{Name: "email_send", Server: "builtin", Tier: tools.Danger, Approval: tools.ApprovalAlways, Isolation: "none", Error: "no SMTP configured"},
		{Name: "remember", Server: "builtin", Tier: tools.Safe, Approval: tools.ApprovalAfterOutsideText, Isolation: "none", Available: true},
		{Name: "web_fetch", Server: "builtin", Tier: tools.Safe, Approval: tools.ApprovalNever, Isolation: "none", Available: true},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("List:\n got %+v\nwant %+v", got, want)
	}
}

type fakeListed struct {
	name              string
	tier              tools.Tier
	memory            bool
	err, avail        error
	server, isolation string
}

func (f fakeListed) Name() string            { return f.name }
func (f fakeListed) Description() string     { return f.name }
func (f fakeListed) Schema() json.RawMessage { return json.RawMessage(`{"type":"object"}`) }
func (f fakeListed) Tier() tools.Tier        { return f.tier }
func (f fakeListed) Runnable() error         { return f.err }
func (f fakeListed) Idempotent() bool        { return false }
func (f fakeListed) WritesMemory() bool      { return f.memory }
func (f fakeListed) Available() error        { return errors.Join(f.err, f.avail) }
func (f fakeListed) Run(context.Context, tools.Call) (tools.Result, error) {
	return tools.Result{}, nil
}

func (f fakeListed) Source() (string, string) {
	if f.server == "" {
		return "builtin", "none"
	}
	return f.server, f.isolation
}
