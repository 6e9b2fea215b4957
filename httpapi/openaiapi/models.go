package openaiapi

import (
	"net/http"
	"slices"
	"strings"

	gh "github.com/gatehouse/gatehouse"
)

// modelCreated is the created time models are listed with: Gatehouse
// does not know when a provider made a model, and a fixed time keeps the
// answer the same on every replica.
const modelCreated = 1735689600 // 2025-01-01T00:00:00Z

// modelIDs are the model ids a request may name: ModelID, then the
// configured selections.
func (h *Handler) modelIDs() []string {
	return append([]string{ModelID}, h.cfg.Selections...)
}

// listModels is GET /v1/models.
func (h *Handler) listModels(w http.ResponseWriter, r *http.Request) {
	out := modelList{Data: []model{}}
	for _, id := range h.modelIDs() {
		out.Data = append(out.Data, model{ID: id, Created: modelCreated, OwnedBy: "gatehouse"})
	}
	writeJSON(w, http.StatusOK, out)
}

// getModel is GET /v1/models/{id}.
func (h *Handler) getModel(w http.ResponseWriter, r *http.Request, id string) {
	if _, err := h.selection(id); err != nil || id == "" {
		h.writeError(w, r, modelNotFound(id, h.modelIDs()))
		return
	}
	writeJSON(w, http.StatusOK, model{ID: id, Created: modelCreated, OwnedBy: "gatehouse"})
}

// selection is the model selection a request's model commits: none for
// ModelID (or no model), the selection itself for a configured one.
func (h *Handler) selection(modelID string) (string, error) {
	switch {
	case modelID == "" || modelID == ModelID:
		return "", nil
	case slices.Contains(h.cfg.Selections, modelID):
		return modelID, nil
	}
	return "", modelNotFound(modelID, h.modelIDs())
}

func modelNotFound(id string, known []string) error {
	return &endpointError{status: http.StatusNotFound, code: codeModelNotFound,
		err: gh.Errorf(gh.CodeNotFound, "the model %q does not exist here; use one of: %s", id, strings.Join(known, ", "))}
}
