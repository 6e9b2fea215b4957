package discord_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/adapters/adaptertest"
	"github.com/gatehouse/gatehouse/adapters/discord"
	"github.com/gatehouse/gatehouse/adapters/discord/discordtest"
	"github.com/gatehouse/gatehouse/gateway/chat"
	"github.com/gatehouse/gatehouse/internal/testing/stacktest"
)

var notes = bytes.Repeat([]byte("meeting notes\n"), 50)

func (s *recSink) setCommand(fn func(ctx context.Context, name string, in gh.Inbound) (chat.CommandReply, error)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.command = fn
}

func (s *recSink) received() []gh.Inbound {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]gh.Inbound(nil), s.inbound...)
}

// commandOf waits for the Command call of the message id.
func commandOf(t *testing.T, e *env, id string) sinkCommand {
	t.Helper()
	var got sinkCommand
	adaptertest.Eventually(t, "the command", func() bool {
		for _, c := range e.sink.commanded() {
			if c.in.UpdateID == id {
				got = c
				return true
			}
		}
		return false
	})
	return got
}

// botReplies are the bot's messages in chat that reply to id.
func botReplies(e *env, chat, id string) []string {
	var out []string
	for _, m := range e.f.Messages(chat) {
		if v, ok := e.f.Message(chat, m.ID); ok && v.ReplyTo == id && v.Type == 19 {
			out = append(out, v.Text)
		}
	}
	return out
}

func TestLibraryCommandWithAnAttachment(t *testing.T) {
	t.Parallel()
	e := start(t, discord.Config{})
	e.sink.setCommand(func(_ context.Context, name string, in gh.Inbound) (chat.CommandReply, error) {
		return chat.CommandReply{Text: "Added *notes.txt* to @everyone's library."}, nil
	})
	id := e.f.SayWithFile("room", "bob", "!Library  shared ", "", "notes.txt", "text/plain; charset=utf-8", notes)
	c := commandOf(t, e, id)
	if c.name != chat.CommandLibrary || c.in.Text != "shared" || c.in.UserID != e.f.UserID("bob") || c.in.MessageID != id ||
		c.in.ChatID != e.f.ChannelID("room") || len(c.in.Files) != 1 {
		t.Fatalf("command %q %+v", c.name, c.in)
	}
	file := c.in.Files[0]
	if file.Name != "notes.txt" || file.MediaType != "text/plain; charset=utf-8" || file.Size != int64(len(notes)) ||
		!strings.HasPrefix(file.Ref, e.f.URL()+"/attachments/") {
		t.Fatalf("file %+v", file)
	}
	want := discord.FormatLiteral("Added *notes.txt* to @everyone's library.")
	adaptertest.Eventually(t, "the answer", func() bool { return len(botReplies(e, "room", id)) == 1 })
	if got := botReplies(e, "room", id); got[0] != want || !strings.Contains(got[0], `\*notes.txt\*`) {
		t.Fatalf("answer %q, want %q", got[0], want)
	}
	got, err := e.a.FetchFile(context.Background(), file, 1<<20)
	if err != nil || !bytes.Equal(got, notes) {
		t.Fatalf("FetchFile: %d bytes, %v", len(got), err)
	}
	for _, in := range e.sink.received() {
		if !in.IsBot || in.UserID != e.f.BotID() {
			t.Fatalf("handed to Receive: %+v", in)
		}
	}
	noErrors(t, e.f)
}

// A reply "/library" to a message with an attachment takes that
// message's attachment; the message itself stayed a message, without it.
func TestLibraryCommandAsAReply(t *testing.T) {
	t.Parallel()
	e := start(t, discord.Config{})
	orig := e.f.SayWithFile("room", "alice", "the handbook", "", "handbook.pdf", "application/pdf", notes)
	adaptertest.Eventually(t, "the message", func() bool { return len(e.sink.calls(orig)) == 1 })
	if in := e.sink.calls(orig)[0]; in.Text != "the handbook" || len(in.Files) != 0 || in.Unsupported != "" {
		t.Fatalf("the message with the file: %+v", in)
	}
	reply := e.f.SayWithFile("room", "bob", "/library", orig, "", "", nil)
	c := commandOf(t, e, reply)
	if len(c.in.Files) != 1 || c.in.Files[0].Name != "handbook.pdf" || c.in.Text != "" {
		t.Fatalf("command %+v", c.in)
	}
	if got, err := e.a.FetchFile(context.Background(), c.in.Files[0], 1<<20); err != nil || !bytes.Equal(got, notes) {
		t.Fatalf("FetchFile: %d bytes, %v", len(got), err)
	}
	// A reply to a message without files has none.
	plain := e.f.Say("room", "alice", "no file here", false)
	c = commandOf(t, e, e.f.SayWithFile("room", "bob", "!library", plain, "", "", nil))
	if len(c.in.Files) != 0 {
		t.Fatalf("files of a message without any: %+v", c.in.Files)
	}
	// The answers ("/library noted by the test.") come back as our own
	// messages: they are not commands, so nothing loops.
	adaptertest.Eventually(t, "the answers, back from Discord", func() bool {
		answers := e.f.Messages("room")
		return len(answers) == 2 && len(e.sink.calls(answers[0].ID)) == 1 && len(e.sink.calls(answers[1].ID)) == 1
	})
	if n, answers := len(e.sink.commanded()), e.f.Messages("room"); n != 2 || len(answers) != 2 {
		t.Fatalf("%d commands, answers %+v", n, answers)
	}
	noErrors(t, e.f)
}

func TestLibraryCommandAnswersOnlyWhenDue(t *testing.T) {
	t.Parallel()
	e := start(t, discord.Config{})
	e.sink.setCommand(func(_ context.Context, _ string, in gh.Inbound) (chat.CommandReply, error) {
		switch {
		case in.IsBot:
			return chat.CommandReply{Text: "Bots may not.", Refused: true}, nil
		case in.UserID == e.f.UserID("mallory"):
			return chat.CommandReply{Text: "You are not allowed to use Gatehouse here.", Refused: true}, nil
		}
		return chat.CommandReply{Text: "Added.", Duplicate: true}, nil
	})
	bot := e.f.Say("room", "otherbot", "!library", true)
	dup := e.f.Say("room", "bob", "!library", false)
	refused := e.f.Say("room", "mallory", "!library", false)
	adaptertest.Eventually(t, "the refusal", func() bool { return len(botReplies(e, "room", refused)) == 1 })
	if got := botReplies(e, "room", refused); got[0] != discord.FormatLiteral("You are not allowed to use Gatehouse here.") {
		t.Fatalf("refusal %q", got[0])
	}
	// Messages are handled in order: the bot's and the duplicate's were
	// done before the refusal was answered.
	if n := len(e.sink.commanded()); n != 3 || len(e.f.Messages("room")) != 1 || len(botReplies(e, "room", bot)) != 0 || len(botReplies(e, "room", dup)) != 0 {
		t.Fatalf("%d commands, bot messages %+v", n, e.f.Messages("room"))
	}
	noErrors(t, e.f)
}

// Discord does not redeliver: a failing Command is retried like Receive,
// and answered once.
func TestLibraryCommandErrorIsRetried(t *testing.T) {
	t.Parallel()
	e := start(t, discord.Config{ReceiveAttempts: 3, ReceiveBackoff: 10 * time.Millisecond})
	var mu sync.Mutex
	calls := 0
	e.sink.setCommand(func(context.Context, string, gh.Inbound) (chat.CommandReply, error) {
		mu.Lock()
		defer mu.Unlock()
		if calls++; calls == 1 {
			return chat.CommandReply{}, errors.New("database is down")
		}
		return chat.CommandReply{Text: "Added."}, nil
	})
	id := e.f.SayWithFile("room", "bob", "!library", "", "a.txt", "text/plain", []byte("a"))
	adaptertest.Eventually(t, "the answer", func() bool { return len(botReplies(e, "room", id)) == 1 })
	if n := len(e.sink.commanded()); n != 2 {
		t.Fatalf("%d Command calls, want 2", n)
	}
	noErrors(t, e.f)
}

// An attachment with other words is a message (Receive, no files); one
// without words is dropped as unsupported, as before.
func TestMessageWithAnAttachmentStaysAMessage(t *testing.T) {
	t.Parallel()
	e := start(t, discord.Config{})
	id := e.f.SayWithFile("room", "bob", "summarise this please", "", "a.pdf", "application/pdf", notes)
	bare := e.f.SayWithFile("room", "bob", "", "", "a.pdf", "application/pdf", notes)
	adaptertest.Eventually(t, "both", func() bool { return len(e.sink.calls(id)) == 1 && len(e.sink.calls(bare)) == 1 })
	if in := e.sink.calls(id)[0]; in.Text != "summarise this please" || len(in.Files) != 0 || in.Unsupported != "" {
		t.Fatalf("message %+v", in)
	}
	if in := e.sink.calls(bare)[0]; in.Unsupported != "attachment" || len(in.Files) != 0 {
		t.Fatalf("bare attachment %+v", in)
	}
	if c := e.sink.commanded(); len(c) != 0 || len(e.f.Messages("room")) != 0 {
		t.Fatalf("commands %+v, answers %+v", c, e.f.Messages("room"))
	}
	noErrors(t, e.f)
}

func TestFetchFileRefusesOverMaxAndOtherHosts(t *testing.T) {
	t.Parallel()
	e := start(t, discord.Config{})
	id := e.f.SayWithFile("room", "bob", "!library", "", "notes.txt", "text/plain", notes)
	file := commandOf(t, e, id).in.Files[0]
	ctx := context.Background()
	max := int64(len(notes) - 1)
	if _, err := e.a.FetchFile(ctx, file, max); !gh.IsCode(err, gh.CodePayloadTooLarge) {
		t.Fatalf("by Discord's size: %v", err)
	}
	file.Size = 0
	if _, err := e.a.FetchFile(ctx, file, max); !gh.IsCode(err, gh.CodePayloadTooLarge) {
		t.Fatalf("by the download: %v", err)
	}

	var mu sync.Mutex
	var hits []string
	at := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits = append(hits, r.URL.Path+" "+r.Header.Get("Authorization"))
		mu.Unlock()
		_, _ = w.Write([]byte("elsewhere"))
	}))
	t.Cleanup(at.Close)
	for _, ref := range []string{at.URL + "/attachments/1/2/x.txt", "https://cdn.discordapp.com/attachments/1/2/x.txt", "file:///etc/passwd"} {
		if _, err := e.a.FetchFile(ctx, gh.File{Name: "x.txt", Ref: ref}, 1<<20); !gh.IsCode(err, gh.CodeInvalid) {
			t.Fatalf("fetched %s: %v", ref, err)
		}
	}
	real, err := discord.New(discord.Config{Token: "real-token"})
	if err != nil {
		t.Fatal(err)
	}
	for _, ref := range []string{at.URL + "/x", "https://cdn.discordapp.com.evil.example/x", "http://cdn.discordapp.com/x", "https://discord.com/x"} {
		if _, err := real.FetchFile(ctx, gh.File{Name: "x", Ref: ref}, 1<<20); !gh.IsCode(err, gh.CodeInvalid) {
			t.Fatalf("real Discord fetched %s: %v", ref, err)
		}
	}
	// A redirect off the CDN is not followed.
	cdn := httptest.NewServer(http.RedirectHandler(at.URL+"/stolen", http.StatusFound))
	t.Cleanup(cdn.Close)
	viaCDN, err := discord.New(discord.Config{Token: "t", APIURL: cdn.URL})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := viaCDN.FetchFile(ctx, gh.File{Name: "x", Ref: cdn.URL + "/attachments/1/2/x"}, 1<<20); err == nil {
		t.Fatal("followed a redirect to another host")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(hits) != 0 {
		t.Fatalf("requests reached another host: %q", hits)
	}
	noErrors(t, e.f)
}

// The whole stack: "!library" replying to a message with an attachment
// adds it to the chat's library, and the answer replies to the command.
func TestLibraryCommandThroughTheGateway(t *testing.T) {
	t.Parallel()
	e := stacktest.NewEnv(t, discordtest.DiscordFactory, stacktest.EnvOptions{Knowledge: true, Allowed: []string{"bob"}})
	f := e.Fake.(*discordtest.DiscordFake)
	text := bytes.Repeat([]byte("The office opens at nine and closes at five.\n"), 20)
	orig := f.SayWithFile("room", "bob", "opening hours", "", "hours.txt", "text/plain; charset=utf-8", text)
	cmd := f.SayWithFile("room", "bob", "!library", orig, "", "", nil)
	var answer discordtest.DiscordMessage
	adaptertest.Eventually(t, "the answer", func() bool {
		for _, m := range f.Messages("room") {
			if v, ok := f.Message("room", m.ID); ok && v.ReplyTo == cmd {
				answer = v
				return true
			}
		}
		return false
	})
	if !strings.Contains(answer.Text, "Added") || !strings.Contains(answer.Text, "hours.txt") {
		t.Fatalf("answer %+v", answer)
	}
	cols, err := e.Knowledge.Collections(e.Ctx)
	if err != nil || len(cols) != 1 {
		t.Fatalf("collections %+v %v", cols, err)
	}
	noErrors(t, f)
}
