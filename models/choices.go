package models

import (
	"strconv"
	"strings"
)

// ChatChoices are the model selections the people of a chat may pick
// (/model, the web chat's selector; GATEHOUSE_CHAT_MODELS), in the order
// listed. Only these: a chat cannot pick a model the operator did not
// list, however it spells it, so nobody runs an unlisted or costly one.
type ChatChoices []Chain

// ParseChatChoices reads a list of selections separated by ";" or line
// breaks (a selection's own fallbacks are separated by commas, as in
// GATEHOUSE_MODEL). Each must parse (ParseSelection); a selection listed
// twice counts once. Empty gives no choices.
func ParseChatChoices(v string) (ChatChoices, error) {
	var out ChatChoices
	for part := range strings.FieldsFuncSeq(v, func(r rune) bool { return r == ';' || r == '\n' }) {
		chain, err := ParseSelection(part)
		if err != nil {
			return nil, err
		}
		if len(chain) > 0 && !out.Allows(chain.String()) {
			out = append(out, chain)
		}
	}
	return out, nil
}

// Allows reports whether selection is one of the choices (compared as
// parsed: case of the provider and spaces do not count).
func (c ChatChoices) Allows(selection string) bool {
	_, ok := c.exact(selection)
	return ok
}

func (c ChatChoices) exact(selection string) (Chain, bool) {
	want, err := ParseSelection(selection)
	if err != nil || len(want) == 0 {
		return nil, false
	}
	for _, chain := range c {
		if chain.String() == want.String() {
			return chain, true
		}
	}
	return nil, false
}

// Find is the choice name picks: a selection as listed, its number in
// the list (from 1), or the model name of exactly one choice's first
// model ("o3" for "openai:o3"), so a phone's keyboard is enough. false
// when name picks none of them.
func (c ChatChoices) Find(name string) (Chain, bool) {
	name = strings.TrimSpace(name)
	if chain, ok := c.exact(name); ok {
		return chain, true
	}
	if n, err := strconv.Atoi(name); err == nil && n >= 1 && n <= len(c) {
		return c[n-1], true
	}
	var found Chain
	for _, chain := range c {
		if strings.EqualFold(chain[0].Model, name) {
			if found != nil {
				return nil, false // two providers' models of that name
			}
			found = chain
		}
	}
	return found, found != nil
}

// Strings are the choices as selections.
func (c ChatChoices) Strings() []string {
	out := make([]string, len(c))
	for i, chain := range c {
		out[i] = chain.String()
	}
	return out
}
