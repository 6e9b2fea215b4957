package transcript

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/memory"
	"github.com/gatehouse/gatehouse/models"
	"github.com/gatehouse/gatehouse/toolworker"
)

// entry is one decoded event that matters to the conversation.
type entry struct {
	seq  int64
	user *gh.UserMessage
	asst *gh.AssistantMessage
	tool *gh.ToolResult
}

// Transcript is the decoded log of one attempt: the conversation, and the
// facts that decide whether a turn is owed. It is built by Decode and
// grows as the attempt commits (the Add methods); it is not safe for
// concurrent use.
type Transcript struct {
	summary string
	// compacted says the log was loaded from a compaction: answers before
	// it are not in entries.
	compacted bool
	entries   []entry
	results   map[string]gh.ToolResult // by toolCallId
	answered  map[int64]bool           // inputs a completed assistant message listed
	lastSeq   int64
	// replaced are the generation ids of answers a regenerate replaced
	// (turn.retry's Replaces): left out of entries and answered, but
	// counted by Generation so that the new answer gets a name of its own.
	replaced []string
	// skipped counts unreadable payloads (each logged once).
	skipped int
	// readOutside: the turn was given outside text the log does not hold
	// as a tool result (MarkReadOutside).
	readOutside bool
	// cards are the gates opened in the log, by tool call id, with their
	// decisions: a call of another run still without a result waits for
	// one (Messages says so, PendingCards lists them).
	cards map[string]*card
	// run is the run the attempt is of (ForRun): its turn is the one the
	// attempt goes on with, 0 for any (the newest).
	run int64
}

// card is a gate of the log as the transcript knows it.
type card struct {
	opened   gh.GateOpened
	at       time.Time
	decision gh.GateState
}

// failed reports whether an assistant message is a terminal failure, which
// consumes nothing.
func failed(a *gh.AssistantMessage) bool {
	return a.StopReason == gh.StopError || a.StopReason == gh.StopAborted
}

// Decode turns events into a transcript. An unreadable payload is skipped
// with a diagnostic instead of failing the run: one bad row must not make
// a session unanswerable.
func Decode(events []gh.Event, log *slog.Logger) *Transcript {
	t := &Transcript{results: map[string]gh.ToolResult{}, answered: map[int64]bool{}, cards: map[string]*card{}}
	bad := func(e gh.Event, err error) {
		t.skipped++
		log.Warn("skipping unreadable event", "session", e.SessionID, "seq", e.Seq, "kind", e.Kind, "err", err)
	}
	// A regenerate comes after the answer it replaces: read first, so the
	// answer is left out as it is met.
	replaces := map[string]bool{}
	for _, e := range events {
		if e.Kind != gh.KindTurnRetry {
			continue
		}
		var r gh.TurnRetry
		if err := json.Unmarshal(e.Payload, &r); err != nil {
			bad(e, err)
		} else if r.Replaces != "" {
			replaces[r.Replaces] = true
		}
	}
	// lastRun is the run of the newest run.started met: an answer from
	// before answers carried their run was that run's (one run ran at a
	// time then).
	var lastRun int64
	for _, e := range events {
		t.lastSeq = max(t.lastSeq, e.Seq)
		switch e.Kind {
		case gh.KindRunStarted:
			var r gh.RunStarted
			if json.Unmarshal(e.Payload, &r) == nil {
				lastRun = r.RunID
			}
		case gh.KindGateOpened:
			var o gh.GateOpened
			if err := json.Unmarshal(e.Payload, &o); err != nil {
				bad(e, err)
			} else if o.ToolCallID != "" && !gh.GateOutsideRun(o.Kind) {
				t.cards[o.ToolCallID] = &card{opened: o, at: e.CreatedAt}
			}
		case gh.KindGateDecided:
			var d gh.GateDecided
			if err := json.Unmarshal(e.Payload, &d); err != nil {
				bad(e, err)
			} else if c := t.cards[d.ToolCallID]; c != nil && c.opened.GateID == d.GateID {
				c.decision = d.Decision
			}
		case gh.KindUserMessage:
			var u gh.UserMessage
			if err := json.Unmarshal(e.Payload, &u); err != nil {
				bad(e, err)
				continue
			}
			t.entries = append(t.entries, entry{seq: e.Seq, user: &u})
		case gh.KindAssistantMessage:
			var a gh.AssistantMessage
			if err := json.Unmarshal(e.Payload, &a); err != nil {
				bad(e, err)
				continue
			}
			if replaces[a.GenerationID] && len(a.ToolCalls) == 0 && !failed(&a) {
				// Regenerated: its inputs are owed a fresh answer, and the
				// model must not read this one as given. Only a final
				// answer is replaced: the calls before it and their
				// results stay, so a regenerate repeats no effect.
				t.replaced = append(t.replaced, a.GenerationID)
				continue
			}
			if !failed(&a) {
				for _, s := range a.InputSeqs {
					t.answered[s] = true
				}
			}
			if a.RunID == 0 {
				a.RunID = lastRun
			}
			t.entries = append(t.entries, entry{seq: e.Seq, asst: &a})
		case gh.KindToolResult:
			var r gh.ToolResult
			if err := json.Unmarshal(e.Payload, &r); err != nil || r.ToolCallID == "" {
				bad(e, fmt.Errorf("tool result without a call id: %v", err))
				continue
			}
			if _, dup := t.results[r.ToolCallID]; !dup {
				t.results[r.ToolCallID] = r
				t.entries = append(t.entries, entry{seq: e.Seq, tool: &r})
			}
		case gh.KindCompaction:
			var c gh.Compaction
			if err := json.Unmarshal(e.Payload, &c); err != nil {
				bad(e, err)
				continue
			}
			t.summary, t.compacted = c.Summary, true
		}
		// Bookkeeping (run.finished, notices, gates) is not conversation.
	}
	return t
}

// Unanswered lists the inputs no completed assistant message lists.
func (t *Transcript) Unanswered() []int64 {
	var out []int64
	for _, e := range t.entries {
		if e.user != nil && !t.answered[e.seq] {
			out = append(out, e.seq)
		}
	}
	return out
}

// ForRun makes the transcript the view of an attempt of run: its turn is
// the one made of the run's answers, which NewestAssistant, AwaitsAnswer,
// MissingResults and GoingOn read, and which Messages presents last.
// Another run's turn — one that waits for its card while this run
// answers a message typed under it — is conversation, not work to do.
func (t *Transcript) ForRun(run int64) { t.run = run }

// pick is the assistant message the attempt's turn goes on from: the
// newest of the run's own answers; for a run with none of its own (a
// fresh turn, a regenerate), the newest answer that is not part of a
// turn waiting in another run — a call of it with a card and no result
// is that run's work, resumed by its decision. Failures count only with
// failures.
func (t *Transcript) pick(failures bool) *gh.AssistantMessage {
	for _, own := range []bool{true, false} {
		for i := len(t.entries) - 1; i >= 0; i-- {
			a := t.entries[i].asst
			if a == nil || (!failures && failed(a)) {
				continue
			}
			if own && t.run != 0 && a.RunID != t.run {
				continue
			}
			if !own && t.waitsElsewhere(a) {
				continue
			}
			return a
		}
		if t.run == 0 {
			break
		}
	}
	return nil
}

// waitsElsewhere reports whether a is another run's and a call of it
// waits for its card (a gate opened, no result yet).
func (t *Transcript) waitsElsewhere(a *gh.AssistantMessage) bool {
	if t.run == 0 || a.RunID == t.run {
		return false
	}
	for _, c := range a.ToolCalls {
		if _, done := t.results[c.ID]; !done && t.cards[c.ID] != nil {
			return true
		}
	}
	return false
}

// NewestAssistant returns the assistant message the attempt's turn goes
// on from (see ForRun): the newest that is not a failure.
func (t *Transcript) NewestAssistant() *gh.AssistantMessage { return t.pick(false) }

// AwaitsAnswer reports whether the turn's last assistant message asked
// for tools whose results are all in, with no answer after them: the
// model owes the turn its next request.
func (t *Transcript) AwaitsAnswer() bool {
	a := t.pick(true)
	if a == nil || failed(a) || len(a.ToolCalls) == 0 {
		return false
	}
	for _, c := range a.ToolCalls {
		if _, ok := t.results[c.ID]; !ok {
			return false
		}
	}
	return true
}

// MissingResults lists the newest assistant message's calls without a
// result: a previous process committed the calls and died before their
// results.
func (t *Transcript) MissingResults() []gh.ToolCall {
	a := t.NewestAssistant()
	if a == nil {
		return nil
	}
	var out []gh.ToolCall
	for _, c := range a.ToolCalls {
		if _, ok := t.results[c.ID]; !ok {
			out = append(out, c)
		}
	}
	return out
}

// AddResult records a result committed during the attempt.
func (t *Transcript) AddResult(seq int64, r gh.ToolResult) {
	if _, dup := t.results[r.ToolCallID]; dup {
		return
	}
	t.results[r.ToolCallID] = r
	t.entries = append(t.entries, entry{seq: seq, tool: &r})
}

// AddAssistant records an answer committed during the attempt.
func (t *Transcript) AddAssistant(seq int64, a gh.AssistantMessage) {
	if !failed(&a) {
		for _, s := range a.InputSeqs {
			t.answered[s] = true
		}
	}
	t.entries = append(t.entries, entry{seq: seq, asst: &a})
}

// Hold takes the inputs at seqs out of the attempt's view: read, but left
// for a turn of their own (the supervisor's attemptPlan.held). The log
// keeps them.
func (t *Transcript) Hold(seqs []int64) {
	t.entries = slices.DeleteFunc(t.entries, func(e entry) bool { return e.user != nil && slices.Contains(seqs, e.seq) })
}

// AddUser records input read during the attempt (guide injection).
func (t *Transcript) AddUser(seq int64, u gh.UserMessage) {
	t.entries = append(t.entries, entry{seq: seq, user: &u})
}

// Summary is the summary of the compaction the log was loaded from (or
// the attempt made), empty without one.
func (t *Transcript) Summary() string { return t.summary }

// Compacted reports whether the log was loaded from a compaction: answers
// before it are not in the transcript, so counts taken from it (Generation)
// may fall short.
func (t *Transcript) Compacted() bool { return t.compacted }

// Skipped counts the unreadable payloads Decode skipped (each logged once).
func (t *Transcript) Skipped() int { return t.skipped }

// Selection is the model selection the input at seq chose, empty when it
// chose none or is not in the transcript.
func (t *Transcript) Selection(seq int64) string {
	for _, e := range t.entries {
		if e.user != nil && e.seq == seq && e.user.Selection != "" {
			return e.user.Selection
		}
	}
	return ""
}

// CompactionCut picks how many leading entries a compaction may summarise:
// all but at least keepRecent, cut just before an answered user message so
// that a tool call is never separated from its result and unanswered input
// is never summarised away. 0 means nothing can be cut.
func (t *Transcript) CompactionCut(keepRecent int) int {
	limit := len(t.entries) - keepRecent
	for i, e := range t.entries[:max(limit, 0)] {
		if e.user != nil && !t.answered[e.seq] {
			limit = i
			break
		}
	}
	for i := limit; i > 0; i-- {
		e := t.entries[i]
		if e.user != nil && t.answered[e.seq] {
			return i
		}
	}
	return 0
}

// Head is the first cut entries as a transcript of their own, without the
// summary, for the model that summarises them. It shares the receiver's
// results and answers; do not add to it.
func (t *Transcript) Head(cut int) *Transcript {
	return &Transcript{entries: t.entries[:cut], results: t.results, answered: t.answered}
}

// FirstKept is the seq of the entry at cut: the first a compaction at cut
// keeps verbatim.
func (t *Transcript) FirstKept(cut int) int64 { return t.entries[cut].seq }

// Compact replaces the first cut entries with summary, once the compaction
// that says so is committed.
func (t *Transcript) Compact(summary string, cut int) {
	t.summary = summary
	t.entries = append([]entry(nil), t.entries[cut:]...)
}

// userText renders a user message with its attachments for a model.
func userText(u *gh.UserMessage) string {
	var b strings.Builder
	b.WriteString(u.Text)
	for _, a := range u.Attachments {
		fmt.Fprintf(&b, "\n[attachment %s %s %s]", a.Name, a.Type, a.URL)
		if a.Text != "" {
			b.WriteString("\n" + a.Text)
		}
	}
	return b.String()
}

// Messages builds the model's view. The conversation is told turn by
// turn, each turn (a run's inputs, answers and tool results) in one piece
// where it began, and the attempt's own turn (ForRun) last, so the model
// goes on with it: a message typed and answered while a card waited reads
// as an exchange beside the paused turn, not inside it. Each assistant
// message with tool calls is followed at once by its results (a call
// without one gets a result that says why — its card still waits, or
// none was recorded — so the pairing providers require always holds);
// input that sits inside a tool batch comes after the batch; unanswered
// input is presented last, in seq order, so the model treats it as the
// prompt rather than as already answered.
func (t *Transcript) Messages() []models.Message {
	var out []models.Message
	if t.summary != "" {
		out = append(out, models.Message{Role: models.RoleSystem, Text: "Summary of the earlier conversation:\n" + t.summary})
	}
	// Each entry's turn: an answer's run, an input's first answer's, a
	// result's call's.
	runOfInput := map[int64]int64{}
	for _, e := range t.entries {
		if a := e.asst; a != nil && !failed(a) {
			for _, seq := range a.InputSeqs {
				if _, ok := runOfInput[seq]; !ok {
					runOfInput[seq] = a.RunID
				}
			}
		}
	}
	var order []int64 // turns by first entry
	byTurn := map[int64][]models.Message{}
	add := func(run int64, ms ...models.Message) {
		if _, ok := byTurn[run]; !ok {
			order = append(order, run)
		}
		byTurn[run] = append(byTurn[run], ms...)
	}
	var unanswered []*entry
	for i := range t.entries {
		e := &t.entries[i]
		switch {
		case e.user != nil:
			if !t.answered[e.seq] {
				unanswered = append(unanswered, e)
				continue
			}
			add(runOfInput[e.seq], models.Message{Role: models.RoleUser, Text: userText(e.user)})
		case e.asst != nil:
			a := e.asst
			if failed(a) {
				continue
			}
			// Thinking blocks go back with their message: Anthropic wants
			// them, unchanged, on the message whose tool calls a request
			// answers (the provider decides what it sends).
			ms := []models.Message{{Role: models.RoleAssistant, Text: a.Text, ToolCalls: a.ToolCalls, Thinking: a.Thinking}}
			for _, c := range a.ToolCalls {
				r, ok := t.results[c.ID]
				if !ok {
					r = gh.ToolResult{ToolCallID: c.ID, Name: c.Name, Content: t.noResult(c.ID, a), IsError: true}
				}
				ms = append(ms, models.Message{Role: models.RoleTool, ToolCallID: c.ID, Text: r.Content, IsError: r.IsError})
			}
			add(a.RunID, ms...)
		}
		// Tool results were placed after their call above.
	}
	// The turn the attempt goes on with is told last; a fresh turn has
	// none (its prompt is the unanswered input).
	own := int64(-1)
	if a := t.NewestAssistant(); a != nil && len(a.ToolCalls) > 0 {
		own = a.RunID
	}
	for _, run := range order {
		if run != own {
			out = append(out, byTurn[run]...)
		}
	}
	out = append(out, byTurn[own]...)
	slices.SortFunc(unanswered, func(a, b *entry) int { return int(a.seq - b.seq) })
	for _, e := range unanswered {
		out = append(out, models.Message{Role: models.RoleUser, Text: userText(e.user)})
	}
	return out
}

// noResult is what the model reads for a call of a without a result: a
// call of another run whose card still waits (or was decided and has not
// reported yet) is said so; else none was recorded.
func (t *Transcript) noResult(callID string, a *gh.AssistantMessage) string {
	c := t.cards[callID]
	if c == nil || (t.run != 0 && a.RunID == t.run) {
		return "no result was recorded for this call"
	}
	since := c.at.UTC().Format("15:04 UTC")
	switch c.decision {
	case "":
		return "Not run yet: this call waits for a person's decision on its approval card (open since " + since + "). Its turn goes on after the decision; do not ask for it again."
	default:
		return "Not reported yet: this call was " + string(c.decision) + " on its card; its turn goes on with the outcome."
	}
}

// PendingCard is a card of another turn still waiting for a decision
// while this one answers (supervisor: the prompt says so).
type PendingCard struct {
	Opened gh.GateOpened
	// Since is when the card was opened.
	Since time.Time
}

// PendingCards lists the cards opened by other runs' calls that are not
// decided yet, oldest first.
func (t *Transcript) PendingCards() []PendingCard {
	var out []PendingCard
	for _, e := range t.entries {
		a := e.asst
		if a == nil || failed(a) || (t.run != 0 && a.RunID == t.run) {
			continue
		}
		for _, c := range a.ToolCalls {
			if k := t.cards[c.ID]; k != nil && k.decision == "" {
				if _, done := t.results[c.ID]; !done {
					out = append(out, PendingCard{Opened: k.opened, Since: k.at})
				}
			}
		}
	}
	return out
}

// Generation names an answer u<promptSeq>-a<ordinal>, derived from the log
// so that a retried attempt derives the same name and the kernel returns
// the committed answer instead of appending a second one.
func (t *Transcript) Generation(promptSeq int64) string {
	prefix := "u" + strconv.FormatInt(promptSeq, 10) + "-a"
	n := 0
	for _, e := range t.entries {
		if e.asst != nil && strings.HasPrefix(e.asst.GenerationID, prefix) {
			n++
		}
	}
	// A replaced answer keeps its name: reusing it would return it.
	for _, g := range t.replaced {
		if strings.HasPrefix(g, prefix) {
			n++
		}
	}
	return prefix + strconv.Itoa(n+1)
}

// PromptOf returns the prompt seq of a generation id, or 0.
func PromptOf(generationID string) int64 {
	rest, ok := strings.CutPrefix(generationID, "u")
	if !ok {
		return 0
	}
	num, _, _ := strings.Cut(rest, "-")
	n, _ := strconv.ParseInt(num, 10, 64)
	return n
}

// EstimateTokens is a cheap size estimate (about four characters a token)
// used to decide on compaction before a provider reports real usage.
func EstimateTokens(msgs []models.Message) int {
	n := 0
	for _, m := range msgs {
		n += len(m.Text)/4 + 4
		for _, c := range m.ToolCalls {
			n += (len(c.Name)+len(c.Arguments))/4 + 4
		}
		for _, b := range m.Thinking {
			n += (len(b.Thinking)+len(b.Data))/4 + 4
		}
	}
	return n
}

// GoingOn lists, in seq order, the inputs the newest assistant message
// presented: the inputs of a turn that goes on from it.
func (t *Transcript) GoingOn() []int64 {
	a := t.NewestAssistant()
	if a == nil {
		return nil
	}
	return slices.Sorted(slices.Values(a.InputSeqs))
}

// Thinking is the reasoning level the turn asks for: the newest of its
// inputs that chose one decides, so that a guide which says nothing of it
// does not switch thinking off halfway through a tool loop, and a turn
// resumed after an approval asks as it asked before the pause. An
// unreadable level (committed by a surface that did not check it) counts
// as none: one bad input must not fail its turns.
func (t *Transcript) Thinking(inputs []int64) string {
	level, at := "", int64(0)
	for _, e := range t.entries {
		u := e.user
		if u == nil || u.Thinking == "" || e.seq < at || !slices.Contains(inputs, e.seq) || gh.CheckThinking(u.Thinking) != nil {
			continue
		}
		level, at = u.Thinking, e.seq
	}
	return level
}

// PersonTurn is one person's part of an answered turn, for memory.
type PersonTurn struct {
	// UserKey is the person, as memory keys their facts.
	UserKey string
	// Turn is what they said in the turn, sourced at their latest input.
	Turn memory.Turn
}

// TurnForMemory is the answered turn as memory reads it: for each person
// whose input the answer lists, what that person said, to be remembered
// under their own key, sourced at their latest input of the turn. Only the
// people's own words go: never the answer, a tool result or an attached
// document's text.
func (t *Transcript) TurnForMemory(a gh.AssistantMessage, at time.Time) []PersonTurn {
	var out []PersonTurn
	index := map[string]int{}
	for _, e := range t.entries {
		if e.user == nil || !slices.Contains(a.InputSeqs, e.seq) {
			continue
		}
		key := e.user.UserKey()
		i, ok := index[key]
		if !ok {
			i, index[key] = len(out), len(out)
			out = append(out, PersonTurn{UserKey: key, Turn: memory.Turn{At: at}})
		}
		p := &out[i]
		if p.Turn.UserText != "" {
			p.Turn.UserText += "\n"
		}
		p.Turn.UserText += e.user.Text
		p.Turn.Seq = max(p.Turn.Seq, e.seq)
	}
	return out
}

// InputText is what the person said in the given inputs, in order.
func (t *Transcript) InputText(seqs []int64) string {
	var said []string
	for _, e := range t.entries {
		if e.user != nil && slices.Contains(seqs, e.seq) {
			said = append(said, e.user.Text)
		}
	}
	return strings.Join(said, "\n")
}

// FirstInput is the oldest of the given inputs: in a turn answering
// several messages, the one that started it.
func (t *Transcript) FirstInput(seqs []int64) *gh.UserMessage {
	for _, e := range t.entries {
		if e.user != nil && slices.Contains(seqs, e.seq) {
			return e.user
		}
	}
	return nil
}

// LatestInput is the newest of the given inputs.
func (t *Transcript) LatestInput(seqs []int64) *gh.UserMessage {
	var latest *gh.UserMessage
	for _, e := range t.entries {
		if e.user != nil && slices.Contains(seqs, e.seq) {
			latest = e.user
		}
	}
	return latest
}

// AskerOf is who the calls of the assistant message a are made for. The
// person is the one whose message led to the calls: the newest input a
// presented (in a turn answering several people, the latest of them, the
// one the model read last when it asked), else the newest input loaded.
// Tainted says whether the turn has read outside text since that message.
// Both are derived from the log, so a batch resumed after an approval or a
// crash is made for the same person with the same taint.
func (t *Transcript) AskerOf(a *gh.AssistantMessage) toolworker.Asker {
	var from *entry
	for i := range t.entries {
		e := &t.entries[i]
		if e.user == nil || (from != nil && e.seq < from.seq) {
			continue
		}
		if a == nil || slices.Contains(a.InputSeqs, e.seq) {
			from = e
		}
	}
	if from == nil && a != nil {
		return t.AskerOf(nil)
	}
	if from == nil {
		return toolworker.Asker{Tainted: t.tainted(0, nil)}
	}
	// Platform users are the platform's; input without a person (the web
	// chat and the API) is the operator's, gh.LocalUser.
	who := toolworker.Asker{User: from.user.UserKey(), Platform: from.user.Source, Tainted: t.tainted(from.seq, from.user)}
	if who.Platform == "" {
		who.Platform = "api"
	}
	who.Requesters = t.requesters(a, who.User)
	return who
}

// requesters are the user keys of everyone whose message the assistant
// message a answers (each may decide a gate its calls open), in the order
// they spoke; user alone when a presented none of the inputs loaded.
func (t *Transcript) requesters(a *gh.AssistantMessage, user string) []string {
	var out []string
	for _, e := range t.entries {
		if e.user != nil && a != nil && slices.Contains(a.InputSeqs, e.seq) && !slices.Contains(out, e.user.UserKey()) {
			out = append(out, e.user.UserKey())
		}
	}
	if !slices.Contains(out, user) {
		out = append(out, user)
	}
	return out
}

// MarkReadOutside records that the turn's prompt held outside text that is
// not a tool result (the knowledge library's passages from a chat's or a
// person's collection): the supervisor recalls them before any batch of
// the attempt, a resumed one too, so its calls are tainted as after an
// External result.
func (t *Transcript) MarkReadOutside() { t.readOutside = true }

// tainted reports whether the turn has read outside text since the
// person's message u at seq since: a document sent with u, or a tool
// result committed after it (by seq, as the log orders it, however this
// attempt read it) that is outside text. A turn here runs from a person's
// message: a person speaking again starts afresh.
func (t *Transcript) tainted(since int64, u *gh.UserMessage) bool {
	if t.readOutside {
		return true
	}
	if u != nil {
		for _, at := range u.Attachments {
			if strings.TrimSpace(at.Text) != "" {
				return true
			}
		}
	}
	for _, e := range t.entries {
		if e.tool != nil && e.seq > since && toolworker.ReadOutside(*e.tool) {
			return true
		}
	}
	return false
}
