package toolworker_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/tools"
	"github.com/gatehouse/gatehouse/toolworker"
)

// A result whose encoding outgrows the log's payload limit — 256 KiB of
// control characters take six bytes each once encoded — is cut to fit
// and committed, instead of being refused on this run and every later
// one of the session. An outside result keeps its closing fence.
func TestOversizeEncodedResultIsCutToFit(t *testing.T) {
	big := strings.Repeat("\x01", 256<<10)
	reg := tools.NewRegistry(
		toolworker.FuncTool{ToolName: "ctl", Fn: func(context.Context, tools.Call) (string, error) { return big, nil }},
		bigPage{text: big},
	)
	_, out, err := runBatchOnce(t, toolworker.Config{Tools: reg},
		gh.ToolCall{ID: "c1", Name: "ctl", Arguments: json.RawMessage(`{}`)}, gh.ToolCall{ID: "c2", Name: "page", Arguments: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatalf("the batch failed: %v", err)
	}
	if len(out.Results) != 2 {
		t.Fatalf("results %d", len(out.Results))
	}
	for _, r := range out.Results {
		c := r.Result.Content
		if !strings.Contains(c, "[truncated:") || !strings.Contains(c, "more bytes not shown") {
			t.Errorf("%s: no truncation note", r.Result.Name)
		}
		if raw, _ := json.Marshal(r.Result); len(raw) > 1<<20 {
			t.Errorf("%s: payload %d bytes, over the limit", r.Result.Name, len(raw))
		}
	}
	if c := out.Results[1].Result.Content; !strings.HasSuffix(c, "<<<END EXTERNAL DATA>>>") {
		t.Errorf("the fence lost its closing marker: …%q", c[max(0, len(c)-80):])
	}
}

// bigPage is a safe tool whose output came from outside.
type bigPage struct{ text string }

func (bigPage) Name() string            { return "page" }
func (bigPage) Description() string     { return "" }
func (bigPage) Schema() json.RawMessage { return json.RawMessage(`{"type":"object"}`) }
func (bigPage) Tier() tools.Tier        { return tools.Safe }
func (bigPage) Runnable() error         { return nil }
func (bigPage) Idempotent() bool        { return true }
func (p bigPage) Run(context.Context, tools.Call) (tools.Result, error) {
	return tools.Result{Content: p.text, External: true}, nil
}
