package cards

import (
	"encoding/json"

	gh "github.com/gatehouse/gatehouse"
)

// NoticeText is the wording of n on any surface: its own Text when its
// writer worded it, else the wording of its facts by code (a card-pending
// notice the kernel committed: Waiting). A notice with neither says
// nothing ("").
func NoticeText(n gh.Notice) string {
	if n.Text != "" {
		return n.Text
	}
	if n.Code == gh.NoticeCardPending && n.Pending != nil {
		p := n.Pending
		return Waiting(gh.GateOpened{GateID: p.GateID, Kind: p.Kind, Tool: p.Tool, Question: p.Question,
			Fields: p.Fields, Arguments: p.Arguments}, p.Source, p.More)
	}
	return ""
}

// Worded is e with its notice's Text filled in (NoticeText) when e is a
// notice committed as facts, so a client reading the log over the API
// (the web chat, an SSE consumer) shows the same words as a chat; any
// other event comes back as it is.
func Worded(e gh.Event) gh.Event {
	if e.Kind != gh.KindNotice {
		return e
	}
	var n gh.Notice
	if json.Unmarshal(e.Payload, &n) != nil || n.Text != "" {
		return e
	}
	if n.Text = NoticeText(n); n.Text == "" {
		return e
	}
	if p, err := json.Marshal(n); err == nil {
		e.Payload = p
	}
	return e
}
