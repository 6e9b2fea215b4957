package gatehouse_test

import (
	"encoding/json"
	"testing"

	gh "github.com/gatehouse/gatehouse"
)

// Only a library card that records replacing an operator's document
// needs the operator; a press on a chat is never the operator's surface.
func TestLibraryNeedsOperator(t *testing.T) {
	for _, c := range []struct {
		kind, args string
		want       bool
	}{
		{gh.GateKindLibrary, `{"name":"handbook.md","replacesOperator":true}`, true},
		{gh.GateKindLibrary, `{"name":"handbook.md","replacesOperator":false}`, false},
		{gh.GateKindLibrary, `{"name":"handbook.md"}`, false},
		{gh.GateKindLibrary, `not json`, false},
		{gh.GateKindLibrary, ``, false},
		{gh.GateKindApproval, `{"replacesOperator":true}`, false},
	} {
		if got := gh.LibraryNeedsOperator(c.kind, json.RawMessage(c.args)); got != c.want {
			t.Errorf("LibraryNeedsOperator(%s, %s) = %v, want %v", c.kind, c.args, got, c.want)
		}
	}
	for _, c := range []struct {
		by, surface string
		want        bool
	}{
		{gh.LocalUser, "web", true},
		{gh.LocalUser, "api", true},
		{gh.LocalUser, gh.PlatformTelegram, false},
		{"carol", "web", false},
	} {
		if got := gh.OperatorSurface(c.by, c.surface); got != c.want {
			t.Errorf("OperatorSurface(%s, %s) = %v, want %v", c.by, c.surface, got, c.want)
		}
	}
}
