package slackchat_test

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
	"github.com/gatehouse/gatehouse/adapters/slackchat"
	"github.com/gatehouse/gatehouse/adapters/slackchat/slacktest"
	"github.com/gatehouse/gatehouse/gateway/chat"
	"github.com/gatehouse/gatehouse/internal/testing/stacktest"
)

var handbook = bytes.Repeat([]byte("%PDF-1.7 handbook "), 40)

// noReceive fails when anything reached Receive.
func noReceive(t *testing.T, rec *recorder) {
	t.Helper()
	select {
	case in := <-rec.in:
		t.Fatalf("handed to Receive (the agent): %+v", in)
	default:
	}
}

// checkLibraryCommand checks that "!library shared" with a file reached
// Command with the file, that the answer was posted in the message's
// thread, and that FetchFile gets the file's bytes.
func checkLibraryCommand(t *testing.T, rec *recorder, a *slackchat.Adapter, f *slacktest.SlackFake) {
	t.Helper()
	rec.setCommand(func(name string, in gh.Inbound) (chat.CommandReply, error) {
		return chat.CommandReply{Text: "Added handbook.pdf to <this chat>'s library."}, nil
	})
	upd := f.SayWithFile("room", "bob", "!library shared", "handbook.pdf", "application/pdf", handbook)
	c := rec.nextCommand(t)
	if c.name != chat.CommandLibrary || c.in.Text != "shared" || c.in.UpdateID != upd || c.in.UserID != f.UserID("bob") ||
		c.in.ChatID != f.ChatID("room") || c.in.IsBot {
		t.Fatalf("command: %q %+v", c.name, c.in)
	}
	if len(c.in.Files) != 1 {
		t.Fatalf("files: %+v", c.in.Files)
	}
	file := c.in.Files[0]
	if file.Name != "handbook.pdf" || file.MediaType != "application/pdf" || file.Size != int64(len(handbook)) ||
		!strings.HasPrefix(file.Ref, f.URL+"/files-pri/") {
		t.Fatalf("file: %+v", file)
	}
	adaptertest.Eventually(t, "the event acknowledged", func() bool { return f.Acked(upd) })
	posts := f.Posts("room")
	if len(posts) != 1 || posts[0].Text != "Added handbook.pdf to &lt;this chat&gt;'s library." || posts[0].ThreadTS != c.in.MessageID {
		t.Fatalf("the answer must be posted in the message's thread: %+v (message %s)", posts, c.in.MessageID)
	}
	got, err := a.FetchFile(context.Background(), file, 1<<20)
	if err != nil || !bytes.Equal(got, handbook) {
		t.Fatalf("FetchFile: %d bytes, %v", len(got), err)
	}
	noReceive(t, rec)
	noErrors(t, f)
}

func TestLibraryCommandWithAFileOverSocketMode(t *testing.T) {
	rec := newRecorder()
	a, f := socketPair(t, rec)
	checkLibraryCommand(t, rec, a, f)
}

func TestLibraryCommandWithAFileOverTheEventsAPI(t *testing.T) {
	rec := newRecorder()
	a, f := slacktest.SlackEventsPair(t, rec)
	checkLibraryCommand(t, rec, a, f)
}

// The command without a file reaches Command too (the gateway answers
// "attach a file"), answered in a DM without a thread; a redelivery's
// answer and a refused bot's are not said, a refused person's is.
func TestLibraryCommandAnswers(t *testing.T) {
	rec := newRecorder()
	_, f := socketPair(t, rec)
	for _, tc := range []struct {
		name  string
		bot   bool
		reply chat.CommandReply
		want  string
	}{
		{"no file", false, chat.CommandReply{Text: "Attach a file to add it."}, "Attach a file to add it."},
		{"refused person", false, chat.CommandReply{Text: "You are not allowed to use Gatehouse here.", Refused: true}, "You are not allowed to use Gatehouse here."},
		{"refused bot", true, chat.CommandReply{Text: "Bots may not.", Refused: true}, ""},
		{"duplicate", false, chat.CommandReply{Text: "Added.", Duplicate: true}, ""},
	} {
		rec.setCommand(func(string, gh.Inbound) (chat.CommandReply, error) { return tc.reply, nil })
		before := len(f.Posts("dm-bob"))
		upd := f.SayInThread("dm-bob", "", "bob", "  !LIBRARY  ", tc.bot)
		c := rec.nextCommand(t)
		if c.name != chat.CommandLibrary || c.in.Text != "" || len(c.in.Files) != 0 || c.in.IsBot != tc.bot {
			t.Fatalf("%s: command %q %+v", tc.name, c.name, c.in)
		}
		adaptertest.Eventually(t, "the event acknowledged", func() bool { return f.Acked(upd) })
		posts := f.Posts("dm-bob")[before:]
		switch {
		case tc.want == "" && len(posts) != 0:
			t.Fatalf("%s: said %+v", tc.name, posts)
		case tc.want != "" && (len(posts) != 1 || posts[0].Text != tc.want || posts[0].ThreadTS != ""):
			t.Fatalf("%s: posts %+v, want %q", tc.name, posts, tc.want)
		}
	}
	noReceive(t, rec)
	noErrors(t, f)
}

// An answer that starts like the command, echoed back by Slack, is not
// a command: nothing loops.
func TestLibraryCommandAnswerDoesNotLoop(t *testing.T) {
	rec := newRecorder()
	_, f := socketPair(t, rec, slacktest.SlackEchoBotMessages())
	rec.setCommand(func(string, gh.Inbound) (chat.CommandReply, error) {
		return chat.CommandReply{Text: "!library needs a file: attach one."}, nil
	})
	f.SayInThread("room", "", "bob", "!library", false)
	rec.nextCommand(t)
	echo := rec.next(t)
	if !echo.IsBot || echo.UserID != f.BotUserID || !strings.HasSuffix(echo.Text, "!library needs a file: attach one.") {
		t.Fatalf("echo: %+v", echo)
	}
	select {
	case c := <-rec.commands:
		t.Fatalf("our answer went to Command: %+v", c)
	case <-time.After(200 * time.Millisecond):
	}
	noErrors(t, f)
}

// A Command that fails leaves the event unacknowledged: Slack resends it
// and the answer is posted once.
func TestLibraryCommandErrorIsRetriedBySlack(t *testing.T) {
	rec := newRecorder()
	_, f := socketPair(t, rec, slacktest.SlackAckTimeout(300*time.Millisecond))
	var mu sync.Mutex
	calls := 0
	rec.setCommand(func(string, gh.Inbound) (chat.CommandReply, error) {
		mu.Lock()
		defer mu.Unlock()
		calls++
		if calls == 1 {
			return chat.CommandReply{}, errors.New("database is down")
		}
		return chat.CommandReply{Text: "Added."}, nil
	})
	upd := f.SayWithFile("room", "bob", "/library", "a.txt", "text/plain", []byte("a"))
	first, second := rec.nextCommand(t), rec.nextCommand(t)
	if first.in.UpdateID != upd || second.in.UpdateID != upd || len(second.in.Files) != 1 {
		t.Fatalf("commands: %+v %+v", first.in, second.in)
	}
	adaptertest.Eventually(t, "the resent event acknowledged", func() bool { return f.Acked(upd) })
	if posts := f.Posts("room"); len(posts) != 1 || posts[0].Text != "Added." {
		t.Fatalf("posts: %+v", posts)
	}
	noErrors(t, f)
}

// A message with a file and words that are not the command stays a
// message: Receive gets the words, never the file. A file alone is
// dropped as unsupported, as before.
func TestMessageWithAFileStaysAMessage(t *testing.T) {
	rec := newRecorder()
	_, f := socketPair(t, rec)
	upd := f.SayWithFile("room", "bob", "what does this say? !library", "a.pdf", "application/pdf", handbook)
	in := rec.next(t)
	if in.UpdateID != upd || in.Text != "what does this say? !library" || in.Unsupported != "" || len(in.Files) != 0 {
		t.Fatalf("inbound: %+v", in)
	}
	f.SayWithFile("room", "bob", "", "a.pdf", "application/pdf", handbook)
	if in := rec.next(t); in.Unsupported != "file_share" || in.Text != "" || len(in.Files) != 0 {
		t.Fatalf("a file without words: %+v", in)
	}
	select {
	case c := <-rec.commands:
		t.Fatalf("a message went to Command: %+v", c)
	default:
	}
	if posts := f.Posts("room"); len(posts) != 0 {
		t.Fatalf("said %+v", posts)
	}
	noErrors(t, f)
}

func TestFetchFileRefusesAFileOverMax(t *testing.T) {
	rec := newRecorder()
	a, f := socketPair(t, rec)
	f.SayWithFile("room", "bob", "!library", "handbook.pdf", "application/pdf", handbook)
	file := rec.nextCommand(t).in.Files[0]
	ctx := context.Background()
	max := int64(len(handbook) - 1)
	if _, err := a.FetchFile(ctx, file, max); !gh.IsCode(err, gh.CodePayloadTooLarge) {
		t.Fatalf("by Slack's size: %v", err)
	}
	// Slack's size may be missing or wrong: the download is refused too.
	file.Size = 0
	if _, err := a.FetchFile(ctx, file, max); !gh.IsCode(err, gh.CodePayloadTooLarge) {
		t.Fatalf("by the download: %v", err)
	}
	if got, err := a.FetchFile(ctx, file, int64(len(handbook))); err != nil || !bytes.Equal(got, handbook) {
		t.Fatalf("exactly max: %d bytes, %v", len(got), err)
	}
	noErrors(t, f)
}

// slackHost is a stand-in for Slack's API host that serves a file body
// without a Content-Length, a redirect to elsewhere, and statuses.
func slackHost(t *testing.T, elsewhere string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/files-pri/T1-F1/download/stream.bin":
			for range 100 {
				_, _ = w.Write(bytes.Repeat([]byte("x"), 1000))
				w.(http.Flusher).Flush()
			}
		case "/files-pri/T1-F2/download/moved.bin":
			http.Redirect(w, r, elsewhere+"/stolen", http.StatusFound)
		case "/busy":
			http.Error(w, "busy", http.StatusServiceUnavailable)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// attacker records every request that reaches it.
type attacker struct {
	*httptest.Server
	mu   sync.Mutex
	auth []string
}

func newAttacker(t *testing.T) *attacker {
	at := &attacker{}
	at.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		at.mu.Lock()
		at.auth = append(at.auth, r.Header.Get("Authorization"))
		at.mu.Unlock()
		_, _ = w.Write([]byte("secret from elsewhere"))
	}))
	t.Cleanup(at.Close)
	return at
}

func (at *attacker) requests() []string {
	at.mu.Lock()
	defer at.mu.Unlock()
	return append([]string(nil), at.auth...)
}

// A forged event's file on another host is never fetched, and neither is
// a redirect off Slack's host: the bot token goes to Slack alone.
func TestFetchFileOnlyFromSlacksHosts(t *testing.T) {
	at := newAttacker(t)
	rec := newRecorder()
	a, f := socketPair(t, rec)
	f.SayEvent("room", map[string]any{
		"type": "message", "subtype": "file_share", "user": f.UserID("mallory"), "text": "!library",
		"files": []map[string]any{slacktest.SlackFileJSON("F9", "x.pdf", "application/pdf", 10, at.URL+"/files-pri/T-F9/download/x.pdf")},
	})
	file := rec.nextCommand(t).in.Files[0]
	ctx := context.Background()
	if _, err := a.FetchFile(ctx, file, 1<<20); err == nil || gh.IsCode(err, gh.CodeInternal) {
		t.Fatalf("a file on another host: %v", err)
	}
	for _, ref := range []string{
		"https://files.slack.com/files-pri/T-F9/download/x.pdf", // Slack's, but the adapter talks to the fake
		strings.Replace(f.FileURL("F1", "a.pdf"), "http://", "https://", 1),
		"http://user:pw@" + strings.TrimPrefix(f.URL, "http://") + "/files-pri/x",
		"file:///etc/passwd",
	} {
		if _, err := a.FetchFile(ctx, gh.File{Name: "x", Ref: ref}, 1<<20); err == nil {
			t.Fatalf("fetched %s", ref)
		}
	}

	// The real Slack's adapter fetches from its file hosts only.
	real, err := slackchat.New(slackchat.Config{BotToken: "xoxb-real", SigningSecret: "s"})
	if err != nil {
		t.Fatal(err)
	}
	for _, ref := range []string{at.URL + "/x", "https://files.slack.com.evil.example/x", "http://files.slack.com/x", "https://slack.com/x"} {
		if _, err := real.FetchFile(ctx, gh.File{Name: "x", Ref: ref}, 1<<20); !gh.IsCode(err, gh.CodeInvalid) {
			t.Fatalf("real Slack fetched %s: %v", ref, err)
		}
	}

	// A redirect off the API host is not followed.
	host := slackHost(t, at.URL)
	cfg := f.EventsConfig()
	cfg.APIURL = host.URL
	viaHost, err := slackchat.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := viaHost.FetchFile(ctx, gh.File{Name: "moved.bin", Ref: host.URL + "/files-pri/T1-F2/download/moved.bin"}, 1<<20); err == nil {
		t.Fatal("followed a redirect to another host")
	}
	if reqs := at.requests(); len(reqs) != 0 {
		t.Fatalf("requests reached another host (Authorization %q)", reqs)
	}
	// A body without a Content-Length is cut at max+1 bytes.
	if _, err := viaHost.FetchFile(ctx, gh.File{Name: "stream.bin", Ref: host.URL + "/files-pri/T1-F1/download/stream.bin"}, 5000); !gh.IsCode(err, gh.CodePayloadTooLarge) {
		t.Fatalf("a streamed body over max: %v", err)
	}
	if _, err := viaHost.FetchFile(ctx, gh.File{Name: "b", Ref: host.URL + "/busy"}, 10); !gh.IsCode(err, gh.CodeUnavailable) {
		t.Fatalf("503: %v", err)
	}
	if _, err := viaHost.FetchFile(ctx, gh.File{Name: "n", Ref: host.URL + "/gone"}, 10); err == nil || gh.IsCode(err, gh.CodeUnavailable) {
		t.Fatalf("404: %v", err)
	}
	noErrors(t, f)
}

// The fake's download needs the bot token, as Slack's does.
func TestFakeFileDownloadNeedsTheToken(t *testing.T) {
	f := slacktest.NewSlack(t)
	resp, err := http.Get(f.FileURL("F1", "a.pdf"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || len(f.Errors()) != 1 {
		t.Fatalf("status %d, refusals %q", resp.StatusCode, f.Errors())
	}
}

// The whole stack: "!library" with a file adds it to the chat's library,
// and the answer is posted in the message's thread.
func TestLibraryCommandThroughTheGateway(t *testing.T) {
	e := stacktest.NewEnv(t, slacktest.SlackFactory, stacktest.EnvOptions{Knowledge: true, Allowed: []string{"bob"}})
	f := e.Fake.(*slacktest.SlackFake)
	text := bytes.Repeat([]byte("The office opens at nine and closes at five.\n"), 20)
	f.SayWithFile("room", "bob", "!library", "hours.txt", "text/plain", text)
	var posts []slacktest.SlackPost
	adaptertest.Eventually(t, "the answer", func() bool { posts = f.Posts("room"); return len(posts) == 1 })
	if !strings.Contains(posts[0].Text, "Added") || !strings.Contains(posts[0].Text, "hours.txt") || posts[0].ThreadTS == "" {
		t.Fatalf("answer %+v", posts[0])
	}
	cols, err := e.Knowledge.Collections(e.Ctx)
	if err != nil || len(cols) != 1 {
		t.Fatalf("collections %+v %v", cols, err)
	}
	// Without a file, the gateway asks for one.
	f.SayInThread("room", "", "bob", "!library", false)
	adaptertest.Eventually(t, "the second answer", func() bool { posts = f.Posts("room"); return len(posts) == 2 })
	if !strings.Contains(posts[1].Text, "!library") || strings.Contains(posts[1].Text, "Added") {
		t.Fatalf("answer without a file: %+v", posts[1])
	}
	noErrors(t, f)
}
