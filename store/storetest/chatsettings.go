package storetest

import (
	"context"
	"testing"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/store"
)

// Conformance of the chat settings (/model, /think): a change writes only
// the fields it names; every session of a platform chat (each thread)
// reads the chat's row, a session with no address its own; the settings
// survive a restart and are seen by another replica.

var chatT0 = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

func ptr(s string) *string { return &s }

func testChatSettings(t *testing.T, h Harness) {
	ctx := context.Background()
	st := h.New(t)
	room := store.ChatKey{Platform: "slack", ChatID: "C1"}
	if s, found, err := st.ChatSettings(ctx, room); err != nil || found || s.Selection != "" {
		t.Fatalf("a chat with none stored: %+v %v %v", s, found, err)
	}
	got, err := st.PutChatSettings(ctx, store.ChatSettingsChange{ChatKey: room, Selection: ptr("openai:o3"), By: "slack:alice", Now: chatT0})
	if err != nil || got.ChatKey != room || got.Selection != "openai:o3" || got.Thinking != "" || got.UpdatedBy != "slack:alice" || !got.Updated.Equal(chatT0) {
		t.Fatalf("the first change: %+v %v", got, err)
	}
	// /think after /model keeps the model; the one who changed last is kept.
	got, err = st.PutChatSettings(ctx, store.ChatSettingsChange{ChatKey: room, Thinking: ptr(gh.ThinkingHigh), By: "slack:bob", Now: chatT0.Add(time.Minute)})
	if err != nil || got.Selection != "openai:o3" || got.Thinking != gh.ThinkingHigh || got.UpdatedBy != "slack:bob" || !got.Updated.Equal(chatT0.Add(time.Minute)) {
		t.Fatalf("a change of the thinking level alone: %+v %v", got, err)
	}
	// Another chat of the platform, and the same chat id on another
	// platform, are other chats.
	for _, other := range []store.ChatKey{{Platform: "slack", ChatID: "C2"}, {Platform: "discord", ChatID: "C1"}, store.SessionChat("C1")} {
		if s, found, err := st.ChatSettings(ctx, other); err != nil || found {
			t.Fatalf("%+v reads another chat's settings: %+v %v", other, s, err)
		}
	}

	// Every session of the chat, each Slack thread, reads the chat's row;
	// a session with no address (the web chat) is its own chat.
	for _, a := range []store.AddressEntry{
		{SessionID: "sl_thread1", Address: gh.Address{Platform: "slack", ChatID: "C1", ThreadID: "1.1"}, Updated: chatT0},
		{SessionID: "sl_thread2", Address: gh.Address{Platform: "slack", ChatID: "C1", ThreadID: "2.2"}, Updated: chatT0},
		{SessionID: "sl_other", Address: gh.Address{Platform: "slack", ChatID: "C2", ThreadID: "3.3"}, Updated: chatT0},
	} {
		if _, _, err := st.UpsertAddress(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	for _, session := range []string{"sl_thread1", "sl_thread2"} {
		if s, found, err := st.SessionChatSettings(ctx, session); err != nil || !found || s.Selection != "openai:o3" || s.Thinking != gh.ThinkingHigh || s.ChatKey != room {
			t.Fatalf("session %s of the chat: %+v %v %v", session, s, found, err)
		}
	}
	if s, found, err := st.SessionChatSettings(ctx, "sl_other"); err != nil || found {
		t.Fatalf("a session of another chat: %+v %v %v", s, found, err)
	}
	web := store.SessionChat("w1")
	if _, err := st.PutChatSettings(ctx, store.ChatSettingsChange{ChatKey: web, Thinking: ptr(gh.ThinkingLow), By: "web", Now: chatT0}); err != nil {
		t.Fatal(err)
	}
	if s, found, err := st.SessionChatSettings(ctx, "w1"); err != nil || !found || s.Thinking != gh.ThinkingLow || s.Selection != "" || s.Platform != "" {
		t.Fatalf("a session with no address: %+v %v %v", s, found, err)
	}
	if _, found, err := st.SessionChatSettings(ctx, "w2"); err != nil || found {
		t.Fatalf("another web session: %v %v", found, err)
	}
	// An empty value clears the choice.
	if got, err := st.PutChatSettings(ctx, store.ChatSettingsChange{ChatKey: room, Selection: ptr(""), By: "slack:alice", Now: chatT0.Add(2 * time.Minute)}); err != nil ||
		got.Selection != "" || got.Thinking != gh.ThinkingHigh {
		t.Fatalf("clearing the model: %+v %v", got, err)
	}

	if h.Peer != nil {
		peer := h.Peer(t, st)
		if _, err := peer.PutChatSettings(ctx, store.ChatSettingsChange{ChatKey: room, Selection: ptr("anthropic:claude-sonnet-4-5"), By: "slack:carol", Now: chatT0.Add(3 * time.Minute)}); err != nil {
			t.Errorf("a change on the other replica: %v", err)
		}
		peer.Close()
	}
	want := ""
	if h.Peer != nil {
		want = "anthropic:claude-sonnet-4-5"
	}
	if h.Reopen != nil {
		st = h.Reopen(t, st)
	}
	defer st.Close()
	if s, found, err := st.SessionChatSettings(ctx, "sl_thread2"); err != nil || !found || s.Selection != want || s.Thinking != gh.ThinkingHigh {
		t.Fatalf("after a restart (and a change on another replica): %+v %v %v, want selection %q", s, found, err, want)
	}
}
