package discordtest

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// Global commands are checked as Discord checks them, overwritten in
// bulk keeping their ids, and only registered ones can be invoked: as a
// type 2 interaction without a message, answered ephemerally with a
// message whose buttons only its user can press.
func TestDiscordFakeCommands(t *testing.T) {
	f := NewDiscord(t)
	auth := "Bot " + f.Token()
	path := "/applications/" + f.AppID() + "/commands"
	cmd := func(name, desc string) map[string]any {
		return map[string]any{"type": 1, "name": name, "description": desc, "options": []any{}}
	}
	for _, bad := range []struct {
		why  string
		body []any
	}{
		{"uppercase name", []any{cmd("Grants", "x")}},
		{"name with a space", []any{cmd("my grants", "x")}},
		{"name over 32", []any{cmd(strings.Repeat("g", 33), "x")}},
		{"empty description", []any{cmd("grants", "")}},
		{"description over 100", []any{cmd("grants", strings.Repeat("d", 101))}},
		{"user command", []any{map[string]any{"type": 2, "name": "grants", "description": "x"}}},
		{"duplicate names", []any{cmd("grants", "x"), cmd("grants", "y")}},
		{"an option not a string", []any{map[string]any{"name": "grants", "description": "x", "options": []any{map[string]any{"type": 4, "name": "o", "description": "o"}}}}},
		{"a required option after an optional one", []any{map[string]any{"name": "model", "description": "x", "options": []any{
			map[string]any{"type": 3, "name": "a", "description": "a"}, map[string]any{"type": 3, "name": "b", "description": "b", "required": true}}}}},
		{"bad context", []any{map[string]any{"name": "grants", "description": "x", "contexts": []int{7}}}},
	} {
		if status, _ := discordCall(t, f, "PUT", path, auth, bad.body); status != 400 {
			t.Errorf("%s: %d, want 400", bad.why, status)
		}
	}
	if status, _ := discordCall(t, f, "PUT", "/applications/1234/commands", auth, []any{cmd("grants", "x")}); status != 403 {
		t.Errorf("another application's commands: %d, want 403", status)
	}
	if n := len(f.Errors()); n != 11 {
		t.Errorf("%d refusals recorded, want 11: %q", n, f.Errors())
	}
	if f.CommandPuts() != 0 || len(f.Commands()) != 0 {
		t.Fatalf("a refused overwrite registered %q", f.Commands())
	}

	withZone := map[string]any{"type": 1, "name": "tz", "description": "Time zone", "options": []any{map[string]any{"type": 3, "name": "zone", "description": "A zone"}}}
	if status, _ := discordCall(t, f, "PUT", path, auth, []any{cmd("grants", "List grants"), cmd("ping", "Ping"), withZone}); status != 200 {
		t.Fatalf("overwrite: %d", status)
	}
	id := f.CommandID("grants")
	if status, _ := discordCall(t, f, "PUT", path, auth, []any{map[string]any{"name": "grants", "description": "List them", "dm_permission": false}}); status != 200 {
		t.Fatalf("second overwrite: %d", status)
	}
	if got := f.Commands(); !slices.Equal(got, []string{"grants"}) || f.CommandID("grants") != id || f.CommandPuts() != 2 {
		t.Errorf("after two overwrites: %q, id %s (was %s), %d puts", got, f.CommandID("grants"), id, f.CommandPuts())
	}

	c := discordDialGateway(t, f)
	c.identify(auth, discordAllIntents)
	c.next("READY")
	if _, err := f.Command("room", "alice", "ping"); err == nil {
		t.Error("invoked /ping, which the last overwrite removed")
	}
	if _, err := f.Command("dm-alice", "alice", "grants"); err == nil {
		t.Error("invoked /grants in a DM although dm_permission is false")
	}

	type result struct {
		msgID, text string
		err         error
	}
	done := make(chan result, 1)
	go func() {
		m, err := f.Command("room", "alice", "grants")
		done <- result{m.ID, m.Text, err}
	}()
	fr := c.next("INTERACTION_CREATE")
	var ix struct {
		ID, Token string
		ChannelID string `json:"channel_id"`
		Type      int
		Data      struct{ ID, Name string }
		Message   json.RawMessage
		Member    struct{ User struct{ ID string } }
	}
	_ = json.Unmarshal(fr.D, &ix)
	if ix.Type != 2 || ix.Data.Name != "grants" || ix.Data.ID != id || ix.Message != nil || ix.ChannelID != f.ChannelID("room") ||
		ix.Member.User.ID != f.UserID("alice") {
		t.Errorf("INTERACTION_CREATE = %s", fr.D)
	}
	cb := "/interactions/" + ix.ID + "/" + ix.Token + "/callback"
	if status, _ := discordCall(t, f, "POST", cb, "", map[string]any{"type": 7, "data": map[string]any{"content": "x"}}); status != 400 {
		t.Errorf("type 7 to a command: %d, want 400", status)
	}
	if status, _ := discordCall(t, f, "POST", cb, "", map[string]any{"type": 4, "data": map[string]any{
		"content": "Your grants", "flags": 64,
		"components": discordButtons(1, func(int) string { return "gh:v:gr_1" }, "Revoke"),
	}}); status != 204 {
		t.Errorf("ephemeral answer: %d, want 204", status)
	}
	r := <-done
	if r.err != nil || r.text != "Your grants" {
		t.Fatalf("Command = %+v", r)
	}
	if m, ok := f.Message("room", r.msgID); !ok || !m.Ephemeral || !slices.Equal(m.Buttons, []string{"gh:v:gr_1"}) {
		t.Errorf("the answer is %+v, want an ephemeral message with the button", m)
	}
	if len(f.Messages("room")) != 0 {
		t.Errorf("the ephemeral answer is in the channel: %+v", f.Messages("room"))
	}
	if _, err := f.Press("room", r.msgID, "gh:v:gr_1", "bob"); err == nil {
		t.Error("bob pressed a button of alice's ephemeral message")
	}
	pressed := make(chan error, 1)
	go func() { _, err := f.Press("room", r.msgID, "gh:v:gr_1", "alice"); pressed <- err }()
	fr = c.next("INTERACTION_CREATE")
	var press struct {
		ID, Token string
		Message   struct {
			ID    string
			Flags int
		}
	}
	_ = json.Unmarshal(fr.D, &press)
	if press.Message.ID != r.msgID || press.Message.Flags != 64 {
		t.Errorf("press on the ephemeral message carries message %+v", press.Message)
	}
	discordCall(t, f, "POST", "/interactions/"+press.ID+"/"+press.Token+"/callback", "", map[string]any{"type": 4, "data": map[string]any{"content": "Revoked.", "flags": 64}})
	if err := <-pressed; err != nil {
		t.Error(err)
	}
	if n := len(f.Errors()); n != 12 {
		t.Errorf("refusals: %q, want the 11 above and the type 7", f.Errors())
	}
}
