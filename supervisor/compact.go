package supervisor

import (
	"context"
	"fmt"
	"strings"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/models"
	"github.com/gatehouse/gatehouse/supervisor/transcript"
)

const compactionPrompt = "Summarise the conversation below for your own later reference: who the user is, " +
	"what they asked for, what was decided and done (tools called and their results), and what is still open. " +
	"Be concise and keep names, numbers, addresses and dates exactly."

// maybeCompact summarises older entries when the context passes the
// configured share of the window. The summary is committed as a
// compaction event naming the first entry kept verbatim, and later loads
// start there, so a long conversation stays within the window and a turn's
// cost does not grow with the session's age.
func (s *Supervisor) maybeCompact(ctx context.Context, lease gh.Lease, t *transcript.Transcript, chain models.Chain, sum *gh.RunFinished) error {
	msgs := t.Messages()
	limit := int(float64(s.cfg.ContextWindow) * s.cfg.CompactionShare)
	if transcript.EstimateTokens(msgs) <= limit {
		return nil
	}
	cut := t.CompactionCut(s.cfg.KeepRecent)
	if cut <= 0 {
		return nil
	}
	var b strings.Builder
	if t.Summary() != "" {
		fmt.Fprintf(&b, "Earlier summary:\n%s\n\n", t.Summary())
	}
	for _, m := range t.Head(cut).Messages() {
		fmt.Fprintf(&b, "%s: %s\n", m.Role, m.Text)
		for _, c := range m.ToolCalls {
			fmt.Fprintf(&b, "  (called %s %s)\n", c.Name, c.Arguments)
		}
	}
	resp, _, err := s.cfg.Models.Call(ctx, chain, models.Request{Messages: []models.Message{
		{Role: models.RoleSystem, Text: compactionPrompt},
		{Role: models.RoleUser, Text: b.String()},
	}}, nil)
	if err != nil {
		// A failed summary is not a failed turn: answer with the full
		// context and try again next time.
		s.log.Warn("compaction failed; continuing without it", "session", lease.SessionID, "err", err)
		return nil
	}
	sum.Tokens.InputTokens += resp.Usage.InputTokens
	sum.Tokens.OutputTokens += resp.Usage.OutputTokens
	firstKept := t.FirstKept(cut)
	c := gh.Compaction{Summary: resp.Text, FirstKept: firstKept, Summarized: cut}
	if _, err := s.commit(ctx, lease, gh.KindCompaction, fmt.Sprintf("compaction-from-%d", firstKept), c); err != nil {
		return err
	}
	t.Compact(resp.Text, cut)
	return nil
}
