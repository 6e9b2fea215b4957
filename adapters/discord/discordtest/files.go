package discordtest

import (
	"net/url"
	"time"

	"github.com/gatehouse/gatehouse/adapters/discord/discordtest/cdn"
	"github.com/gatehouse/gatehouse/adapters/discord/discordtest/wire"
)

// SayWithFile makes user post text in chat with the attachment name
// (contentType, data; none when name is "") as a reply to replyTo (none
// when ""), and dispatches MESSAGE_CREATE; the fake serves the
// attachment, without a token, at its url on the fake's own host.
func (f *DiscordFake) SayWithFile(chat, user, text, replyTo, name, contentType string, data []byte) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	ch := f.channel(chat)
	m := &discordMsg{id: f.snowflake(), channel: ch, author: f.user(user), content: text, created: time.Now()}
	if replyTo != "" {
		m.kind, m.refID = 19, replyTo
	}
	if name != "" {
		dir := cdn.Prefix + ch.id + "/" + m.id + "/"
		f.cdn.Put(dir+name, data)
		u := f.srv.URL + dir + url.PathEscape(name) + "?ex=6a000000&is=69f00000&hm=fakesignature&" // signed, as Discord's
		m.files = []wire.File{{ID: f.snowflake(), Name: name, ContentType: contentType, Size: len(data), URL: u}}
	}
	ch.msgs = append(ch.msgs, m)
	f.emitMessage("MESSAGE_CREATE", m)
	return m.id
}
