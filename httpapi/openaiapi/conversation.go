package openaiapi

import (
	"encoding/json"
	"slices"
	"strings"

	gh "github.com/gatehouse/gatehouse"
)

// turnState is where the answer to one user message stands.
type turnState int

const (
	turnWorking  turnState = iota // no answer yet
	turnAnswered                  // a final answer lists it
	turnFailed                    // its latest answer is a failure
)

// turn is one user message of the log and its answer.
type turn struct {
	seq   int64
	text  string
	state turnState
	// stateSeq is the seq of the event that set state: a regenerate waits
	// for a state set after its turn.retry.
	stateSeq int64
	// failure is the text of the failure, in state turnFailed.
	failure string
}

// said is one committed assistant text, in log order, with the turn it
// belongs to: the newest input the answer presented.
type said struct {
	turn int
	text string
}

// conversation is the session's log as the endpoint reads it: the user
// messages, what the agent said, the failures shown, and the gates still
// pending. It is built from the first event and grows with add.
type conversation struct {
	turns []turn
	index map[int64]int // user.message seq → turn
	said  []said
	// usage sums the usage of the answers, per turn.
	usage map[int]gh.Usage
	// failures are the texts of failed answers: a client may hold one in
	// place of an answer.
	failures map[string]bool
	pending  map[string]gh.GateOpened
	order    []string // gate ids in the order they opened
	cursor   int64
}

func newConversation() *conversation {
	return &conversation{index: map[int64]int{}, usage: map[int]gh.Usage{}, failures: map[string]bool{}, pending: map[string]gh.GateOpened{}}
}

// add reads events after the cursor. An unreadable payload is skipped, as
// the transcript skips it: one bad row must not make a session
// unanswerable.
func (c *conversation) add(events []gh.Event) {
	for _, e := range events {
		if e.Seq <= c.cursor {
			continue
		}
		c.cursor = e.Seq
		switch e.Kind {
		case gh.KindUserMessage:
			var u gh.UserMessage
			if json.Unmarshal(e.Payload, &u) == nil {
				c.index[e.Seq] = len(c.turns)
				c.turns = append(c.turns, turn{seq: e.Seq, text: u.Text})
			}
		case gh.KindAssistantMessage:
			var a gh.AssistantMessage
			if json.Unmarshal(e.Payload, &a) == nil {
				c.answer(e.Seq, a)
			}
		case gh.KindGateOpened:
			var o gh.GateOpened
			if json.Unmarshal(e.Payload, &o) == nil && o.GateID != "" {
				c.pending[o.GateID] = o
				c.order = append(c.order, o.GateID)
			}
		case gh.KindGateDecided:
			var d gh.GateDecided
			if json.Unmarshal(e.Payload, &d) == nil {
				delete(c.pending, d.GateID)
			}
		}
	}
}

// answer records an assistant message: its text under the turn of the
// newest input it presented, and the state of each input it lists.
func (c *conversation) answer(seq int64, a gh.AssistantMessage) {
	owner := -1
	for _, s := range a.InputSeqs {
		if i, ok := c.index[s]; ok {
			owner = max(owner, i)
		}
	}
	if owner < 0 {
		owner = len(c.turns) - 1
	}
	if owner < 0 {
		return // an answer before any message: nothing a client holds
	}
	failed := a.StopReason == gh.StopError || a.StopReason == gh.StopAborted
	if failed {
		c.failures[strings.TrimSpace(a.Text)] = true
	} else {
		u := c.usage[owner]
		u.InputTokens += a.Usage.InputTokens
		u.OutputTokens += a.Usage.OutputTokens
		c.usage[owner] = u
		if strings.TrimSpace(a.Text) != "" {
			c.said = append(c.said, said{turn: owner, text: a.Text})
		}
	}
	for _, s := range a.InputSeqs {
		i, ok := c.index[s]
		if !ok {
			continue
		}
		t := &c.turns[i]
		switch {
		case failed:
			t.state, t.failure = turnFailed, a.Text
		case len(a.ToolCalls) == 0:
			t.state, t.failure = turnAnswered, ""
		default:
			t.state, t.failure = turnWorking, ""
		}
		t.stateSeq = seq
	}
}

// text is what the agent said for the turns from through to, joined by a
// blank line: the content of one reply.
func (c *conversation) text(from, to int) string {
	return strings.Join(c.texts(from, to), "\n\n")
}

func (c *conversation) texts(from, to int) []string {
	var out []string
	for _, s := range c.said {
		if s.turn >= from && s.turn <= to {
			out = append(out, s.text)
		}
	}
	return out
}

// usageOf sums the usage of the answers of turns from through to.
func (c *conversation) usageOf(from, to int) gh.Usage {
	var u gh.Usage
	for i := from; i <= to; i++ {
		u.InputTokens += c.usage[i].InputTokens
		u.OutputTokens += c.usage[i].OutputTokens
	}
	return u
}

// pendingGates are the gates opened and not decided, oldest first.
func (c *conversation) pendingGates() []gh.GateOpened {
	var out []gh.GateOpened
	for _, id := range c.order {
		if o, ok := c.pending[id]; ok && !slices.ContainsFunc(out, func(p gh.GateOpened) bool { return p.GateID == id }) {
			out = append(out, o)
		}
	}
	return out
}
