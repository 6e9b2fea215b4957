package supervisor

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/gatehouse/gatehouse/memory"
	"github.com/gatehouse/gatehouse/models"
)

const extractPrompt = `Read what one person said to an assistant, turn by turn; each turn is numbered ("Turn 1:", "Turn 2:" …). List the lasting facts the person stated about themselves or people they know: their name, contacts with an email address, stated preferences, and things they asked to be remembered. Ignore questions and small talk. Give each fact the number of the turn that states it; when a later turn changes what an earlier one said, list both, each with its own turn. Answer with JSON only:
{"facts":[{"turn":1,"kind":"name|contact|preference|note","text":"the fact as a short sentence","subject":"for a contact: the contact's name","value":"the name or email address when there is one"}]}
With no such fact, answer {"facts":[]}.`

// ModelExtractor is memory's model pass: the model reads what one person
// said in a batch of turns of one session — their own words only, never
// an answer or a tool result — numbered, in one request, and lists the
// facts they hold with the turn each comes from. It runs later, as a job
// (memory.Work), so a turn never waits for it. An answer that is not the
// expected JSON is a memory.ErrBadAnswer error (not retried); a failed
// call is an error of its own (retried).
func ModelExtractor(reg *models.Registry) memory.Extract {
	return func(ctx context.Context, turns []memory.Turn) ([]memory.Found, error) {
		var said strings.Builder
		for i, t := range turns {
			if i > 0 {
				said.WriteString("\n\n")
			}
			fmt.Fprintf(&said, "Turn %d: %s", i+1, t.UserText)
		}
		resp, _, err := reg.Call(ctx, nil, models.Request{Messages: []models.Message{
			{Role: models.RoleSystem, Text: extractPrompt},
			{Role: models.RoleUser, Text: said.String()},
		}}, nil)
		if err != nil {
			return nil, err
		}
		return parseFacts(resp.Text, len(turns))
	}
}

// parseFacts reads the model's fact list: a JSON object, possibly with
// words around it. A fact whose turn is not one of the n given is dropped;
// with one turn, a fact naming none is that turn's.
func parseFacts(text string, n int) ([]memory.Found, error) {
	start, end := strings.Index(text, "{"), strings.LastIndex(text, "}")
	if start < 0 || end < start {
		return nil, fmt.Errorf("%w: %q", memory.ErrBadAnswer, clipText(text))
	}
	var out struct {
		Facts []struct {
			Turn                       json.RawMessage
			Kind, Text, Subject, Value string
		}
	}
	if err := json.Unmarshal([]byte(text[start:end+1]), &out); err != nil {
		return nil, fmt.Errorf("%w: %v: %q", memory.ErrBadAnswer, err, clipText(text))
	}
	var found []memory.Found
	for _, f := range out.Facts {
		turn, ok := turnNumber(f.Turn)
		if !ok && n == 1 {
			turn, ok = 1, true
		}
		if !ok || turn < 1 || turn > n {
			continue
		}
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
		found = append(found, memory.Found{Turn: turn - 1, Fact: memory.Fact{Kind: kind, Subject: strings.TrimSpace(f.Subject),
			Text: strings.TrimSpace(f.Text), Value: strings.TrimSpace(f.Value)}})
	}
	return found, nil
}

// turnNumber reads a fact's turn: a number, or a number in a string.
func turnNumber(raw json.RawMessage) (int, bool) {
	s := strings.Trim(strings.TrimSpace(string(raw)), `"`)
	n, err := strconv.Atoi(strings.TrimSpace(s))
	return n, err == nil
}

// clipText bounds a model answer quoted in an error.
func clipText(s string) string {
	if len(s) <= 300 {
		return s
	}
	return s[:300] + "…"
}
