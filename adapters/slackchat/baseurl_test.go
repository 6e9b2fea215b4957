package slackchat_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	slackgotest "github.com/slack-go/slack/slacktest"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/adapters/adaptertest"
	"github.com/gatehouse/gatehouse/adapters/slackchat"
	"github.com/gatehouse/gatehouse/adapters/slackchat/slacktest"
	"github.com/gatehouse/gatehouse/gateway/chat"
)

// The SLACK_API_URL table (docs/configuration.md): what each form means
// to slack-go, which joins the method name straight onto it. HOST is a
// loopback server of the test's: those rows are also driven, the
// adapter's auth.test arriving at the path the table says.
var apiURLTable = []struct{ raw, want string }{
	// Slack's own host in any form: the Web API is under /api/ only.
	{"", "https://slack.com/api/"},
	{"slack.com", "https://slack.com/api/"},
	{"slack.com/api/", "https://slack.com/api/"},
	{"https://slack.com", "https://slack.com/api/"},
	{"https://slack.com/", "https://slack.com/api/"},
	{"https://slack.com/api", "https://slack.com/api/"},
	{"https://slack.com/api/", "https://slack.com/api/"},
	{"http://slack.com/api/", "https://slack.com/api/"},
	{"https://SLACK.com:443/", "https://slack.com/api/"},
	{"https://acme.enterprise.slack.com/", "https://acme.enterprise.slack.com/api/"},
	{"https://slack-gov.com", "https://slack-gov.com/api/"},
	{"https://slack-gov.com/", "https://slack-gov.com/api/"},
	// Any other host: "/api/" and "/" as given, as slack-go takes
	// APIURL; no path or "/api" is Slack's layout.
	{"http://HOST/", "http://HOST/"},
	{"http://HOST/api/", "http://HOST/api/"},
	{"http://HOST", "http://HOST/api/"},
	{"http://HOST/api", "http://HOST/api/"},
	{"http://HOST//", "http://HOST/"},
	{"http://HOST/api//", "http://HOST/api/"},
	{"  http://HOST/api  ", "http://HOST/api/"},
	{"https://slack.example.org/", "https://slack.example.org/"},
	{"https://slack.com:8443/", "https://slack.com:8443/"},
	{"http://[::1]:8080/", "http://[::1]:8080/"},
}

func TestAPIURLTable(t *testing.T) {
	var mu sync.Mutex
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.URL.Path)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"ok":true,"user_id":"U0BOT","team_id":"T0TEAM"}`))
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	for _, row := range apiURLTable {
		raw, want := strings.ReplaceAll(row.raw, "HOST", host), strings.ReplaceAll(row.want, "HOST", host)
		got, err := slackchat.APIEndpoint(raw)
		if err != nil || got != want {
			t.Errorf("%q: %q, %v; want %s", raw, got, err, want)
			continue
		}
		if !strings.Contains(row.raw, "HOST") {
			continue
		}
		a, err := slackchat.New(slackchat.Config{BotToken: "xoxb-1", SigningSecret: "s", APIURL: raw})
		if err != nil {
			t.Fatalf("%q: %v", raw, err)
		}
		mu.Lock()
		paths = nil
		mu.Unlock()
		if err := a.Probe(context.Background()); err != nil {
			t.Errorf("%q: probe: %v", raw, err)
		}
		mu.Lock()
		wantPath := strings.TrimPrefix(want, "http://"+host) + "auth.test"
		if len(paths) != 1 || paths[0] != wantPath {
			t.Errorf("%q: auth.test went to %q, want %s", raw, paths, wantPath)
		}
		mu.Unlock()
	}
}

func TestAPIURLRefusals(t *testing.T) {
	for _, raw := range []string{
		"127.0.0.1:8080/api/",        // not Slack's host: a scheme is needed
		"example.org",                // the same
		"ws://slack.com",             // not http(s)
		"https:///api/",              // no host
		"https://slack.com/api/api/", // the doubled form this refusal exists for
		"https://slack.com/api/chat.postMessage",
		"http://127.0.0.1:8080/api/chat.postMessage",
		"http://127.0.0.1:8080/slack/",
		"https://slack.com/apis",
		"https://slack.com/api/?token=xoxb",
		"https://slack.com/api/#x",
		"https://u:p@slack.com/api/",
	} {
		_, err := slackchat.APIEndpoint(raw)
		if err == nil {
			t.Errorf("%q was accepted", raw)
			continue
		}
		if !strings.Contains(err.Error(), "SLACK_API_URL") || !strings.Contains(err.Error(), `"https://slack.com/api/"`) {
			t.Errorf("%q: the refusal %q does not name the setting and the form expected", raw, err)
		}
		if _, err := slackchat.New(slackchat.Config{BotToken: "xoxb-1", SigningSecret: "s", APIURL: raw}); err == nil {
			t.Errorf("New took %q", raw)
		}
	}
}

// SLACK_API_URL written as slack-go documents it ("https://slack.com/api/")
// used to become ".../api/api/", and the adapter looped on
// unknown_method. Every form that means Slack's layout must reach the
// fake's Web API (under /api/, like Slack's): the socket opens, events
// arrive, messages are sent, and the fake refuses nothing.
func TestDocumentedAPIURLFormsReachTheWebAPI(t *testing.T) {
	for _, suffix := range []string{"/api/", "/api", ""} {
		t.Run(strconv.Quote(suffix), func(t *testing.T) {
			rec := newRecorder()
			f := slacktest.NewSlack(t)
			cfg := f.SocketConfig()
			cfg.APIURL = f.URL + suffix
			a, err := slackchat.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			adaptertest.Connect(t, a, rec, 10*time.Second)
			upd := f.Say("room", "alice", "over the documented URL", false)
			if in := rec.next(t); in.UpdateID != upd {
				t.Fatalf("inbound %+v, want update %s", in, upd)
			}
			if _, err := a.Send(context.Background(), chat.Outgoing{Address: gh.Address{ChatID: f.ChatID("room")}, Text: "answer"}); err != nil {
				t.Fatalf("send: %v", err)
			}
			if msgs := f.Messages("room"); len(msgs) == 0 || msgs[len(msgs)-1].Text != "answer" {
				t.Fatalf("the bot's messages: %+v", msgs)
			}
			noErrors(t, f)
		})
	}
	// "/" on a host not Slack's is the root, as given: the fake serves
	// nothing there, and the probe says so rather than finding /api/.
	f := slacktest.NewSlack(t)
	cfg := f.SocketConfig()
	cfg.APIURL = f.URL + "/"
	a, err := slackchat.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Probe(context.Background()); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("probe of the fake's root: %v, want a 404", err)
	}
}

// slack-go's own test server serves the Web API at its root and says so
// in GetAPIURL ("http://127.0.0.1:PORT/"): SLACK_API_URL set to it works
// unchanged — auth.test answers, and a message sent is one the server
// saw (it relays every chat.postMessage to its websocket).
func TestSlackGoTestServerAtItsAPIURL(t *testing.T) {
	srv := slackgotest.NewTestServer()
	srv.Start()
	defer srv.Stop()
	a, err := slackchat.New(slackchat.Config{BotToken: "xoxb-slacktest", SigningSecret: "secret", APIURL: srv.GetAPIURL()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.Probe(ctx); err != nil {
		t.Fatalf("probe (auth.test) at %s: %v", srv.GetAPIURL(), err)
	}
	// The server hands each posted message to its websocket's client;
	// listen before sending.
	ws, _, err := websocket.DefaultDialer.DialContext(ctx, srv.GetWSURL(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	ts, err := a.Send(ctx, chat.Outgoing{Address: gh.Address{ChatID: "C0TEST"}, Text: "hello from gatehouse"})
	if err != nil || ts == "" {
		t.Fatalf("send: %q, %v", ts, err)
	}
	ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	var seen struct {
		Type, Channel, Text string
	}
	if err := ws.ReadJSON(&seen); err != nil {
		t.Fatalf("the server relayed no message: %v", err)
	}
	if seen.Type != "message" || seen.Channel != "C0TEST" || seen.Text != "hello from gatehouse" {
		t.Fatalf("the server saw %+v", seen)
	}
}
