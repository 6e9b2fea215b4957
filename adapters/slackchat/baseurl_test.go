package slackchat_test

import (
	"context"
	"testing"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/adapters/adaptertest"
	"github.com/gatehouse/gatehouse/adapters/slackchat"
	"github.com/gatehouse/gatehouse/adapters/slackchat/slacktest"
	"github.com/gatehouse/gatehouse/gateway/chat"
)

// SLACK_API_URL written as slack-go documents it ("https://slack.com/api/")
// used to become ".../api/api/", and the adapter looped on
// unknown_method. Every documented form must reach the Web API: the
// socket opens, events arrive, messages are sent, and the fake refuses
// nothing.
func TestDocumentedAPIURLFormsReachTheWebAPI(t *testing.T) {
	for _, suffix := range []string{"/api/", "/api", "/"} {
		t.Run(suffix, func(t *testing.T) {
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
}
