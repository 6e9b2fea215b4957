package openaiapi

import (
	"strings"
	"unicode/utf8"
)

// position is where a request's last message stands in the log.
type position struct {
	// turn is the turn the last message is, or -1 when it is new.
	turn int
	// place is the new message's place among the session's user messages
	// (1-based), when it is new.
	place int
	// owedFrom is the first turn whose answer the client does not hold in
	// full: the reply starts there.
	owedFrom int
}

// howToStartOver ends every mismatch: what the client can do.
const howToStartOver = "Start a new conversation (a new " + SessionHeader + " value, or another user field), " +
	"or resend the conversation as this gateway answered it."

// match checks a request's history against the conversation and places
// its last message. A history that does not match is a mismatch error
// (409) saying where.
func (c *conversation) match(history []message, last string) (position, error) {
	i, owedFrom := 0, 0
	for n, m := range history {
		switch m.role {
		case roleUser:
			if i >= len(c.turns) {
				return position{}, mismatch("message %d (the user's %q) is not in the session's log, which holds %d user messages. %s",
					n+1, clip(m.text), len(c.turns), howToStartOver)
			}
			if !same(m.text, c.turns[i].text) {
				return position{}, mismatch("message %d (the user's %q) differs from the session's user message %d, %q. %s",
					n+1, clip(m.text), i+1, clip(c.turns[i].text), howToStartOver)
			}
			i++
		case roleAssistant:
			switch {
			case i == 0:
				// A frontend's greeting, before anyone spoke.
			case c.isStatus(m.text):
				// No answer was in it: what was said is still owed.
			case same(m.text, c.text(owedFrom, i-1)):
				owedFrom = i
			default:
				return position{}, mismatch("message %d (an assistant message) differs from what the agent said after user message %d. %s",
					n+1, i, howToStartOver)
			}
		}
	}
	switch {
	case i == len(c.turns):
		return position{turn: -1, place: i + 1, owedFrom: owedFrom}, nil
	case i == len(c.turns)-1 && same(last, c.turns[i].text):
		return position{turn: i, owedFrom: owedFrom}, nil
	case i == len(c.turns)-1:
		return position{}, mismatch("the last message %q differs from the session's last user message %q. %s",
			clip(last), clip(c.turns[i].text), howToStartOver)
	}
	return position{}, mismatch("the session's log holds %d user messages after the ones this conversation shows. %s",
		len(c.turns)-i-1, howToStartOver)
}

// isStatus reports whether an assistant message is one a client may hold
// in place of an answer: a status reply of this endpoint, or a failure
// the log holds.
func (c *conversation) isStatus(text string) bool {
	if c.failures[strings.TrimSpace(text)] {
		return true
	}
	for _, marker := range statusMarkers {
		if strings.Contains(text, marker) {
			return true
		}
	}
	return false
}

// same compares two texts as a frontend may have kept them: surrounding
// white space and line endings aside.
func same(a, b string) bool {
	norm := func(s string) string { return strings.TrimSpace(strings.ReplaceAll(s, "\r\n", "\n")) }
	return norm(a) == norm(b)
}

// clip shortens a text quoted in an error.
func clip(s string) string {
	const most = 60
	if utf8.RuneCountInString(s) <= most {
		return s
	}
	r := []rune(s)
	return string(r[:most]) + "…"
}
