package slackchat_test

import (
	"testing"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/adapters/adaptertest"
	"github.com/gatehouse/gatehouse/gateway/chat"
)

// "!model o3" and "!think high" typed as messages (Slack's clients keep
// a leading slash for slash commands) go to Command with what followed,
// never to Receive, and without the message's files; the answer is
// posted in the message's thread.
func TestModelAndThinkTypedAsMessages(t *testing.T) {
	rec := newRecorder()
	_, f := socketPair(t, rec)
	rec.setCommand(func(name string, in gh.Inbound) (chat.CommandReply, error) {
		return chat.CommandReply{Text: "set " + name + " to " + in.Text}, nil
	})
	for _, tc := range []struct{ text, name, args string }{
		{"!model o3", chat.CommandModel, "o3"},
		{"  !THINK   high ", chat.CommandThink, "high"},
		{"!model", chat.CommandModel, ""},
	} {
		before := len(f.Posts("room"))
		upd := f.SayInThread("room", "", "bob", tc.text, false)
		c := rec.nextCommand(t)
		if c.name != tc.name || c.in.Text != tc.args || len(c.in.Files) != 0 {
			t.Fatalf("%q: command %q %+v", tc.text, c.name, c.in)
		}
		adaptertest.Eventually(t, "the event acknowledged", func() bool { return f.Acked(upd) })
		adaptertest.Eventually(t, "the answer to "+tc.text, func() bool { return len(f.Posts("room")) > before })
		if p := f.Posts("room")[before]; p.Text != "set "+tc.name+" to "+tc.args {
			t.Fatalf("%q answered %+v", tc.text, p)
		}
	}
	noReceive(t, rec)
	noErrors(t, f)
}
