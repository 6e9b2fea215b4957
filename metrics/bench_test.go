package metrics

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/models"
)

// BenchmarkObserveApprovalTurn is what metrics on adds to one approval
// turn, by itself: the events of its commits observed (two attempts, the
// gate opened and decided, the effect's receipts and result, the
// answers) and its two model calls counted. It bounds the overhead
// BenchmarkMetricsOverhead (internal/testing/turnbench) measures on the whole
// turn.
func BenchmarkObserveApprovalTurn(b *testing.B) {
	m := New(prometheus.NewRegistry(), Config{})
	t0 := time.Now()
	ledger := m.Ledger(func(context.Context, models.LedgerRow) {})
	row := models.LedgerRow{Provider: "openai", Model: "gpt-4.1-mini", InputTokens: 900, OutputTokens: 40, CostUSD: 0.0004, Duration: 800 * time.Millisecond}
	commits := [][]gh.Event{
		{ev(gh.KindUserMessage, t0, gh.UserMessage{Text: "Email Sara that the report is ready."})},
		{ev(gh.KindRunStarted, t0, gh.RunStarted{RunID: 1, Attempt: 1})},
		{ev(gh.KindAssistantMessage, t0, gh.AssistantMessage{GenerationID: "u1-a1", ToolCalls: []gh.ToolCall{{ID: "c1", Name: "email_send"}}}),
			ev(gh.KindGateOpened, t0, gh.GateOpened{GateID: "g1", ToolCallID: "c1", Tool: "email_send", Kind: gh.GateKindApproval}),
			ev(gh.KindRunFinished, t0, gh.RunFinished{RunID: 1, Status: "awaiting_approval", DurationMs: 900})},
		{ev(gh.KindGateDecided, t0, gh.GateDecided{GateID: "g1", ToolCallID: "c1", Decision: gh.GateApproved, Surface: "telegram"})},
		{ev(gh.KindRunStarted, t0, gh.RunStarted{RunID: 1, Attempt: 2})},
		{ev(gh.KindReceipt, t0, map[string]string{"receiptId": "rcpt_1", "toolCallId": "c1", "tool": "email_send", "state": "started"})},
		{ev(gh.KindToolResult, t0, gh.ToolResult{ToolCallID: "c1", Name: "email_send", Content: "sent"}),
			ev(gh.KindReceipt, t0, map[string]string{"receiptId": "rcpt_1", "toolCallId": "c1", "tool": "email_send", "state": "finished"})},
		{ev(gh.KindAssistantMessage, t0, gh.AssistantMessage{GenerationID: "u1-a2", Text: "Done."}),
			ev(gh.KindRunFinished, t0, gh.RunFinished{RunID: 1, Status: "done", DurationMs: 1200})},
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, c := range commits {
			m.Observe("s1", c)
		}
		ledger(context.Background(), row)
		ledger(context.Background(), row)
	}
}
