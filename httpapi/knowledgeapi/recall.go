package knowledgeapi

import (
	"net/http"
	"strings"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/knowledge"
)

// collection is a collection's row.
type collection struct {
	Name      string `json:"name"`
	Documents int    `json:"documents"`
	Passages  int    `json:"passages"`
	// Trusted: the operator's (the shared collection); a chat's or a
	// person's are outside text.
	Trusted bool `json:"trusted"`
	// Version rises with every change; UpdatedAt is the last one's time
	// (absent for an empty shared collection).
	Version   int64      `json:"version"`
	UpdatedAt *time.Time `json:"updatedAt,omitempty"`
}

// collections is GET /v1/collections: every collection that has had
// documents, the shared one first and always.
func (h *Handler) collections(w http.ResponseWriter, r *http.Request) {
	cs, err := h.lib.Collections(r.Context())
	if err != nil {
		h.cfg.WriteError(w, r, err)
		return
	}
	out := []collection{{Name: knowledge.Shared, Trusted: true}}
	for _, c := range cs {
		row := collection{Name: c.Name, Documents: c.Documents, Passages: c.Passages, Trusted: knowledge.Trusted(c.Name), Version: c.Version}
		if !c.Updated.IsZero() {
			row.UpdatedAt = &c.Updated
		}
		if c.Name == knowledge.Shared {
			out[0] = row
		} else {
			out = append(out, row)
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"collections": out})
}

// recallRequest is a question to test, and who would ask it.
type recallRequest struct {
	Question string `json:"question"`
	// SessionID adds that chat's collection; User (a user key, as
	// people's are kept: platform:user id) that person's.
	SessionID string `json:"sessionId"`
	User      string `json:"user"`
}

// recalled is a passage with its document and evidence.
type recalled struct {
	Passage  passage            `json:"passage"`
	Document recalledDocument   `json:"document"`
	Evidence knowledge.Evidence `json:"evidence"`
	// Reason says why a considered passage was not given: "under the
	// floor" (no retriever's floor cleared) or "over the limit" (cleared,
	// but past MaxPassages or the token budget).
	Reason string `json:"reason,omitempty"`
}

type recalledDocument struct {
	ID         int64  `json:"id"`
	Collection string `json:"collection"`
	Name       string `json:"name"`
	Title      string `json:"title"`
}

func recalledOf(r knowledge.Recalled) recalled {
	d := r.Document
	return recalled{Passage: passageOf(r.Passage), Evidence: r.Evidence,
		Document: recalledDocument{ID: d.ID, Collection: d.Collection, Name: d.Name, Title: d.Title}}
}

// recall is POST /v1/knowledge/recall: what a turn asking the question
// in that chat, as that person, would be given (passages, best first,
// each with the evidence of each retriever and their fusion), what was
// considered and not given (notRecalled, with why), the question's terms
// and the floors and limits in force.
func (h *Handler) recall(w http.ResponseWriter, r *http.Request) {
	var q recallRequest
	if err := h.body.Decode(w, r, &q, false); err != nil {
		h.cfg.WriteError(w, r, err)
		return
	}
	if strings.TrimSpace(q.Question) == "" {
		h.cfg.WriteError(w, r, gh.Errorf(gh.CodeInvalid, "a question is required"))
		return
	}
	f, err := h.lib.Recall(r.Context(), knowledge.Query{Text: q.Question, Scope: q.scope()})
	if err != nil {
		h.cfg.WriteError(w, r, err)
		return
	}
	given := map[int64]bool{}
	passages := make([]recalled, 0, len(f.Passages))
	for _, p := range f.Passages {
		given[p.Passage.ID] = true
		passages = append(passages, recalledOf(p))
	}
	not := []recalled{}
	for _, c := range f.Considered {
		if given[c.Passage.ID] {
			continue
		}
		rc := recalledOf(c)
		rc.Reason = "under the floor"
		if c.Evidence.Fused > 0 {
			rc.Reason = "over the limit"
		}
		not = append(not, rc)
	}
	terms := f.Terms
	if terms == nil {
		terms = []string{}
	}
	cfg := h.lib.Config()
	writeJSON(w, http.StatusOK, map[string]any{
		"question": q.Question, "terms": terms, "collections": q.scope().Collections(),
		"passages": passages, "notRecalled": not, "embeddingsError": f.EmbeddingsError,
		"lexicalFloor": cfg.LexicalFloor, "embeddingsFloor": cfg.EmbeddingsFloor, "embeddings": cfg.EmbeddingsURL != "",
		"maxPassages": cfg.MaxPassages, "tokenBudget": cfg.TokenBudget,
	})
}

// scope is who the request asks as.
func (q recallRequest) scope() knowledge.Scope {
	return knowledge.Scope{SessionID: q.SessionID, UserKey: q.User}
}
