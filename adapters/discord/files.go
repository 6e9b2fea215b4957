package discord

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/bwmarrin/discordgo"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/adapters/internal/filefetch"
	"github.com/gatehouse/gatehouse/gateway/chat"
)

// Files and the library command. A message whose text is the library
// command ("!library" or "/library", chat.LibraryCommand) is not a
// message for the agent: it goes, with its attachments (or, when it
// carries none, those of the message it replies to), to
// Sink.Command(chat.CommandLibrary), and the answer is sent as a reply
// to it. Attachments are fetched only when the gateway asks (FetchFile),
// without the bot token, and only from Discord's CDN.

// filesOf turns a message's attachments into gh.File.
func filesOf(atts []*discordgo.MessageAttachment) []gh.File {
	var out []gh.File
	for _, at := range atts {
		if at == nil || at.URL == "" {
			continue
		}
		out = append(out, gh.File{Name: at.Filename, MediaType: at.ContentType, Size: int64(max(at.Size, 0)), Ref: at.URL})
	}
	return out
}

// handOn is what handing in to the sink means: the library command goes
// to Command, its answer sent as a reply; anything else goes to Receive
// as text alone (the agent is never handed a file), and so do our own
// messages.
func (c *connection) handOn(m *discordgo.Message, in gh.Inbound) func() error {
	args, ok := chat.LibraryCommand(in.Text)
	if self, _ := c.self.Load().(string); !ok || in.Unsupported != "" || (self != "" && in.UserID == self) {
		in.Files = nil
		return func() error { _, err := c.sink.Receive(c.grace, in); return err }
	}
	in.Text = args
	if len(in.Files) == 0 && m.ReferencedMessage != nil {
		in.Files = filesOf(m.ReferencedMessage.Attachments)
	}
	return func() error {
		reply, err := c.sink.Command(c.grace, chat.CommandLibrary, in)
		if err == nil {
			c.a.sayCommandReply(c.grace, in, reply)
		}
		return err
	}
}

// sayCommandReply answers a message-borne command with a reply to it:
// nothing for a redelivery or a refused bot; a refused person hears why.
func (a *Adapter) sayCommandReply(ctx context.Context, in gh.Inbound, reply chat.CommandReply) {
	if reply.Duplicate || (reply.Refused && in.IsBot) || reply.Text == "" {
		return
	}
	m := chat.Outgoing{
		Address: gh.Address{Platform: gh.PlatformDiscord, ChatID: in.ChatID, ChatType: in.ChatType, ReplyTo: in.MessageID},
		Text:    truncateRunes(notCommand(FormatLiteral(reply.Text)), maxText),
	}
	if len(reply.Buttons) > 0 && !reply.Refused && len(reply.Buttons) <= buttonsPerRow*maxRows {
		m.Card = &chat.Card{Text: m.Text, Buttons: reply.Buttons}
	}
	if _, err := a.Send(ctx, m); err != nil {
		a.log.Warn("discord library command's answer not sent", "message_id", in.MessageID, "channel_id", in.ChatID, "err", err)
	}
}

// notCommand keeps an answer from reading as the library command when
// it comes back to us (a zero-width space before it), so that no answer
// can ever start a loop.
func notCommand(text string) string {
	if _, ok := chat.LibraryCommand(text); ok {
		return "\u200b" + text
	}
	return text
}

// cdnHosts are where Discord serves attachments from.
var cdnHosts = map[string]bool{"cdn.discordapp.com": true, "media.discordapp.net": true}

// fileHost reports whether u may be fetched: https on Discord's CDN, or
// the configured API URL's scheme and host when it is not Discord's (a
// fake on loopback).
func (a *Adapter) fileHost(u *url.URL) bool {
	if u == nil || u.User != nil || u.Opaque != "" {
		return false
	}
	if a.cfg.APIURL == DefaultAPIURL {
		return u.Scheme == "https" && cdnHosts[strings.ToLower(u.Hostname())] && (u.Port() == "" || u.Port() == "443")
	}
	base, err := url.Parse(a.cfg.APIURL)
	return err == nil && u.Scheme == base.Scheme && strings.EqualFold(u.Host, base.Host)
}

// FetchFile downloads an attachment (f.Ref, its CDN URL), refusing one
// over max bytes with CodePayloadTooLarge after reading at most max+1 of
// them. A Ref or a redirect off Discord's CDN is refused without a
// request; no token is sent. It implements chat.FileFetcher.
func (a *Adapter) FetchFile(ctx context.Context, f gh.File, max int64) ([]byte, error) {
	if f.Size > max {
		return nil, gh.Errorf(gh.CodePayloadTooLarge, "discord attachment %q is %d bytes, over %d", f.Name, f.Size, max)
	}
	body, _, err := filefetch.Fetch(ctx, filefetch.Request{Client: a.client, URL: f.Ref, Allowed: a.fileHost,
		What: fmt.Sprintf("discord attachment %q", f.Name), Max: max})
	return body, err
}

var _ chat.FileFetcher = (*Adapter)(nil)
