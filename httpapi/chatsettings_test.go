package httpapi_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/httpapi"
	"github.com/gatehouse/gatehouse/models"
)

type chatSettingsReply struct {
	Chat struct {
		Platform string `json:"platform"`
		ChatID   string `json:"chatId"`
	} `json:"chat"`
	Selection      string   `json:"selection"`
	Thinking       string   `json:"thinking"`
	UpdatedBy      string   `json:"updatedBy"`
	Models         []string `json:"models"`
	Model          string   `json:"model"`
	ThinkingLevels []string `json:"thinkingLevels"`
}

// A web session's chat settings: none before anything is picked (a chat
// not made yet included), a pick of a listed model and a level kept and
// read back, a change of one field leaving the other, an unlisted model
// and an unknown level refused with nothing stored, a chat platform's
// session refused (its chat picks with /model).
func TestChatSettingsOfAWebSession(t *testing.T) {
	choices, _ := models.ParseChatChoices("openai:gpt-4.1-mini;openai:o3")
	run(t, httpapi.Config{ChatModels: choices, Model: "openai:gpt-4.1-mini"}, func(t *testing.T, e *env) {
		get := func(session string) chatSettingsReply {
			t.Helper()
			var out chatSettingsReply
			e.do("GET", "/v1/sessions/"+session+"/chat-settings", nil).expect(t, http.StatusOK, "").decode(t, &out)
			return out
		}
		fresh := get("w1")
		if fresh.Selection != "" || fresh.Thinking != "" || fresh.Chat.ChatID != "w1" || fresh.Chat.Platform != "" || fresh.Model != "openai:gpt-4.1-mini" ||
			!slices.Equal(fresh.Models, []string{"openai:gpt-4.1-mini", "openai:o3"}) || !slices.Equal(fresh.ThinkingLevels, []string{"off", "low", "medium", "high"}) {
			t.Fatalf("a new chat's settings: %+v", fresh)
		}
		var put chatSettingsReply
		e.do("PUT", "/v1/sessions/w1/chat-settings", map[string]any{"selection": "openai:o3", "thinking": "high"}, "X-Gatehouse-Source", "web").
			expect(t, http.StatusOK, "").decode(t, &put)
		if put.Selection != "openai:o3" || put.Thinking != gh.ThinkingHigh || put.UpdatedBy != "web" {
			t.Fatalf("the pick: %+v", put)
		}
		e.do("PUT", "/v1/sessions/w1/chat-settings", map[string]any{"thinking": "low"}, "X-Gatehouse-Source", "web").expect(t, http.StatusOK, "")
		if got := get("w1"); got.Selection != "openai:o3" || got.Thinking != gh.ThinkingLow {
			t.Fatalf("a change of the level alone: %+v", got)
		}
		for _, bad := range []map[string]any{{"selection": "openai:gpt-5"}, {"selection": "o3"}, {"thinking": "maximum"}} {
			r := e.do("PUT", "/v1/sessions/w1/chat-settings", bad).expect(t, http.StatusBadRequest, gh.CodeInvalid)
			if _, sel := bad["selection"]; sel && !strings.Contains(r.message(t), "openai:gpt-4.1-mini; openai:o3") {
				t.Fatalf("%v refused with %q, want the list", bad, r.message(t))
			}
		}
		if got := get("w1"); got.Selection != "openai:o3" || got.Thinking != gh.ThinkingLow {
			t.Fatalf("a refused change changed %+v", got)
		}
		e.do("PUT", "/v1/sessions/w1/chat-settings", map[string]any{"selection": ""}).expect(t, http.StatusOK, "")
		if got := get("w1"); got.Selection != "" || got.Thinking != gh.ThinkingLow || got.UpdatedBy != "api" {
			t.Fatalf("clearing the model: %+v", got)
		}
		if got := get("w2"); got.Selection != "" || got.Thinking != "" {
			t.Fatalf("another session reads w1's settings: %+v", got)
		}
		e.do("PUT", "/v1/sessions/"+gh.FallbackSessionPrefix+"chat/chat-settings", map[string]any{"selection": "openai:o3"}).
			expect(t, http.StatusForbidden, gh.CodeExternalSession)
	})
}
