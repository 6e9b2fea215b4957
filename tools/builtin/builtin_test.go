package builtin_test

import (
	"encoding/json"
	"testing"

	"github.com/gatehouse/gatehouse/tools"
	"github.com/gatehouse/gatehouse/tools/builtin"
	"github.com/gatehouse/gatehouse/tools/shell"
	"github.com/gatehouse/gatehouse/tools/webfetch"
)

func TestBuiltinToolsHaveValidSchemasAndTiers(t *testing.T) {
	want := map[string]tools.Tier{
		tools.NameEmailSend: tools.Danger, webfetch.ToolName: tools.Safe,
		tools.NameWorkspaceList: tools.Safe, tools.NameWorkspaceRead: tools.Safe,
		tools.NameWorkspaceWrite: tools.Danger, shell.ToolName: tools.Danger,
	}
	got := builtin.Tools(builtin.Config{})
	if len(got) != len(want) {
		t.Fatalf("%d built-in tools, want %d", len(got), len(want))
	}
	for _, tl := range got {
		if want[tl.Name()] != tl.Tier() {
			t.Errorf("%s: tier %s, want %s", tl.Name(), tl.Tier(), want[tl.Name()])
		}
		var s map[string]any
		if err := json.Unmarshal(tl.Schema(), &s); err != nil || s["type"] != "object" {
			t.Errorf("%s: schema %s: %v", tl.Name(), tl.Schema(), err)
		}
		if tl.Description() == "" {
			t.Errorf("%s: no description", tl.Name())
		}
	}
}
