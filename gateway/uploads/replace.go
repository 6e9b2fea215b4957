package uploads

import (
	"context"
	"fmt"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/knowledge"
)

// A shared upload may replace a document of the same name. The card says
// so — which document, its current and new size and SHA-256 — and shows
// the first passage of the new text, so the approver sees what every
// chat will read instead. A document the operator put there (from the
// watched folder, the API, the admin page: any source but a chat) is
// replaced only by the operator's own approval on the web UI or the API
// (gh.LibraryNeedsOperator): the card records it, the rule of who may
// decide reads that, and the add checks it again against the document
// as it is then, since the operator may have added it after the card.

// MaxFirstPassage is how much of the new text's first passage a library
// card shows, in characters.
const MaxFirstPassage = 300

// sourceChat is the Source of a document a chat added.
const sourceChat = "chat"

// replaced is the document a library card would replace.
type replaced struct {
	Name    string `json:"name"`
	Size    int64  `json:"size"`
	SHA256  string `json:"sha256"`
	Source  string `json:"source"`
	AddedBy string `json:"addedBy,omitempty"`
	// Operator: the operator put it there (its source is not a chat).
	Operator bool `json:"operator"`
}

// operatorDoc reports whether doc was put in the library by the
// operator rather than added from a chat.
func operatorDoc(doc knowledge.Document) bool { return doc.Source != sourceChat }

// replaces is the shared document an add of name with these bytes
// (hash) would replace; nil when there is none, or it holds these bytes
// already (the add changes nothing).
func (s *Service) replaces(ctx context.Context, name, hash string) (*replaced, error) {
	doc, found, err := s.cfg.Library.Document(ctx, knowledge.Shared, name)
	if err != nil || !found || doc.Hash == hash {
		return nil, err
	}
	return &replaced{Name: doc.Name, Size: doc.Size, SHA256: doc.Hash, Source: doc.Source, AddedBy: doc.AddedBy, Operator: operatorDoc(doc)}, nil
}

// cardFields are what a library card of c shows.
func cardFields(c card) []gh.CardField {
	fields := []gh.CardField{
		{Label: "Add to", Value: "the shared library (every chat reads it, and the agent trusts it)"},
		{Label: "File", Value: c.Name},
	}
	sizeLabel, hashLabel := "Size", "SHA-256"
	if r := c.Replaces; r != nil {
		whose := "a chat's upload"
		if r.Operator {
			whose = "the operator's document"
		}
		fields = append(fields,
			gh.CardField{Label: "Replaces", Value: fmt.Sprintf("%s %s (from %s)", whose, r.Name, r.Source)},
			gh.CardField{Label: "Current size", Value: size(r.Size)},
			gh.CardField{Label: "Current SHA-256", Value: r.SHA256})
		sizeLabel, hashLabel = "New size", "New SHA-256"
	}
	fields = append(fields,
		gh.CardField{Label: sizeLabel, Value: size(c.Size) + ", " + passages(c.Passages)},
		gh.CardField{Label: "Type", Value: c.MediaType},
		gh.CardField{Label: "Sent by", Value: c.ByName + " (" + c.By + ")"},
		gh.CardField{Label: hashLabel, Value: c.SHA256})
	if c.ReplacesOperator {
		fields = append(fields, gh.CardField{Label: "Decided by", Value: "the operator only, in the web UI or the API: it replaces the operator's document"})
	}
	if c.First != "" {
		// Cut to MaxFirstPassage when the card was opened; free text, so
		// a chat may clip it further; escaped as every field is.
		fields = append(fields, gh.CardField{Label: "First passage", Value: c.First, FreeText: true})
	}
	return fields
}

// mayReplace is why the approved card g of c may not add its file now:
// it would replace a document the operator put in the shared collection,
// and the approval is not the operator's on the web UI or the API. ""
// when it may. The document is read as it is now, not as the card saw
// it.
func (s *Service) mayReplace(ctx context.Context, g gh.Gate, c card) (string, error) {
	if gh.OperatorSurface(g.DecidedBy, g.Surface) {
		return "", nil
	}
	r, err := s.replaces(ctx, c.Name, c.SHA256)
	if err != nil || r == nil || !r.Operator {
		return "", err
	}
	return fmt.Sprintf("it would replace the operator's document %s, and only the operator (in the web UI or the API) may approve that. The operator's document is unchanged.", r.Name), nil
}
