package toolworker

import (
	"encoding/json"
	"fmt"
	"strings"
)

// envelopeBytes is room kept in an event's payload for what surrounds a
// tool result's content (its call id, name, flags) and the truncation note.
const envelopeBytes = 2048

// contentBudget is how many bytes a result's content may take once
// JSON-encoded, so that its event fits the log's payload limit.
func (w *Worker) contentBudget() int {
	return w.k.Config().MaxPayloadBytes - envelopeBytes
}

// fitPayload cuts text so that its JSON encoding takes at most budget
// bytes, and says so. The tools cap their output in bytes, but the log
// limits the encoded payload, where a control character takes six: 256
// KiB of them read from a file would be refused by the log, and the call
// would be retried, and refused, on every later run of the session.
func fitPayload(text string, budget int) string {
	if jsonLen(text) <= budget {
		return text
	}
	// The longest prefix that fits, found by halving: each probe encodes
	// at most the whole text once.
	lo, hi := 0, len(text)
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if jsonLen(text[:mid]) <= budget {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	cut := strings.ToValidUTF8(text[:lo], "")
	return cut + fmt.Sprintf("\n[truncated: %d more bytes not shown — the result is larger than the log takes]", len(text)-len(cut))
}

// jsonLen is the length of s encoded as a JSON string.
func jsonLen(s string) int {
	raw, _ := json.Marshal(s)
	return len(raw)
}
