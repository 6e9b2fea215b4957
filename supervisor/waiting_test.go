package supervisor_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/cards"
	"github.com/gatehouse/gatehouse/httpapi"
	"github.com/gatehouse/gatehouse/internal/testing/stacktest"
	"github.com/gatehouse/gatehouse/kernel"
	"github.com/gatehouse/gatehouse/models/modeltest"
)

// A message typed in the web chat while a card waits is told so at once,
// in the session's log, and answered at once in a turn of its own while
// the card still waits (#30): the waiting run is not woken for it, the
// model is told which card waits and since when, and the turn resumed by
// the decision goes on with its own work and does not answer the message
// again.
func TestWebMessageWhileACardIsPendingIsAnsweredAtOnce(t *testing.T) {
	e := stacktest.NewEnv(t, nil, stacktest.EnvOptions{HTTP: &httpapi.Config{}})
	e.Model.Push(toolReply("post_note", `{"text":"The report is ready."}`), modeltest.Reply{Text: "Tomorrow will be sunny."},
		modeltest.Reply{Text: "Posted the note."})
	webSay(t, e, "w1", "post that the report is ready")
	g := pendingGate(t, e, "w1")
	seq := webSay(t, e, "w1", "and what is the weather tomorrow?")
	notice, ok, err := e.Kernel.EventByKey(e.Ctx, "w1", kernel.WaitingKey(seq))
	if err != nil || !ok || notice.Kind != gh.KindNotice || notice.Seq != seq+1 {
		t.Fatalf("the notice for the message at %d: %+v %v %v", seq, notice, ok, err)
	}
	var n gh.Notice
	json.Unmarshal(notice.Payload, &n)
	n.Text = cards.NoticeText(n) // the kernel commits facts; surfaces word them
	for _, want := range []string{"post_note", "The report is ready.", "above in this conversation", "is answered now, in a turn of its own"} {
		if !strings.Contains(n.Text, want) || n.Code != kernel.NoticeCardPending {
			t.Fatalf("the notice %+v does not say %q", n, want)
		}
	}
	e.Eventually("the message's own answer while the card waits", func() bool { return len(finalAnswers(e, "w1")) == 1 })
	if got, _ := e.Store.GetGate(e.Ctx, g.ID); got.State != gh.GatePending {
		t.Fatalf("the card after the aside: %s", got.State)
	}
	reqs := e.Model.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests before the decision, want the turn and the aside", len(reqs))
	}
	aside := string(reqs[1].Body)
	for _, want := range []string{"weather", "Waiting for a person's decision", "post_note", "open since", "Not run yet"} {
		if !strings.Contains(aside, want) {
			t.Fatalf("the aside's request does not say %q: %s", want, aside)
		}
	}
	// The waiting run was never claimed for the message: one run.started
	// of it so far, and no empty settle.
	if starts := runStarts(e, "w1", g.RunID); starts != 1 {
		t.Fatalf("the waiting run started %d times before its decision, want 1", starts)
	}

	body, _ := json.Marshal(map[string]string{"decision": "approve"})
	req, _ := http.NewRequest("POST", "http://"+e.Addr+"/v1/gates/"+g.ID+"/decision", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(e.Authorize(req))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("decision: %d", res.StatusCode)
	}
	e.Eventually("the continuation", func() bool { return len(finalAnswers(e, "w1")) == 2 })
	e.Eventually("every run settled", settledDone(e, "w1", 2))
	reqs = e.Model.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model requests, want the turn, the aside and the continuation", len(reqs))
	}
	// The continuation ends with its tool's result: it goes on with its
	// own turn, the aside told before it as earlier conversation.
	var cont struct {
		Messages []struct {
			Role string `json:"role"`
		} `json:"messages"`
	}
	json.Unmarshal(reqs[2].Body, &cont)
	if len(cont.Messages) == 0 || cont.Messages[len(cont.Messages)-1].Role != "tool" {
		t.Fatalf("the continuation's request does not end with the tool result: %s", reqs[2].Body)
	}
	if starts := runStarts(e, "w1", g.RunID); starts != 2 {
		t.Fatalf("the waiting run started %d times, want 2 (its turn, its resume)", starts)
	}
	// Each answer lists the inputs it answers: the message once.
	answers := finalAnswers(e, "w1")
	if answers[0].Text != "Tomorrow will be sunny." || len(answers[0].InputSeqs) != 1 || answers[0].InputSeqs[0] != seq ||
		answers[1].Text != "Posted the note." || contains(answers[1].InputSeqs, seq) {
		t.Fatalf("answers %+v; the message is %d", answers, seq)
	}
}

// finalAnswers are the session's answers that end a turn, in log order.
func finalAnswers(e *stacktest.Env, session string) []gh.AssistantMessage {
	evs, _ := e.Kernel.Events(e.Ctx, session, 0, 1000)
	var out []gh.AssistantMessage
	for _, ev := range evs {
		var a gh.AssistantMessage
		if ev.Kind == gh.KindAssistantMessage && json.Unmarshal(ev.Payload, &a) == nil && a.StopReason == gh.StopEndTurn {
			out = append(out, a)
		}
	}
	return out
}

// runStarts counts the run.started of run in the session's log.
func runStarts(e *stacktest.Env, session string, run int64) int {
	evs, _ := e.Kernel.Events(e.Ctx, session, 0, 1000)
	n := 0
	for _, ev := range evs {
		var r gh.RunStarted
		if ev.Kind == gh.KindRunStarted && json.Unmarshal(ev.Payload, &r) == nil && r.RunID == run {
			n++
		}
	}
	return n
}

func contains(seqs []int64, v int64) bool {
	for _, s := range seqs {
		if s == v {
			return true
		}
	}
	return false
}
