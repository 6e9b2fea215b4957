package telegram

import (
	"testing"

	"github.com/go-telegram/bot/models"
)

func TestCommandOf(t *testing.T) {
	cmd := func(text string, offset, length int) *models.Message {
		return &models.Message{Text: text, Entities: []models.MessageEntity{{Type: models.MessageEntityTypeBotCommand, Offset: offset, Length: length}}}
	}
	for _, tc := range []struct {
		name string
		m    *models.Message
		want *botCommand
	}{
		{"bare", cmd("/grants", 0, 7), &botCommand{name: "grants"}},
		{"with args", cmd("/grants  all of them ", 0, 7), &botCommand{name: "grants", args: "all of them"}},
		{"to a bot", cmd("/grants@Some_Bot x", 0, 16), &botCommand{name: "grants", target: "Some_Bot", args: "x"}},
		{"any case", cmd("/GRANTS", 0, 7), &botCommand{name: "grants"}},
		{"another command", cmd("/help", 0, 5), nil},
		{"a longer word", cmd("/grantsx", 0, 8), nil},
		{"not at the start", cmd("hi /grants", 3, 7), nil},
		{"no entity", &models.Message{Text: "/grants"}, nil},
		{"another entity", &models.Message{Text: "/grants", Entities: []models.MessageEntity{{Type: models.MessageEntityTypeBold, Offset: 0, Length: 7}}}, nil},
		{"length past the text", cmd("/grants", 0, 9), nil},
		{"inside a surrogate pair", cmd("/grants😀", 0, 8), nil},
		{"after a surrogate pair", cmd("/grants😀 x", 0, 9), nil},
		// A document's caption is its text: "/library" as a caption is
		// how a file is added to the library.
		{"a caption", &models.Message{Caption: "/library shared", CaptionEntities: []models.MessageEntity{{Type: models.MessageEntityTypeBotCommand, Length: 8}}}, &botCommand{name: "library", args: "shared"}},
		{"a caption's other command", &models.Message{Caption: "/help", CaptionEntities: []models.MessageEntity{{Type: models.MessageEntityTypeBotCommand, Length: 5}}}, nil},
		{"text wins over a caption", &models.Message{Text: "hello", Caption: "/grants", CaptionEntities: []models.MessageEntity{{Type: models.MessageEntityTypeBotCommand, Length: 7}}}, nil},
		// The library command as Slack and Discord take it, and a
		// "/library" that came without its entity.
		{"!library", &models.Message{Caption: "!Library"}, &botCommand{name: "library"}},
		{"/library as plain text", &models.Message{Text: "/library  shared"}, &botCommand{name: "library", args: "shared"}},
		{"/library to another bot", &models.Message{Text: "/library@other_bot"}, nil},
	} {
		got := commandOf(tc.m)
		if (got == nil) != (tc.want == nil) || (got != nil && *got != *tc.want) {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
