package discord

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"
)

// FuzzParse feeds arbitrary gateway payloads through the same path as
// live events: discordgo's decoding (whose partial result it hands on
// even when decoding fails) and then the adapter's normalisation.
func FuzzParse(f *testing.F) {
	seeds := []string{
		`{"id":"1","channel_id":"2","guild_id":"3","author":{"id":"4","username":"alice"},"content":"hi","type":0,"timestamp":"2024-01-01T00:00:00Z"}`,
		`{"id":"1","channel_id":"2","author":{"id":"4","username":"bob","bot":true},"content":"","attachments":[{"id":"9","filename":"a.png"}]}`,
		`{"id":"1","channel_id":"2","author":{"id":"4"},"type":7}`,
		`{"id":"1","channel_id":"2","author":{"id":"4"},"sticker_items":[{"id":"5","name":"x","format_type":1}]}`,
		`{"id":"1","channel_id":"2","author":{"id":"4"},"components":[{"type":1,"components":[{"type":2,"custom_id":"gh:a:g"}]}]}`,
		`{"id":"10","type":3,"token":"t","channel_id":"2","member":{"user":{"id":"4","username":"alice"}},"message":{"id":"7"},"data":{"custom_id":"gh:a:gate","component_type":2}}`,
		`{"id":"10","type":3,"token":"t","channel_id":"2","user":{"id":"4"},"data":{"custom_id":"gh:o12:gate"}}`,
		`{"id":"10","type":3,"token":"t","channel_id":"2","data":{"custom_id":"other"}}`,
		`{"id":"10","type":2,"token":"t","data":{"name":"cmd"}}`,
		`{"type":3,"data":null}`,
		`null`, `{}`, `[]`, `{"id":1}`,
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	now := time.Unix(1700000000, 0)
	f.Fuzz(func(t *testing.T, raw []byte) {
		var mc discordgo.MessageCreate
		_ = json.Unmarshal(raw, &mc)
		if in, ok := inboundFromMessage(mc.Message, "4", now); ok {
			if in.Platform == "" || in.UpdateID == "" || in.ChatID == "" || in.UserID == "" {
				t.Fatalf("accepted message without platform, update, chat or user: %+v", in)
			}
			if in.Text != "" && in.Unsupported != "" {
				t.Fatalf("message both has text and is unsupported: %+v", in)
			}
		}
		var ic discordgo.InteractionCreate
		_ = json.Unmarshal(raw, &ic)
		if ic.Interaction == nil {
			return
		}
		if p, ok := pressFromInteraction(ic.Interaction); ok {
			if p.Platform == "" || p.UpdateID == "" || p.GateID == "" || p.Choice == "" || p.UserID == "" || p.ChatID == "" {
				t.Fatalf("accepted press missing a field: %+v", p)
			}
		}
	})
}
