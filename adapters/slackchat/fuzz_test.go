package slackchat

import (
	"strings"
	"testing"
	"time"
)

var eventSeeds = []string{
	`{"type":"event_callback","event_id":"Ev1","event":{"type":"message","channel":"C1","channel_type":"channel","user":"U1","text":"hi","ts":"1.000001"}}`,
	`{"type":"event_callback","event_id":"Ev2","event":{"type":"message","channel":"D1","channel_type":"im","user":"U1","text":"hi","ts":"1.2","thread_ts":"1.1"}}`,
	`{"type":"event_callback","event_id":"Ev3","event":{"type":"message","subtype":"bot_message","bot_id":"B1","channel":"C1","text":"beep","ts":"1.3"}}`,
	`{"type":"event_callback","event_id":"Ev4","event":{"type":"message","subtype":"message_changed","channel":"C1","message":{"user":"U1","ts":"1.1","text":"x"}}}`,
	`{"type":"event_callback","event_id":"Ev5","event":{"type":"message","subtype":"file_share","channel":"G1","user":"U1","ts":"1.4"}}`,
	`{"type":"event_callback","event_id":"Ev6","event":{"type":"app_mention","channel":"C1","user":"U1"}}`,
	`{"type":"event_callback","event_id":"","event":{"type":"message","channel":"C1"}}`,
	`{"type":"event_callback","event_id":"Ev7","event":null}`,
	`{"type":"url_verification","challenge":"abc"}`,
	`{"type":"event_callback","event_id":"Ev8","event":{"type":"message","channel":"C1","message":{"ts":5}}}`,
	`[]`, `null`, `{`, ``,
}

// FuzzParseEvent: whatever bytes arrive, the event parser never panics,
// and what it hands on names its platform, update and chat.
func FuzzParseEvent(f *testing.F) {
	for _, s := range eventSeeds {
		f.Add([]byte(s), "U1")
	}
	f.Fuzz(func(t *testing.T, body []byte, botUserID string) {
		in, ok, err := parseEvent(body, botUserID, time.Unix(0, 0))
		if err != nil && ok {
			t.Fatalf("both an error and an update: %v", err)
		}
		if !ok {
			return
		}
		if in.Platform == "" || in.UpdateID == "" || in.ChatID == "" {
			t.Fatalf("accepted an update without platform, id or chat: %+v", in)
		}
		if in.Unsupported != "" && in.Text != "" && in.Unsupported != "file_share" {
			t.Fatalf("an unsupported update with text: %+v", in)
		}
	})
}

var pressSeeds = []string{
	`{"type":"block_actions","trigger_id":"1.2.abc","user":{"id":"U1","username":"alice"},"channel":{"id":"C1"},"container":{"type":"message","message_ts":"1.1","channel_id":"C1"},"actions":[{"action_id":"gh_approve","value":"gh:a:g1","action_ts":"1.5"}]}`,
	`{"type":"block_actions","user":{"id":"U1"},"channel":{"id":"C1"},"message":{"ts":"1.1","thread_ts":"1.0"},"actions":[{"value":"gh:o3:g1","action_ts":"1.5"}]}`,
	`{"type":"block_actions","trigger_id":"t","user":{"id":"U1"},"channel":{"id":"C1"},"container":{"message_ts":"1.1"},"actions":[{"value":"other:thing"}]}`,
	`{"type":"block_actions","trigger_id":"t","actions":[{"value":"gh:d:g1"}]}`,
	`{"type":"view_submission","trigger_id":"t"}`,
	`{"type":"block_actions","actions":{}}`,
	`{}`, `[`, ``,
}

// FuzzParsePress: the press parser never panics, and a press it accepts
// names its platform, update, gate, presser, chat and message.
func FuzzParsePress(f *testing.F) {
	for _, s := range pressSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		p, ok, err := parsePress(body)
		if err != nil && ok {
			t.Fatalf("both an error and a press: %v", err)
		}
		if !ok {
			return
		}
		if p.Platform == "" || p.UpdateID == "" || p.GateID == "" || p.Choice == "" || p.UserID == "" || p.ChatID == "" || p.MessageID == "" {
			t.Fatalf("accepted an incomplete press: %+v", p)
		}
	})
}

func TestSplitTextKeepsEveryByteAndEscapes(t *testing.T) {
	for _, text := range []string{
		"short",
		string(make([]byte, 0)),
		"aaaaaaaaa&amp;bbbbbbbbbb&lt;ccccccccc",
		"line one\nline two\nline three that is long",
		"ünïcödé ünïcödé ünïcödé ünïcödé",
	} {
		var got string
		for _, piece := range splitText(text, 10) {
			if n := len([]rune(piece)); n > 10 || n == 0 {
				t.Fatalf("piece %q of %q has %d runes", piece, text, n)
			}
			got += piece
		}
		if got != text {
			t.Fatalf("split lost bytes: %q → %q", text, got)
		}
	}
	for _, text := range []string{"aaaaaaaaa&amp;bbbbbbbbbb", "aaaaaaa&lt;bbbbbbb&gt;cc", "aaaaaa&amp;&amp;&amp;&amp;"} {
		for _, piece := range splitText(text, 10) {
			for i := range piece {
				if piece[i] == '&' && !strings.Contains(piece[i:], ";") {
					t.Fatalf("an escape was cut at the end of %q (text %q)", piece, text)
				}
			}
		}
	}
}
