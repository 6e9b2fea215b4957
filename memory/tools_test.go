package memory_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/memory"
	"github.com/gatehouse/gatehouse/store/sqlite"
	"github.com/gatehouse/gatehouse/tools"
)

func TestRememberAndForgetTools(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(t.TempDir(), "m.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	m := memory.New(st, memory.Config{NoModelPass: true})
	reg := tools.NewRegistry(m.Tools()...)
	call := func(user, name, fact string) tools.Result {
		t.Helper()
		tool, _ := reg.Get(name)
		args, _ := json.Marshal(map[string]string{"fact": fact})
		if err := reg.Check(name, args); err != nil {
			t.Fatal(err)
		}
		res, err := tool.Run(ctx, tools.Call{ToolCall: gh.ToolCall{ID: "c", Arguments: args}, User: user})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return res
	}
	run := func(user, name, fact string) tools.Result {
		t.Helper()
		res := call(user, name, fact)
		if res.IsError {
			t.Fatalf("%s for %s: %+v", name, user, res)
		}
		return res
	}
	run(gh.LocalUser, "remember", "Tom's email is tom@example.com")
	run(gh.LocalUser, "remember", "the office wifi is called Basement")
	if got := m.Contacts(ctx, gh.LocalUser); got["Tom"] != "tom@example.com" {
		t.Fatalf("contacts %v", got)
	}
	facts, _ := m.List(ctx, gh.LocalUser)
	if len(facts) != 2 {
		t.Fatalf("facts %+v", facts)
	}
	run(gh.LocalUser, "forget", "office wifi")
	facts, _ = m.List(ctx, gh.LocalUser)
	if len(facts) != 1 || facts[0].Kind != memory.KindContact {
		t.Fatalf("after forget: %+v", facts)
	}
	if tool, _ := reg.Get("remember"); tool.Tier() != tools.Safe {
		t.Fatal("remember must not need approval")
	}
	for _, name := range []string{"remember", "forget"} {
		tool, _ := reg.Get(name)
		if mw, ok := tool.(tools.MemoryWriter); !ok || !mw.WritesMemory() {
			t.Fatalf("%s must say it writes memory", name)
		}
	}
}

// Each call reads and writes the memory of the person asking: two people
// and the operator each keep their own Sara, and one's forget leaves the
// others' alone.
func TestMemoryToolsAreThePersonsOwn(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(t.TempDir(), "m.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	m := memory.New(st, memory.Config{NoModelPass: true})
	reg := tools.NewRegistry(m.Tools()...)
	call := func(user, name, fact string) tools.Result {
		t.Helper()
		tool, _ := reg.Get(name)
		args, _ := json.Marshal(map[string]string{"fact": fact})
		res, err := tool.Run(ctx, tools.Call{ToolCall: gh.ToolCall{ID: "c", Arguments: args}, SessionID: "s", User: user})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	people := map[string]string{"telegram:u_a": "sara-a@example.com", "telegram:u_b": "sara-b@example.com", gh.LocalUser: "sara-web@example.com"}
	for user, addr := range people {
		if res := call(user, "remember", "Sara is "+addr); res.IsError {
			t.Fatalf("remember for %s: %+v", user, res)
		}
	}
	for user, addr := range people {
		if got := m.Contacts(ctx, user); len(got) != 1 || got["Sara"] != addr {
			t.Fatalf("%s's contacts %v, want only Sara <%s>", user, got, addr)
		}
	}
	if res := call("telegram:u_b", "forget", "Sara"); res.IsError || !strings.Contains(res.Content, "1") {
		t.Fatalf("forget: %+v", res)
	}
	if got := m.Contacts(ctx, "telegram:u_b"); len(got) != 0 {
		t.Fatalf("after b's forget, b still has %v", got)
	}
	for _, user := range []string{"telegram:u_a", gh.LocalUser} {
		if got := m.Contacts(ctx, user); got["Sara"] != people[user] {
			t.Fatalf("b's forget took %s's Sara: %v", user, got)
		}
	}
	// A call that names nobody writes nobody's memory.
	if res := call("", "remember", "Sara is sara-x@example.com"); !res.IsError {
		t.Fatalf("a call without a person was served: %+v", res)
	}
	if got := m.Contacts(ctx, gh.LocalUser); got["Sara"] != people[gh.LocalUser] {
		t.Fatalf("the operator's Sara changed: %v", got)
	}
}
