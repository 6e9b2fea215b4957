package memory_test

import (
	"context"
	"encoding/json"
	"path/filepath"
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
	reg := tools.NewRegistry(m.Tools(func() string { return "local" })...)
	run := func(name, fact string) tools.Result {
		tool, _ := reg.Get(name)
		args, _ := json.Marshal(map[string]string{"fact": fact})
		if err := reg.Check(name, args); err != nil {
			t.Fatal(err)
		}
		res, err := tool.Run(ctx, tools.Call{ToolCall: gh.ToolCall{ID: "c", Arguments: args}})
		if err != nil || res.IsError {
			t.Fatalf("%s: %+v %v", name, res, err)
		}
		return res
	}
	run("remember", "Tom's email is tom@example.com")
	run("remember", "the office wifi is called Basement")
	if got := m.Contacts(ctx, "local"); got["Tom"] != "tom@example.com" {
		t.Fatalf("contacts %v", got)
	}
	facts, _ := m.List(ctx, "local")
	if len(facts) != 2 {
		t.Fatalf("facts %+v", facts)
	}
	run("forget", "office wifi")
	facts, _ = m.List(ctx, "local")
	if len(facts) != 1 || facts[0].Kind != memory.KindContact {
		t.Fatalf("after forget: %+v", facts)
	}
	if tool, _ := reg.Get("remember"); tool.Tier() != tools.Safe {
		t.Fatal("remember must not need approval")
	}
}
