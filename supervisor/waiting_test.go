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
// in the session's log, and answered after the decision in a turn of its
// own: the turn resumed by the decision never sees it.
func TestWebMessageWhileACardIsPendingWaitsForATurnOfItsOwn(t *testing.T) {
	e := stacktest.NewEnv(t, nil, stacktest.EnvOptions{HTTP: &httpapi.Config{}})
	e.Model.Push(toolReply("post_note", `{"text":"The report is ready."}`), modeltest.Reply{Text: "Posted the note."},
		modeltest.Reply{Text: "Tomorrow will be sunny."})
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
	for _, want := range []string{"post_note", "The report is ready.", "above in this conversation", "right after the decision"} {
		if !strings.Contains(n.Text, want) || n.Code != kernel.NoticeCardPending {
			t.Fatalf("the notice %+v does not say %q", n, want)
		}
	}
	// The run woken by the message looks, finds the card still pending and
	// waits again, without asking the model.
	e.Eventually("the run waiting again", func() bool {
		r, ok, _ := e.Kernel.LatestRun(e.Ctx, "w1")
		return ok && r.State == gh.RunAwaitingApproval
	})
	if n := len(e.Model.Requests()); n != 1 {
		t.Fatalf("the model was asked %d times before the decision", n)
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
	e.Eventually("the continuation and the message's own turn", settledDone(e, "w1", 2))
	reqs := e.Model.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model requests, want the turn, its continuation and the message's own turn", len(reqs))
	}
	if strings.Contains(string(reqs[1].Body), "weather") {
		t.Fatal("the turn resumed by the decision was given the message typed under the card")
	}
	if !strings.Contains(string(reqs[2].Body), "weather") {
		t.Fatal("the message typed under the card was never asked about")
	}
	// Each answer lists the inputs it answers.
	evs, _ := e.Kernel.Events(e.Ctx, "w1", 0, 1000)
	var answers []gh.AssistantMessage
	for _, ev := range evs {
		var a gh.AssistantMessage
		if ev.Kind == gh.KindAssistantMessage && json.Unmarshal(ev.Payload, &a) == nil && a.StopReason == gh.StopEndTurn {
			answers = append(answers, a)
		}
	}
	if len(answers) != 2 || answers[0].Text != "Posted the note." || contains(answers[0].InputSeqs, seq) ||
		answers[1].Text != "Tomorrow will be sunny." || len(answers[1].InputSeqs) != 1 || answers[1].InputSeqs[0] != seq {
		t.Fatalf("answers %+v; the message is %d", answers, seq)
	}
}

func contains(seqs []int64, v int64) bool {
	for _, s := range seqs {
		if s == v {
			return true
		}
	}
	return false
}
