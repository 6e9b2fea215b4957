package supervisor

import (
	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/models"
)

// executionOf is the run's execution record of an answer, for audit: the
// model that answered, the chain it was resolved from, and what of the
// request's options its provider applied — the thinking level actually
// used, not the one asked for, with the note saying why one was not.
func executionOf(resp models.Response, chain models.Chain, tools int) *gh.Execution {
	return &gh.Execution{
		Provider: resp.Provider, Model: resp.Model, Selection: chain.String(),
		Thinking: resp.Applied.Thinking, ThinkingBudget: resp.Applied.ThinkingBudget,
		MaxTokens: resp.Applied.MaxTokens, Note: resp.Applied.Note,
		Tools: tools,
	}
}
