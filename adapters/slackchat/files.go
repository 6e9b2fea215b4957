package slackchat

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/adapters/internal/filefetch"
	"github.com/gatehouse/gatehouse/gateway/chat"
)

// Files and the library command. A message whose text is the library
// command (chat.LibraryCommand: "!library", as Slack's clients keep a
// leading slash for slash commands) is not a message for the agent: it
// goes, with the files it carries, to Sink.Command(chat.CommandLibrary),
// and the answer is posted where the message was (its thread). Slack's
// thread replies do not carry their parent's files, so the command has
// to be the text of the message that shares the file. Nothing is
// downloaded until the gateway asks for it (FetchFile), with the bot
// token, and only from Slack's own hosts.

// slackFile is the part of a message's file object the adapter reads.
type slackFile struct {
	ID                 string `json:"id"`
	Name               string `json:"name"`
	Title              string `json:"title"`
	Mimetype           string `json:"mimetype"`
	Size               int64  `json:"size"`
	Mode               string `json:"mode"`
	URLPrivate         string `json:"url_private"`
	URLPrivateDownload string `json:"url_private_download"`
}

// filesOf turns a message's files into gh.File. A file Slack does not
// let us download (a tombstone of a deleted file, one hidden by the
// workspace's plan) has no URL and is left out.
func filesOf(files []slackFile) []gh.File {
	var out []gh.File
	for _, f := range files {
		ref := firstOf(f.URLPrivateDownload, f.URLPrivate)
		if ref == "" || f.Mode == "tombstone" || f.Mode == "hidden_by_limit" {
			continue
		}
		out = append(out, gh.File{
			Name:      firstOf(f.Name, f.Title, f.ID),
			MediaType: f.Mimetype,
			Size:      max(f.Size, 0),
			Ref:       ref,
		})
	}
	return out
}

// libraryWork bounds the library command's work (the gateway may fetch
// the file while it answers) and posting its answer.
const libraryWork = 2 * time.Minute

// messageCommands are the commands a message's text may be ("!library",
// "!tz Europe/Berlin"), each with how its text is read.
var messageCommands = []struct {
	name string
	read func(text string) (args string, ok bool)
}{
	{chat.CommandLibrary, chat.LibraryCommand},
	{chat.CommandTimeZone, chat.TimeZoneCommand},
}

// messageCommand reports whether in is one of messageCommands and, if
// so, hands it to sink.Command with its files and posts the answer in the
// message's channel or thread. It returns an error only when Command did
// (a retry can help: the event must not be acknowledged). Any other
// message goes to Receive as text alone: the agent is never handed a
// file.
func (a *Adapter) messageCommand(ctx context.Context, sink chat.Sink, in gh.Inbound, self string) (handled bool, err error) {
	if in.Unsupported != "" || (self != "" && in.UserID == self) {
		return false, nil
	}
	for _, c := range messageCommands {
		args, ok := c.read(in.Text)
		if !ok {
			continue
		}
		in.Text = args
		reply, err := sink.Command(ctx, c.name, in)
		if err != nil {
			return true, err
		}
		a.sayCommandReply(ctx, in, reply)
		return true, nil
	}
	return false, nil
}

// receiveMessage hands a message event to the sink: a command typed as
// a message (messageCommands) to Command, anything else, and our own
// messages (self is the bot's user id, "" when unknown), to Receive
// (without its files).
func (a *Adapter) receiveMessage(ctx context.Context, sink chat.Sink, in gh.Inbound, self string) error {
	if handled, err := a.messageCommand(ctx, sink, in, self); handled {
		return err
	}
	in.Files = nil
	_, err := sink.Receive(ctx, in)
	return err
}

// sayCommandReply posts a message-borne command's answer where the
// message was: nothing for a redelivery (answered the first time), and
// nothing for a refused bot (bots do not read, and two bots must not
// talk to each other); a refused person hears why.
func (a *Adapter) sayCommandReply(ctx context.Context, in gh.Inbound, reply chat.CommandReply) {
	switch {
	case reply.Duplicate:
		return
	case reply.Refused && in.IsBot:
		return
	case reply.Text == "":
		a.log.Info("a command typed as a message answered with nothing to say", "event", in.UpdateID)
		return
	}
	m := chat.Outgoing{
		Address: gh.Address{Platform: gh.PlatformSlack, ChatID: in.ChatID, ThreadID: in.ThreadID, ChatType: in.ChatType},
		Text:    truncate(notCommand(FormatLiteral(reply.Text)), a.Limits().MaxText),
	}
	if len(reply.Buttons) > 0 && !reply.Refused {
		m.Card = &chat.Card{Text: m.Text, Buttons: reply.Buttons}
	}
	if _, err := a.Send(ctx, m); err != nil {
		a.log.Warn("a typed command's answer could not be posted", "event", in.UpdateID, "channel", in.ChatID, "err", err)
	}
}

// notCommand keeps an answer from reading as a typed command when Slack
// echoes it back to us (a zero-width space before it), so that no answer
// can ever start a loop, even before the bot knows its user id.
func notCommand(text string) string {
	for _, c := range messageCommands {
		if _, ok := c.read(text); ok {
			return "\u200b" + text
		}
	}
	return text
}

// FetchFile downloads a file a message carried (f.Ref, its
// url_private_download) with the bot token, refusing one over max bytes
// with CodePayloadTooLarge after reading at most max+1 of them. The
// token goes to Slack alone: a Ref on any host but Slack's file hosts
// (the configured API URL's host for a fake) is refused without a
// request, and so is a redirect off them. It implements chat.FileFetcher.
func (a *Adapter) FetchFile(ctx context.Context, f gh.File, max int64) ([]byte, error) {
	if f.Size > max {
		return nil, gh.Errorf(gh.CodePayloadTooLarge, "slack file %q is %d bytes, over %d", f.Name, f.Size, max)
	}
	body, mt, err := filefetch.Fetch(ctx, filefetch.Request{Client: a.cfg.HTTPClient, URL: f.Ref, Allowed: a.fileHost,
		Header: http.Header{"Authorization": {"Bearer " + a.cfg.BotToken}}, What: fmt.Sprintf("slack file %q", f.Name), Max: max})
	if err != nil {
		return nil, err
	}
	if mt == "text/html" && !strings.HasPrefix(f.MediaType, "text/html") {
		// Slack answers a download it does not authorise (a token
		// without files:read) with its sign-in page, status 200.
		return nil, gh.Errorf(gh.CodeUnauthorized, "slack file %q: Slack answered with a web page, not the file (does the bot token have the files:read scope?)", f.Name)
	}
	return body, nil
}

// slackFileHosts are where Slack serves files from.
var slackFileHosts = map[string]bool{"files.slack.com": true, "slack-files.com": true}

// fileHost reports whether u may be fetched with the bot token: https on
// Slack's file hosts when the adapter talks to Slack itself, else the
// configured API URL's scheme and host (a fake on loopback).
func (a *Adapter) fileHost(u *url.URL) bool {
	if u == nil || u.User != nil || u.Opaque != "" {
		return false
	}
	endpoint, err := apiEndpoint(a.cfg.APIURL)
	if err != nil {
		return false
	}
	base, err := url.Parse(endpoint)
	if err != nil {
		return false
	}
	if strings.EqualFold(base.Host, "slack.com") && base.Scheme == "https" {
		return u.Scheme == "https" && slackFileHosts[strings.ToLower(u.Hostname())] && (u.Port() == "" || u.Port() == "443")
	}
	return u.Scheme == base.Scheme && strings.EqualFold(u.Host, base.Host)
}

var _ chat.FileFetcher = (*Adapter)(nil)
