package discord

import (
	"time"

	"github.com/bwmarrin/discordgo"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/gateway/chat"
)

// inboundFromMessage normalises a MESSAGE_CREATE. selfID is the bot's
// user id from READY. ok is false for a message that cannot be
// answered or deduplicated (no id, channel or author): discordgo hands
// on events it could only partly decode, so nothing here may be assumed.
func inboundFromMessage(m *discordgo.Message, selfID string, now time.Time) (in gh.Inbound, ok bool) {
	if m == nil || m.ID == "" || m.ChannelID == "" || m.Author == nil || m.Author.ID == "" {
		return gh.Inbound{}, false
	}
	in = gh.Inbound{
		Platform:   gh.PlatformDiscord,
		UpdateID:   m.ID,
		ChatID:     m.ChannelID,
		ChatType:   gh.ChatGroup,
		UserID:     m.Author.ID,
		UserName:   m.Author.Username,
		MessageID:  m.ID,
		Text:       m.Content,
		IsBot:      m.Author.Bot || m.WebhookID != "" || (selfID != "" && m.Author.ID == selfID),
		Files:      filesOf(m.Attachments),
		ReceivedAt: now,
	}
	if m.GuildID == "" {
		in.ChatType = gh.ChatDM
	}
	switch {
	case m.Type != discordgo.MessageTypeDefault && m.Type != discordgo.MessageTypeReply:
		in.Text, in.Unsupported, in.Files = "", "system_message", nil
	case m.Content != "":
	case len(m.StickerItems) > 0:
		in.Unsupported = "sticker"
	case len(m.Attachments) > 0:
		in.Unsupported = "attachment"
	case len(m.Embeds) > 0:
		in.Unsupported = "embed"
	case m.Poll != nil:
		in.Unsupported = "poll"
	}
	return in, true
}

// interactionUser is who pressed: member.user in a guild, user in a DM.
func interactionUser(i *discordgo.Interaction) *discordgo.User {
	if i.Member != nil && i.Member.User != nil {
		return i.Member.User
	}
	return i.User
}

// customID is a component interaction's custom_id; ok is false for any
// other interaction.
func customID(i *discordgo.Interaction) (id string, ok bool) {
	if i == nil || i.Type != discordgo.InteractionMessageComponent {
		return "", false
	}
	d, ok := i.Data.(discordgo.MessageComponentInteractionData)
	if !ok {
		return "", false
	}
	return d.CustomID, true
}

// pressFromInteraction normalises a button press. ok is false when the
// interaction is not a press of one of our buttons or lacks what a
// press needs (id, token, channel, presser).
func pressFromInteraction(i *discordgo.Interaction) (p gh.Press, ok bool) {
	data, ok := customID(i)
	if !ok {
		return gh.Press{}, false
	}
	return pressOf(i, data)
}

// pressFromModal normalises the submission of the reason modal
// (reasonModal): a deny press of its card, with the reason typed. ok is
// false for a modal that is not ours or lacks what a press needs.
func pressFromModal(i *discordgo.Interaction) (p gh.Press, ok bool) {
	d, ok := i.Data.(discordgo.ModalSubmitInteractionData)
	if !ok {
		return gh.Press{}, false
	}
	p, ok = pressOf(i, d.CustomID)
	if !ok || p.Choice != chat.ChoiceDeny {
		return gh.Press{}, false
	}
	p.Reason = modalValue(d.Components, reasonInput)
	return p, true
}

// pressOf is the press an interaction carrying our button data makes;
// ok is false when the data is not ours or the interaction lacks what a
// press needs (id, token, channel, presser).
func pressOf(i *discordgo.Interaction, data string) (p gh.Press, ok bool) {
	if i.ID == "" || i.Token == "" || i.ChannelID == "" {
		return gh.Press{}, false
	}
	gateID, choice, ok := chat.ParseButtonData(data)
	if !ok {
		return gh.Press{}, false
	}
	u := interactionUser(i)
	if u == nil || u.ID == "" {
		return gh.Press{}, false
	}
	p = gh.Press{
		Platform: gh.PlatformDiscord,
		UpdateID: i.ID,
		GateID:   gateID,
		Choice:   choice,
		UserID:   u.ID,
		UserName: u.Username,
		ChatID:   i.ChannelID,
		IsBot:    u.Bot,
	}
	if i.Message != nil {
		p.MessageID = i.Message.ID
	}
	return p, true
}

// modalValue is the value of the text input customID among a modal's
// submitted components (action rows of text inputs).
func modalValue(comps []discordgo.MessageComponent, customID string) string {
	for _, c := range comps {
		switch c := c.(type) {
		case *discordgo.ActionsRow:
			if v := modalValue(c.Components, customID); v != "" {
				return v
			}
		case discordgo.ActionsRow:
			if v := modalValue(c.Components, customID); v != "" {
				return v
			}
		case *discordgo.TextInput:
			if c.CustomID == customID {
				return c.Value
			}
		case discordgo.TextInput:
			if c.CustomID == customID {
				return c.Value
			}
		}
	}
	return ""
}
