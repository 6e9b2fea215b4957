package memory

import (
	"testing"
	"time"
)

func TestRules(t *testing.T) {
	at := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	type want struct{ subject, kind, value, text string }
	cases := []struct {
		in   string
		want []want
	}{
		// Names.
		{"My name is Ana.", []want{{"name", KindName, "Ana", "My name is Ana"}}},
		{"hi, my name is ana lopez and I need help", []want{{"name", KindName, "Ana Lopez", "My name is Ana Lopez"}}},
		{"I'm Ana, nice to meet you", []want{{"name", KindName, "Ana", "My name is Ana"}}},
		{"Call me Bob", []want{{"name", KindName, "Bob", "My name is Bob"}}},
		{"I'm tired today", nil},
		{"I'm Sorry about that", nil},
		{"I'm Spanish", nil},
		{"I think I'm Ana", nil}, // "I'm" only at the start
		// Contacts.
		{"Sara is sara@example.com", []want{{"contact:sara", KindContact, "sara@example.com", "Sara's email is sara@example.com"}}},
		{"Sara's email is sara@example.com.", []want{{"contact:sara", KindContact, "sara@example.com", "Sara's email is sara@example.com"}}},
		{"email of Sara: sara@example.com", []want{{"contact:sara", KindContact, "sara@example.com", "Sara's email is sara@example.com"}}},
		{"the email address for Tom Baker is tom.baker@bbc.co.uk", []want{{"contact:tom baker", KindContact, "tom.baker@bbc.co.uk", "Tom Baker's email is tom.baker@bbc.co.uk"}}},
		{"By the way Sara is sara@example.com and Tom is tom@example.com", []want{
			{"contact:sara", KindContact, "sara@example.com", "Sara's email is sara@example.com"},
			{"contact:tom", KindContact, "tom@example.com", "Tom's email is tom@example.com"},
		}},
		{"sara is sara@example.com", []want{{"contact:sara", KindContact, "sara@example.com", "Sara's email is sara@example.com"}}},
		{"You can reach O'Brien at ob@example.com", []want{{"contact:o'brien", KindContact, "ob@example.com", "O'Brien's email is ob@example.com"}}},
		{"My email is ana@example.com", []want{{"contact:me", KindContact, "ana@example.com", "My email is ana@example.com"}}},
		{"Her email is her@example.com", nil},
		{"the answer is test@example.com", nil},
		{"Send the report to sara@example.com", nil},
		{"Is Sara sara@example.com?", nil},
		// Preferences.
		{"I prefer tea over coffee", []want{{"pref:coffee tea", KindPreference, "tea over coffee", "I prefer tea over coffee"}}},
		{"I like jazz.", []want{{"pref:jazz", KindPreference, "jazz", "I like jazz"}}},
		{"I really don't like jazz", []want{{"pref:jazz", KindPreference, "jazz", "I really don't like jazz"}}},
		{"Always answer in Spanish", []want{{"pref:language", KindPreference, "Spanish", "Always answer in Spanish"}}},
		{"I prefer English", []want{{"pref:language", KindPreference, "English", "I prefer English"}}},
		{"please never use emojis!", []want{{"pref:emojis", KindPreference, "use emojis", "Never use emojis"}}},
		{"From now on, always include sources", []want{{"pref:source", KindPreference, "include sources", "From now on, always include sources"}}},
		{"I like that", nil},
		{"I love how you did it", nil},
		{"never mind", nil},
		{"I like Spanish food", []want{{"pref:food spanish", KindPreference, "Spanish food", "I like Spanish food"}}},
		// Remember that.
		{"Remember that my car is a blue Golf.", []want{{"note:blue car golf", KindNote, "", "My car is a blue Golf"}}},
		{"Please remember: the wifi password is hunter2", []want{{"note:hunter2 password wifi", KindNote, "", "The wifi password is hunter2"}}},
		{"remember to buy milk", []want{{"note:buy milk", KindNote, "", "Remember to buy milk"}}},
		{"Remember that Sara's email is sara@example.com", []want{{"contact:sara", KindContact, "sara@example.com", "Sara's email is sara@example.com"}}},
		{"Remember that I prefer tea", []want{{"pref:tea", KindPreference, "tea", "I prefer tea"}}},
		{"Do you remember what I said?", nil},
		{"Remember when we met?", nil},
		// Several in one message.
		{"Hi! I'm Ana. Sara's email is sara@example.com. I prefer short answers.", []want{
			{"name", KindName, "Ana", "My name is Ana"},
			{"contact:sara", KindContact, "sara@example.com", "Sara's email is sara@example.com"},
			{"pref:short", KindPreference, "short answers", "I prefer short answers"},
		}},
	}
	for _, c := range cases {
		got := Rules(Turn{SessionID: "s1", Seq: 7, At: at, UserText: c.in})
		if len(got) != len(c.want) {
			t.Errorf("%q: got %d facts %+v, want %d", c.in, len(got), got, len(c.want))
			continue
		}
		for i, w := range c.want {
			g := got[i]
			if g.Subject != w.subject || g.Kind != w.kind || g.Value != w.value || g.Text != w.text {
				t.Errorf("%q fact %d: got {%q %q %q %q}, want %+v", c.in, i, g.Subject, g.Kind, g.Value, g.Text, w)
			}
			if g.SourceSessionID != "s1" || g.SourceSeq != 7 || !g.ObservedAt.Equal(at) {
				t.Errorf("%q fact %d: source %s/%d at %v", c.in, i, g.SourceSessionID, g.SourceSeq, g.ObservedAt)
			}
		}
	}
}

func TestContentTerms(t *testing.T) {
	terms, tf := contentTerms("What is Sara's e-mail address? Her emails…")
	want := []string{"sara", "email", "address"}
	if len(terms) != len(want) {
		t.Fatalf("terms %v, want %v", terms, want)
	}
	for i := range want {
		if terms[i] != want[i] {
			t.Fatalf("terms %v, want %v", terms, want)
		}
	}
	if tf["email"] != 2 {
		t.Fatalf("tf %v", tf)
	}
}
