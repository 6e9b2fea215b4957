package httpapi

import (
	"net/http"
	"strings"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/models"
	"github.com/gatehouse/gatehouse/store"
)

// A session's chat settings: the model and thinking level its chat picked
// (the web chat's selector here; /model and /think in a platform chat),
// kept in the store per chat and applied to a turn whose inputs chose
// none. The models offered are Config.ChatModels alone.

// chatSettingsResponse is what both methods answer: the chat's choices
// and what it may choose from.
type chatSettingsResponse struct {
	// Chat is the chat the settings are kept for: a platform chat (every
	// session of it shares them) or the session itself.
	Chat      store.ChatKey `json:"chat"`
	Selection string        `json:"selection"`
	Thinking  string        `json:"thinking"`
	UpdatedBy string        `json:"updatedBy,omitempty"`
	Updated   time.Time     `json:"updatedAt,omitzero"`
	// Models are the selections the chat may pick; Model is the
	// configured one, which answers when it picked none.
	Models         []string `json:"models"`
	Model          string   `json:"model"`
	ThinkingLevels []string `json:"thinkingLevels"`
}

func (s *Server) chatSettingsBody(id string, cs store.ChatSettings) chatSettingsResponse {
	if cs.ChatID == "" {
		cs.ChatKey = store.SessionChat(id)
	}
	return chatSettingsResponse{Chat: cs.ChatKey, Selection: cs.Selection, Thinking: cs.Thinking, UpdatedBy: cs.UpdatedBy, Updated: cs.Updated,
		Models: append([]string{}, s.cfg.ChatModels.Strings()...), Model: s.cfg.Model,
		ThinkingLevels: []string{gh.ThinkingOff, gh.ThinkingLow, gh.ThinkingMedium, gh.ThinkingHigh}}
}

// getChatSettings: GET /v1/sessions/{id}/chat-settings → 200. A session
// not made yet (a new web chat before its first input) has none, and so
// has one of another tenant: nothing of it is read.
func (s *Server) getChatSettings(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	known, err := s.k.KnownSession(r.Context(), id, s.cfg.Tenant)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	var cs store.ChatSettings
	if known {
		if cs, _, err = s.cfg.Store.SessionChatSettings(r.Context(), id); err != nil {
			writeError(w, r, s.log, err)
			return
		}
	}
	writeJSON(w, http.StatusOK, s.chatSettingsBody(id, cs))
}

// chatSettingsRequest changes what it names: an absent field is left as
// it is, an empty one clears the choice.
type chatSettingsRequest struct {
	Selection *string `json:"selection"`
	Thinking  *string `json:"thinking"`
}

// putChatSettings: PUT /v1/sessions/{id}/chat-settings → 200. A chat
// platform's session is refused (its chat sets them, with /model and
// /think); a selection not in Config.ChatModels and an unknown level are
// refused. The session is made when it is new, as by its first input.
func (s *Server) putChatSettings(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id := r.PathValue("id")
	if err := gh.CheckEdgeSession(id); err != nil {
		writeError(w, r, s.log, err)
		return
	}
	var req chatSettingsRequest
	if err := s.body.Decode(w, r, &req, false); err != nil {
		writeError(w, r, s.log, err)
		return
	}
	if req.Selection != nil && *req.Selection != "" {
		// Exactly a listed selection: an API client says what it means.
		if !s.cfg.ChatModels.Allows(*req.Selection) {
			writeError(w, r, s.log, gh.Errorf(gh.CodeInvalid, "selection %q is not one a chat may pick; GATEHOUSE_CHAT_MODELS lists: %s", *req.Selection, strings.Join(s.cfg.ChatModels.Strings(), "; ")))
			return
		}
		chain, _ := models.ParseSelection(*req.Selection)
		sel := chain.String()
		req.Selection = &sel
	}
	if req.Thinking != nil {
		if err := gh.CheckThinking(*req.Thinking); err != nil {
			writeError(w, r, s.log, err)
			return
		}
	}
	if known, err := s.k.KnownSession(ctx, id, s.cfg.Tenant); err != nil {
		writeError(w, r, s.log, err)
		return
	} else if !known {
		if _, _, err := s.k.CreateSession(ctx, gh.Session{ID: id, Tenant: s.cfg.Tenant}); err != nil {
			writeError(w, r, s.log, err)
			return
		}
	}
	by := "api"
	if strings.EqualFold(r.Header.Get("X-Gatehouse-Source"), "web") {
		by = "web"
	}
	cs, err := s.cfg.Store.PutChatSettings(ctx, store.ChatSettingsChange{ChatKey: store.SessionChat(id), Selection: req.Selection, Thinking: req.Thinking, By: by, Now: time.Now().UTC()})
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	writeJSON(w, http.StatusOK, s.chatSettingsBody(id, cs))
}
