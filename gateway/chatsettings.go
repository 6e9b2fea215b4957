package gateway

import (
	"context"
	"fmt"
	"strings"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/cards"
	"github.com/gatehouse/gatehouse/gateway/chat"
	"github.com/gatehouse/gatehouse/store"
)

// The chat's own choices: /model shows the chat's model and the models it
// may pick (Config.ChatModels, GATEHOUSE_CHAT_MODELS) and picks one;
// /think shows and sets its thinking level. They are kept per platform
// chat in the store (store.ChatSettings), so every session of the chat
// (each Slack thread, each Telegram topic), every replica and every later
// turn reads the same; the supervisor applies them to a turn whose inputs
// chose nothing. Anyone admitted in the chat may change them.

// choiceDefault is the argument that clears a choice: the configured
// model, no thinking level.
const choiceDefault = "default"

// thinkingLevels are the levels /think takes, as the API's thinking does.
var thinkingLevels = []string{gh.ThinkingOff, gh.ThinkingLow, gh.ThinkingMedium, gh.ThinkingHigh}

// chatSettings answers /model and /think.
func (g *Gateway) chatSettings(ctx context.Context, name string, in gh.Inbound) (chat.CommandReply, string, error) {
	key := store.ChatKey{Platform: in.Platform, ChatID: in.ChatID}
	cur, _, err := g.st.ChatSettings(ctx, key)
	if err != nil {
		return chat.CommandReply{}, "", err
	}
	arg := strings.TrimSpace(in.Text)
	if arg == "" {
		if name == chat.CommandModel {
			return chat.CommandReply{Text: g.modelText(cur) + "\n" + thinkingText(cur)}, "/model: shown", nil
		}
		return chat.CommandReply{Text: thinkingText(cur)}, "/think: shown", nil
	}
	change := store.ChatSettingsChange{ChatKey: key, By: firstNonEmpty(in.UserName, in.UserID), Now: g.cfg.Now().UTC()}
	var text, detail string
	if name == chat.CommandModel {
		sel, ok := "", strings.EqualFold(arg, choiceDefault)
		if !ok {
			if picked, found := g.cfg.ChatModels.Find(arg); found {
				sel, ok = picked.String(), true
			}
		}
		if !ok {
			return chat.CommandReply{Text: g.refusedModel(arg)}, "/model: refused " + clip(arg, 50), nil
		}
		change.Selection = &sel
		text, detail = "This chat now answers with "+g.modelName(sel)+", from its next turn on.", "/model: "+firstNonEmpty(sel, choiceDefault)
	} else {
		level := strings.ToLower(arg)
		if level == choiceDefault {
			level = ""
		}
		if level != "" && gh.CheckThinking(level) != nil {
			return chat.CommandReply{Text: fmt.Sprintf("Thinking levels are %s (or %s), not %q.", strings.Join(thinkingLevels, ", "), choiceDefault, cards.Visible(clip(arg, 50)))},
				"/think: refused " + clip(arg, 50), nil
		}
		change.Thinking = &level
		text, detail = "This chat's thinking level is now "+levelName(level)+", from its next turn on. A model that takes no level answers without it, and its run says so.",
			"/think: "+firstNonEmpty(level, choiceDefault)
	}
	if _, err := g.st.PutChatSettings(ctx, change); err != nil {
		return chat.CommandReply{}, "", err
	}
	return chat.CommandReply{Text: text}, detail, nil
}

// modelText is /model's account of the chat's model and the list.
func (g *Gateway) modelText(cur store.ChatSettings) string {
	var b strings.Builder
	switch {
	case cur.Selection == "":
		b.WriteString("This chat's model: " + g.modelName("") + ".")
	case !g.cfg.ChatModels.Allows(cur.Selection):
		fmt.Fprintf(&b, "This chat picked %s, which is no longer on the list: %s answers.", cur.Selection, g.modelName(""))
	default:
		fmt.Fprintf(&b, "This chat's model: %s (picked by %s).", cur.Selection, cards.Visible(cur.UpdatedBy))
	}
	if len(g.cfg.ChatModels) == 0 {
		b.WriteString("\nNo model can be picked here: GATEHOUSE_CHAT_MODELS lists none.")
		return b.String()
	}
	b.WriteString("\nModels this chat may pick:")
	for i, sel := range g.cfg.ChatModels.Strings() {
		fmt.Fprintf(&b, "\n%d. %s", i+1, sel)
		if sel == cur.Selection {
			b.WriteString(" (this chat's)")
		}
	}
	fmt.Fprintf(&b, "\nPick one with /%s followed by its name or number; /%s %s goes back to the configured model.", chat.CommandModel, chat.CommandModel, choiceDefault)
	return b.String()
}

// refusedModel says that name is not one the chat may pick, and which are.
func (g *Gateway) refusedModel(name string) string {
	shown := cards.Visible(clip(name, 100))
	if len(g.cfg.ChatModels) == 0 {
		return fmt.Sprintf("%q is not a model this chat may pick: GATEHOUSE_CHAT_MODELS lists none.", shown)
	}
	return fmt.Sprintf("%q is not a model this chat may pick. It may pick: %s (or %s).", shown, strings.Join(g.cfg.ChatModels.Strings(), "; "), choiceDefault)
}

// modelName names a selection, "" being the configured model.
func (g *Gateway) modelName(sel string) string {
	switch {
	case sel != "":
		return sel
	case g.cfg.Model != "":
		return "the configured model (" + g.cfg.Model + ")"
	}
	return "the configured model"
}

// thinkingText is /think's account of the chat's level.
func thinkingText(cur store.ChatSettings) string {
	by := ""
	if cur.Thinking != "" {
		by = " (set by " + cards.Visible(cur.UpdatedBy) + ")"
	}
	return fmt.Sprintf("This chat's thinking level: %s%s. Set it with /%s %s, or /%s %s.", levelName(cur.Thinking), by,
		chat.CommandThink, strings.Join(thinkingLevels, "|"), chat.CommandThink, choiceDefault)
}

// levelName names a thinking level, "" being none picked.
func levelName(level string) string {
	if level == "" {
		return "none picked (the model's default)"
	}
	return level
}
