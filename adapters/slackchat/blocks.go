package slackchat

import (
	"strconv"
	"strings"
	"unicode/utf8"

	slackgo "github.com/slack-go/slack"

	"github.com/gatehouse/gatehouse/gateway/chat"
)

// Block Kit limits Slack refuses a message over (invalid_blocks).
const (
	maxSectionText  = 3000
	maxButtonText   = 75
	maxActionsBlock = 25
	maxButtonValue  = 2000
)

// cardBlocks renders a card as Block Kit: the text in section blocks (a
// section holds at most 3,000 characters, so a longer text takes several)
// and the buttons in actions blocks of at most 25. A card without buttons
// (a decided one) has no actions block at all.
//
// The sections are plain_text without emoji codes: a card shows its
// arguments as written (FormatCard escaped only &, < and >), and mrkdwn
// would read *, _, ~ and ` in them as formatting and drop them.
func cardBlocks(card chat.Card, text string) []slackgo.Block {
	if card.Text != "" {
		text = card.Text
	}
	var blocks []slackgo.Block
	for i, chunk := range splitText(text, maxSectionText) {
		blocks = append(blocks, slackgo.NewSectionBlock(
			slackgo.NewTextBlockObject(slackgo.PlainTextType, chunk, false, false),
			nil, nil, slackgo.SectionBlockOptionBlockID("gh_text_"+strconv.Itoa(i))))
	}
	var elems []slackgo.BlockElement
	used := map[string]bool{}
	flush := func() {
		if len(elems) > 0 {
			blocks = append(blocks, slackgo.NewActionBlock("gh_actions_"+strconv.Itoa(len(blocks)), elems...))
			elems = nil
			// action_id must be unique within its block only.
			used = map[string]bool{}
		}
	}
	for i, b := range card.Buttons {
		if len(elems) == maxActionsBlock {
			flush()
		}
		id := actionID(b.Data, i)
		if used[id] {
			id += "_" + strconv.Itoa(i)
		}
		used[id] = true
		label := truncate(b.Label, maxButtonText)
		if label == "" {
			label = "…"
		}
		btn := slackgo.NewButtonBlockElement(id, b.Data, slackgo.NewTextBlockObject(slackgo.PlainTextType, label, false, false))
		switch b.Style {
		case "primary":
			btn.WithStyle(slackgo.StylePrimary)
		case "danger":
			btn.WithStyle(slackgo.StyleDanger)
		}
		elems = append(elems, btn)
	}
	flush()
	return blocks
}

// actionID names a button after its choice ("gh_approve", "gh_deny",
// "gh_deny_reason", "gh_approve_chat", "gh_revoke", "gh_opt_2"), so Slack's logs and the payload say what was pressed.
func actionID(data string, i int) string {
	_, choice, ok := chat.ParseButtonData(data)
	switch {
	case !ok:
		return "gh_btn_" + strconv.Itoa(i)
	case choice == chat.ChoiceApprove:
		return "gh_approve"
	case choice == chat.ChoiceDeny:
		return "gh_deny"
	case choice == chat.ChoiceDenyReason:
		return "gh_deny_reason"
	case choice == chat.ChoiceApproveChat:
		return "gh_approve_chat"
	case choice == chat.ChoiceRevokeGrant:
		return "gh_revoke"
	case !strings.HasPrefix(choice, chat.ChoiceOption):
		return "gh_" + choice
	default:
		return "gh_opt_" + strings.TrimPrefix(choice, chat.ChoiceOption)
	}
}

// truncate cuts s to at most n runes, marking a cut with an ellipsis.
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// splitText cuts text into pieces of at most n runes, preferring a line
// break, then a space, and never cutting an escape such as "&amp;" in two.
func splitText(text string, n int) []string {
	var out []string
	for text != "" {
		if utf8.RuneCountInString(text) <= n {
			out = append(out, text)
			break
		}
		// Byte offset of the n-th rune: the hard limit of this piece.
		limit := 0
		for i := 0; i < n; i++ {
			_, size := utf8.DecodeRuneInString(text[limit:])
			limit += size
		}
		cut := strings.LastIndexByte(text[:limit], '\n')
		if cut < limit/2 {
			cut = strings.LastIndexByte(text[:limit], ' ')
		}
		if cut < limit/2 {
			cut = limit
			// An escape is at most "&amp;" long: step back over one that
			// would be split.
			if amp := strings.LastIndexByte(text[:cut], '&'); amp >= 0 && cut-amp < 5 && !strings.Contains(text[amp:cut], ";") {
				if semi := strings.IndexByte(text[amp:], ';'); semi >= 0 && semi <= 4 && amp > 0 {
					cut = amp
				}
			}
		} else {
			cut++ // keep the separator with the first piece
		}
		out = append(out, text[:cut])
		text = text[cut:]
	}
	return out
}
