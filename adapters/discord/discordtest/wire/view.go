package wire

import (
	"slices"

	"github.com/gatehouse/gatehouse/adapters/adaptertest"
)

// View is a message as the fake shows it to a test, with what only the
// Discord tests look at (discordtest.DiscordMessage).
type View struct {
	adaptertest.Message
	ChannelID string
	AuthorID  string
	// Type is 0 for a plain message and 19 for a reply; ReplyTo the
	// referenced message.
	Type    int
	ReplyTo string
	// AllowedMentions is allowed_mentions.parse as sent, nil when the
	// request had no allowed_mentions.
	AllowedMentions []string
	// PingedEveryone is true when the message notified @everyone/@here.
	PingedEveryone bool
	// Styles and Labels of the buttons, in order, like Buttons.
	Styles []int
	Labels []string
	// Rows is how many action rows the message has.
	Rows int
	// Ephemeral is true for an answer to an interaction only its user
	// sees (flags 64); it is in no channel's Messages.
	Ephemeral bool
}

// View is the message as a test sees it: authorID is its author's id,
// allowed its allowed_mentions.parse (nil when the request had none).
func (m Message) View(authorID string, allowed *[]string) View {
	v := View{
		Message:   adaptertest.Message{ID: m.ID, Text: m.Content, Edited: m.Edited != nil},
		ChannelID: m.ChannelID, AuthorID: authorID, Type: m.Kind, ReplyTo: m.RefID,
		PingedEveryone: m.Everyone, Rows: len(m.Rows), Ephemeral: m.Ephemeral,
	}
	if allowed != nil {
		v.AllowedMentions = slices.Clone(*allowed)
		if v.AllowedMentions == nil {
			v.AllowedMentions = []string{}
		}
	}
	for _, row := range m.Rows {
		for _, b := range row {
			v.Buttons = append(v.Buttons, b.CustomID)
			v.Styles = append(v.Styles, b.Style)
			v.Labels = append(v.Labels, b.Label)
		}
	}
	return v
}
