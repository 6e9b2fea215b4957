package openaiapi

import (
	"encoding/json"
	"slices"
	"strings"
	"time"

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
	// answer is the generation id of the final answer, in state
	// turnAnswered: what a regenerate replaces.
	answer string
	// asked is when the turn was last asked for: its message, or the
	// regenerate that replaced its answer; answeredAt when it was
	// answered. Far apart, a wait may have run out in between.
	asked, answeredAt time.Time
	// gated says a gate opened while the turn was the newest: a client
	// waiting for it was given the approval text, not the answer.
	gated bool
}

// said is one committed assistant text, in log order, with the turn it
// belongs to (the newest input the answer presented) and its generation.
type said struct {
	turn int
	text string
	gen  string
}

// counted is what one assistant message that did not fail counted for,
// so that a regenerate can take it back.
type counted struct {
	owner int
	turns []int // the turns it listed
	used  gh.Usage
	calls bool // it asked for tools: never replaced
	run   int64
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
	// openedAt is the seq of each gate's gate.opened: a message sent
	// while an earlier turn's card waits is answered at once, so its wait
	// gives the approval text only for cards opened after it.
	openedAt map[string]int64
	// replies are the assistant messages that did not fail, by
	// generation id; run is the newest run.started's run.
	replies map[string]counted
	run     int64
	cursor  int64
}

func newConversation() *conversation {
	return &conversation{index: map[int64]int{}, usage: map[int]gh.Usage{}, failures: map[string]bool{}, pending: map[string]gh.GateOpened{},
		replies: map[string]counted{}, openedAt: map[string]int64{}}
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
				c.turns = append(c.turns, turn{seq: e.Seq, text: u.Text, asked: e.CreatedAt})
			}
		case gh.KindAssistantMessage:
			var a gh.AssistantMessage
			if json.Unmarshal(e.Payload, &a) == nil {
				c.answer(e.Seq, e.CreatedAt, a)
			}
		case gh.KindTurnRetry:
			var r gh.TurnRetry
			if json.Unmarshal(e.Payload, &r) == nil && r.Replaces != "" {
				c.replace(e.Seq, e.CreatedAt, r.Replaces)
			}
		case gh.KindRunStarted:
			var r gh.RunStarted
			if json.Unmarshal(e.Payload, &r) == nil {
				c.run = r.RunID
			}
		case gh.KindGateOpened:
			var o gh.GateOpened
			if json.Unmarshal(e.Payload, &o) == nil && o.GateID != "" {
				c.pending[o.GateID] = o
				c.order = append(c.order, o.GateID)
				c.openedAt[o.GateID] = e.Seq
				if n := len(c.turns); n > 0 {
					c.turns[n-1].gated = true
				}
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
func (c *conversation) answer(seq int64, at time.Time, a gh.AssistantMessage) {
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
		c.addUsage(owner, a.Usage, 1)
		if strings.TrimSpace(a.Text) != "" {
			c.said = append(c.said, said{turn: owner, text: a.Text, gen: a.GenerationID})
		}
	}
	r := counted{owner: owner, used: a.Usage, calls: len(a.ToolCalls) > 0, run: c.run}
	for _, s := range a.InputSeqs {
		i, ok := c.index[s]
		if !ok {
			continue
		}
		r.turns = append(r.turns, i)
		t := &c.turns[i]
		switch {
		case failed:
			t.state, t.failure, t.answer = turnFailed, a.Text, ""
		case len(a.ToolCalls) == 0:
			t.state, t.failure, t.answer, t.answeredAt = turnAnswered, "", a.GenerationID, at
		default:
			t.state, t.failure, t.answer = turnWorking, "", ""
		}
		t.stateSeq = seq
	}
	if !failed {
		c.replies[a.GenerationID] = r
	}
}

// replace takes back the answer gen, which the regenerate at seq
// replaced, as the supervisor's transcript does: its text is no longer
// what the agent said and the turns it answered are working again. Only
// a final answer is replaced (the transcript keeps one that asked for
// tools).
func (c *conversation) replace(seq int64, at time.Time, gen string) {
	r, ok := c.replies[gen]
	if !ok || r.calls {
		return
	}
	delete(c.replies, gen)
	c.said = slices.DeleteFunc(c.said, func(s said) bool { return s.gen == gen })
	c.addUsage(r.owner, r.used, -1)
	for _, i := range r.turns {
		if t := &c.turns[i]; t.answer == gen {
			t.state, t.answer, t.stateSeq, t.asked, t.gated = turnWorking, "", seq, at, false
		}
	}
}

// addUsage adds (sign 1) or takes back (-1) an answer's usage to a turn.
func (c *conversation) addUsage(turn int, u gh.Usage, sign int) {
	sum := c.usage[turn]
	sum.InputTokens += sign * u.InputTokens
	sum.OutputTokens += sign * u.OutputTokens
	c.usage[turn] = sum
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

// pendingGates are the gates opened after seq since and not decided,
// oldest first.
func (c *conversation) pendingGates(since int64) []gh.GateOpened {
	var out []gh.GateOpened
	for _, id := range c.order {
		if o, ok := c.pending[id]; ok && c.openedAt[id] > since && !slices.ContainsFunc(out, func(p gh.GateOpened) bool { return p.GateID == id }) {
			out = append(out, o)
		}
	}
	return out
}
