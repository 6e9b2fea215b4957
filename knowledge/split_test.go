package knowledge

import (
	"slices"
	"strings"
	"testing"
)

const handbook = "# Handbook\n\nWelcome to the team.\n\n## Leave\n\nEveryone gets 25 days of annual leave.\nAsk your manager first.\n\n### Sick leave\n\nTell us on the first morning.\n\n```sh\n# not a heading\necho hi\n```\n\n## Travel\n\nBook trains, not planes.\n\nExpenses\n--------\n\nKeep every receipt.\n"

func TestSplitKeepsHeadings(t *testing.T) {
	x := scanText(handbook, true)
	ps := split(x, 1600, 160)
	got := map[string][]string{}
	for _, p := range ps {
		got[x.text[p.start:p.end]] = p.heading
	}
	want := map[string][]string{
		"Welcome to the team.": {"Handbook"},
		"Everyone gets 25 days of annual leave.\nAsk your manager first.":       {"Handbook", "Leave"},
		"Tell us on the first morning.\n\n```sh\n# not a heading\necho hi\n```": {"Handbook", "Leave", "Sick leave"},
		"Book trains, not planes.": {"Handbook", "Travel"},
		"Keep every receipt.":      {"Handbook", "Expenses"}, // a setext "---" heading is level 2
	}
	if len(got) != len(want) {
		t.Fatalf("passages: %q", got)
	}
	for text, heading := range want {
		if h, ok := got[text]; !ok || !slices.Equal(h, heading) {
			t.Errorf("passage %q: heading %q (found %v), want %q", text, h, ok, heading)
		}
	}
	if x.title != "Handbook" {
		t.Errorf("title %q", x.title)
	}
}

func TestSplitBoundsAndOverlap(t *testing.T) {
	var b strings.Builder
	b.WriteString("# Long\n\n")
	for i := range 60 {
		b.WriteString("Sentence number ")
		b.WriteString(strings.Repeat("x", i%7+1))
		b.WriteString(" says something about the rules. ")
		if i%20 == 19 {
			b.WriteString("\n\n")
		}
	}
	b.WriteString(strings.Repeat("y", 700)) // one word longer than a passage
	x := scanText(b.String(), true)
	const size, overlap = 400, 80
	ps := split(x, size, overlap)
	if len(ps) < 6 {
		t.Fatalf("%d passages", len(ps))
	}
	overlapped := 0
	for i, p := range ps {
		text := x.text[p.start:p.end]
		if len(text) > size || len(text) == 0 || strings.TrimSpace(text) != text {
			t.Errorf("passage %d: %d bytes %q", i, len(text), text)
		}
		if !slices.Equal(p.heading, []string{"Long"}) {
			t.Errorf("passage %d heading %q", i, p.heading)
		}
		if i > 0 {
			if p.start < ps[i-1].end {
				overlapped++
				if ps[i-1].end-p.start > overlap {
					t.Errorf("passage %d repeats %d bytes, over %d", i, ps[i-1].end-p.start, overlap)
				}
			}
			if p.start <= ps[i-1].start {
				t.Errorf("passage %d does not move on", i)
			}
		}
	}
	if overlapped == 0 {
		t.Error("no passage repeats the end of the one before")
	}
	if last := ps[len(ps)-1]; x.text[last.end-1] != 'y' {
		t.Error("the text's end is lost")
	}
}

func TestTerms(t *testing.T) {
	got := terms("How many vacation days do I get? Policies & the e-mail")
	if want := []string{"vacation", "day", "policy", "mail"}; !slices.Equal(got, want) {
		t.Fatalf("terms %q", got)
	}
}
