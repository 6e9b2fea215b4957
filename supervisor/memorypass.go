package supervisor

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/memory"
	"github.com/gatehouse/gatehouse/models"
)

const extractPrompt = `Read what one person said to an assistant. List the lasting facts the person stated about themselves or people they know: their name, contacts with an email address, stated preferences, and things they asked to be remembered. Ignore questions and small talk. Answer with JSON only:
{"facts":[{"kind":"name|contact|preference|note","text":"the fact as a short sentence","subject":"for a contact: the contact's name","value":"the name or email address when there is one"}]}
With no such fact, answer {"facts":[]}.`

// ModelExtractor is memory's model pass: the model reads what one person
// said in a turn — their own words only, never the answer or a tool
// result — and lists the facts it holds. It runs later, as a job
// (memory.Work), so a turn never waits for it.
func ModelExtractor(reg *models.Registry) memory.Extract {
	return func(ctx context.Context, turn memory.Turn) ([]memory.Fact, error) {
		resp, _, err := reg.Call(ctx, nil, models.Request{Messages: []models.Message{
			{Role: models.RoleSystem, Text: extractPrompt},
			{Role: models.RoleUser, Text: "Person: " + turn.UserText},
		}}, nil)
		if err != nil {
			return nil, err
		}
		text := resp.Text
		start, end := strings.Index(text, "{"), strings.LastIndex(text, "}")
		if start < 0 || end < start {
			return nil, gh.Errorf(gh.CodeInvalid, "the model's fact list is not JSON: %q", text)
		}
		var out struct {
			Facts []struct{ Kind, Text, Subject, Value string }
		}
		if err := json.Unmarshal([]byte(text[start:end+1]), &out); err != nil {
			return nil, fmt.Errorf("the model's fact list is not JSON: %w", err)
		}
		var facts []memory.Fact
		for _, f := range out.Facts {
			kind := strings.ToLower(strings.TrimSpace(f.Kind))
			switch kind {
			case memory.KindName, memory.KindContact, memory.KindPreference, memory.KindNote:
			default:
				kind = memory.KindNote
			}
			if strings.TrimSpace(f.Text) == "" {
				continue
			}
			// A contact is looked up by its name, so it needs one: the
			// subject the model names (memory files it under contact:).
			facts = append(facts, memory.Fact{Kind: kind, Subject: strings.TrimSpace(f.Subject), Text: strings.TrimSpace(f.Text), Value: strings.TrimSpace(f.Value)})
		}
		return facts, nil
	}
}
