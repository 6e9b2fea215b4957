package toolworker_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/cards"
	"github.com/gatehouse/gatehouse/kernel"
	"github.com/gatehouse/gatehouse/tools"
	"github.com/gatehouse/gatehouse/toolworker"
)

// cardEvents are the gate.opened and tool.result events of session s1.
func cardEvents(t *testing.T, k *kernel.Kernel) (opened []gh.GateOpened, results []gh.ToolResult) {
	t.Helper()
	evs, err := k.Events(context.Background(), "s1", 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		switch e.Kind {
		case gh.KindGateOpened:
			var o gh.GateOpened
			json.Unmarshal(e.Payload, &o)
			opened = append(opened, o)
		case gh.KindToolResult:
			var r gh.ToolResult
			json.Unmarshal(e.Payload, &r)
			results = append(results, r)
		}
	}
	return opened, results
}

// The gate commits what its card shows: the tool's own fields, so every
// surface shows the same.
func TestGateOpenedCarriesTheCardFields(t *testing.T) {
	email := tools.NewEmailSend(tools.EmailConfig{SMTPURL: "smtp://127.0.0.1:1?tls=none", From: "bot@example.com"})
	args := `{"to":"Sara <sara@example.com>","subject":"Report","body":"Ready."}`
	k, out, err := runBatchOnce(t, toolworker.Config{Tools: tools.NewRegistry(email), CardLimit: 1500},
		gh.ToolCall{ID: "c1", Name: tools.NameEmailSend, Arguments: json.RawMessage(args)})
	if err != nil || !out.Paused {
		t.Fatalf("batch: %+v %v", out, err)
	}
	opened, _ := cardEvents(t, k)
	if len(opened) != 1 {
		t.Fatalf("%d gates", len(opened))
	}
	want := []gh.CardField{{Label: "To", Value: `sara@example.com (display name "Sara")`}, {Label: "Subject", Value: "Report"}, {Label: "Body", Value: "Ready.", FreeText: true}}
	if got := opened[0].Fields; len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("fields %+v", got)
	}
	var got, sent map[string]string
	json.Unmarshal(opened[0].Arguments, &got)
	json.Unmarshal([]byte(args), &sent)
	if got["to"] != sent["to"] || got["body"] != sent["body"] || opened[0].ArgsHash == "" {
		t.Fatalf("the approval stays bound to the arguments: %+v", opened[0])
	}
}

// A field that must be shown whole and does not fit the smallest chat
// platform's card is refused before any card: the model reads why, and no
// gate opens. Free text of any length is no reason to refuse.
func TestAFieldTooLongForTheCardIsRefusedBeforeAnyCard(t *testing.T) {
	var runs atomic.Int32
	post := toolworker.FuncTool{ToolName: "post", ToolTier: tools.Danger, Fn: func(context.Context, tools.Call) (string, error) { runs.Add(1); return "ok", nil }}
	write := tools.NewWorkspaceWrite(tools.WorkspaceConfig{})
	reg := tools.NewRegistry(post, write)
	const limit = 2000 - 700
	long, _ := json.Marshal(map[string]string{"channel": strings.Repeat("c", limit)})
	k, out, err := runBatchOnce(t, toolworker.Config{Tools: reg, CardLimit: limit},
		gh.ToolCall{ID: "c1", Name: "post", Arguments: long})
	if err != nil || out.Paused || len(out.Results) != 1 {
		t.Fatalf("batch: %+v %v", out, err)
	}
	opened, results := cardEvents(t, k)
	if len(opened) != 0 || runs.Load() != 0 {
		t.Fatalf("%d gates opened, %d runs: a call whose card cannot show it must not ask anyone", len(opened), runs.Load())
	}
	if r := results[0]; !r.IsError || !strings.Contains(r.Content, `"channel" whole`) || !strings.Contains(r.Content, "Refused before asking for approval") {
		t.Fatalf("the model must read why: %+v", r)
	}
	// Just fitting, it opens a gate.
	var fits string
	for n := limit; n > 0; n-- {
		raw, _ := json.Marshal(map[string]string{"channel": strings.Repeat("c", n)})
		if cards.Need("post", []gh.CardField{{Label: "channel", Value: strings.Repeat("c", n)}}) <= limit {
			fits = string(raw)
			break
		}
	}
	// A long file content is free text: clipped on the card, never refused.
	content, _ := json.Marshal(map[string]string{"path": "notes.md", "content": strings.Repeat("word ", 5000)})
	k, out, err = runBatchOnce(t, toolworker.Config{Tools: reg, CardLimit: limit},
		gh.ToolCall{ID: "c2", Name: "post", Arguments: json.RawMessage(fits)},
		gh.ToolCall{ID: "c3", Name: tools.NameWorkspaceWrite, Arguments: content})
	if err != nil || !out.Paused {
		t.Fatalf("batch: %+v %v", out, err)
	}
	if opened, results := cardEvents(t, k); len(opened) != 2 || len(results) != 0 {
		t.Fatalf("%d gates, results %+v", len(opened), results)
	}
	// gate.opened holds the arguments and the fields: a call too large for
	// both in one event is refused, not left to fail its commit.
	huge, _ := json.Marshal(map[string]string{"path": "big.txt", "content": strings.Repeat("x", 600<<10)})
	k, out, err = runBatchOnce(t, toolworker.Config{Tools: reg}, gh.ToolCall{ID: "c5", Name: tools.NameWorkspaceWrite, Arguments: huge})
	if opened, results := cardEvents(t, k); err != nil || out.Paused || len(opened) != 0 || len(results) != 1 || !strings.Contains(results[0].Content, "too large to be shown") {
		t.Fatalf("a call too large for its card: %v %+v %+v", err, opened, results)
	}
	// Arguments the tool refuses get no card either.
	k, _, _ = runBatchOnce(t, toolworker.Config{Tools: reg},
		gh.ToolCall{ID: "c4", Name: tools.NameWorkspaceWrite, Arguments: json.RawMessage(`{"path":"../x","content":"y"}`)})
	if opened, results := cardEvents(t, k); len(opened) != 0 || len(results) != 1 || !strings.Contains(results[0].Content, "leaves the workspace") {
		t.Fatalf("gates %+v, results %+v", opened, results)
	}
}
