package slackchat

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/gatehouse/gatehouse/gateway/chat"
)

// A card's text is plain_text, without emoji codes: mrkdwn would read the
// *, _ and ~ of an argument as formatting and drop them from what the
// person approving sees.
func TestCardBlocksArePlainText(t *testing.T) {
	card := chat.Card{GateID: "g_1", Text: FormatLiteral("Command: rm -rf /tmp/*_cache_* ~/x :boom: <!channel>") + strings.Repeat(" word", 700),
		Buttons: []chat.Button{{Label: "Approve", Data: chat.ButtonData("g_1", chat.ChoiceApprove), Style: "primary"}}}
	raw, err := json.Marshal(cardBlocks(card, ""))
	if err != nil {
		t.Fatal(err)
	}
	var blocks []struct {
		Type string `json:"type"`
		Text *struct {
			Type  string `json:"type"`
			Text  string `json:"text"`
			Emoji *bool  `json:"emoji"`
		} `json:"text"`
	}
	if err := json.Unmarshal(raw, &blocks); err != nil {
		t.Fatal(err)
	}
	sections := 0
	for _, b := range blocks {
		if b.Type != "section" {
			continue
		}
		sections++
		if b.Text == nil || b.Text.Type != "plain_text" || b.Text.Emoji == nil || *b.Text.Emoji {
			t.Fatalf("a card section must be plain_text with emoji off: %s", raw)
		}
	}
	if sections < 2 || !strings.Contains(string(raw), `rm -rf /tmp/*_cache_* ~/x :boom: \u0026lt;!channel\u0026gt;`) {
		t.Fatalf("the card's text, in %d sections: %s", sections, raw)
	}
}
