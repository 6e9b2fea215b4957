package telegram

import (
	"testing"
	"time"

	gh "github.com/gatehouse/gatehouse"
)

func TestParseUpdateCallbackQuery(t *testing.T) {
	body := `{"update_id":9,"callback_query":{"id":"q1","from":{"id":5,"is_bot":false,"first_name":"Bo","username":"bob"},` +
		`"message":{"message_id":3,"date":1700000000,"chat":{"id":-1005,"type":"supergroup","is_forum":true},"message_thread_id":4,"is_topic_message":true,"text":"card"},` +
		`"chat_instance":"1","data":"gh:o2:gate-7"}}`
	ev, err := parseUpdate([]byte(body), time.Now())
	if err != nil || ev.query == nil || !ev.query.ours {
		t.Fatalf("%+v %v", ev, err)
	}
	want := gh.Press{Platform: gh.PlatformTelegram, UpdateID: "q1", GateID: "gate-7", Choice: "option:2",
		UserID: "5", UserName: "bob", ChatID: "-1005", ThreadID: "4", MessageID: "3"}
	if ev.query.press != want {
		t.Fatalf("press\n got %+v\nwant %+v", ev.query.press, want)
	}
	// A press on a message too old to be shown still names its chat.
	body = `{"update_id":10,"callback_query":{"id":"q2","from":{"id":5,"is_bot":false,"first_name":"Bo"},` +
		`"message":{"message_id":3,"date":0,"chat":{"id":-1005,"type":"supergroup"}},"chat_instance":"1","data":"gh:a:g"}}`
	ev, err = parseUpdate([]byte(body), time.Now())
	if err != nil || !ev.query.ours || ev.query.press.ChatID != "-1005" || ev.query.press.UserName != "Bo" {
		t.Fatalf("inaccessible message: %+v %v", ev.query, err)
	}
	// Inline-mode messages have no chat: never ours.
	body = `{"update_id":11,"callback_query":{"id":"q3","from":{"id":5,"is_bot":false,"first_name":"Bo"},"inline_message_id":"x","chat_instance":"1","data":"gh:a:g"}}`
	ev, err = parseUpdate([]byte(body), time.Now())
	if err != nil || ev.query.ours || ev.query.queryID != "q3" {
		t.Fatalf("inline message: %+v %v", ev.query, err)
	}
}

func TestParseUpdateOfUnknownShapeIsLoggedNotLost(t *testing.T) {
	// A field whose type the models do not expect (a newer Bot API) must
	// not block the updates behind it: it becomes an unsupported inbound.
	ev, err := parseUpdate([]byte(`{"update_id":12,"message":{"message_id":"not a number"}}`), time.Now())
	if err != nil || ev.inbound == nil || ev.inbound.Unsupported != "unreadable" || ev.inbound.UpdateID != "12" {
		t.Fatalf("%+v %v", ev.inbound, err)
	}
	ev, err = parseUpdate([]byte(`{"update_id":13,"poll":{"id":"p"}}`), time.Now())
	if err != nil || ev.inbound.Unsupported != "poll" {
		t.Fatalf("%+v %v", ev.inbound, err)
	}
}

func FuzzParseUpdate(f *testing.F) {
	for _, s := range []string{
		`{"update_id":1,"message":{"message_id":1,"date":1,"chat":{"id":1,"type":"private"},"from":{"id":1,"is_bot":false,"first_name":"A"},"text":"hi"}}`,
		`{"update_id":2,"callback_query":{"id":"q","from":{"id":1,"is_bot":false,"first_name":"A"},"message":{"message_id":1,"date":1,"chat":{"id":1,"type":"private"}},"data":"gh:a:x"}}`,
		`{"update_id":3,"callback_query":{"id":"","message":null,"data":"gh:d:x"}}`,
		`{"update_id":4,"edited_message":{"message_id":1,"date":1,"chat":{"id":-1,"type":"group"},"text":"x"}}`,
		`{"update_id":5,"channel_post":{"message_id":1,"date":1,"chat":{"id":-100,"type":"channel"},"sender_chat":{"id":-100,"type":"channel","title":"c"}}}`,
		`{"update_id":6,"message":{"message_id":1,"date":1,"chat":{"id":1,"type":"private"},"pinned_message":{"message_id":2,"date":0,"chat":{"id":1}}}}`,
		`{"update_id":7,"my_chat_member":{"chat":{"id":1,"type":"group"},"from":{"id":1},"new_chat_member":{"status":"member","user":{"id":1}}}}`,
		`{"update_id":8,"message":{"message_id":1,"reply_markup":{"inline_keyboard":[[{"text":"x","copy_text":{"text":"y"}}]]}}}`,
		`{"update_id":0}`, `{"update_id":-1}`, `[]`, `null`, ``, `{"update_id":1e3}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		ev, err := parseUpdate(body, time.Now())
		if err != nil {
			return
		}
		switch {
		case ev.inbound != nil && ev.query != nil, ev.inbound == nil && ev.query == nil:
			t.Fatalf("an update must be exactly one of inbound and query: %+v", ev)
		case ev.inbound != nil:
			if ev.inbound.Platform != gh.PlatformTelegram || ev.inbound.UpdateID == "" {
				t.Fatalf("accepted inbound without platform or update id: %+v", ev.inbound)
			}
		case ev.query.queryID == "":
			t.Fatalf("a callback query without an id to answer: %+v", ev.query)
		case ev.query.ours && (ev.query.press.Platform != gh.PlatformTelegram || ev.query.press.UpdateID == "" ||
			ev.query.press.GateID == "" || ev.query.press.ChatID == ""):
			t.Fatalf("accepted press without platform, update id, gate or chat: %+v", ev.query.press)
		}
	})
}
