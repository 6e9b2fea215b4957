package turnbench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/httpapi"
	"github.com/gatehouse/gatehouse/internal/testing/smtptest"
	"github.com/gatehouse/gatehouse/internal/testing/stacktest"
	"github.com/gatehouse/gatehouse/internal/testing/testenv"
	"github.com/gatehouse/gatehouse/models"
	"github.com/gatehouse/gatehouse/models/modeltest"
	"github.com/gatehouse/gatehouse/store"
	"github.com/gatehouse/gatehouse/store/postgres"
	"github.com/gatehouse/gatehouse/store/sqlite"
	"github.com/gatehouse/gatehouse/store/storetest"
	"github.com/gatehouse/gatehouse/supervisor"
	"github.com/gatehouse/gatehouse/tools"
)

// What the person asks, the call the scripted model makes for it, and its
// answer once the call has a result.
const (
	prompt    = "Please send the weekly report to bob@example.com"
	recipient = "bob@example.com"
	answer    = "I sent the weekly report to bob@example.com."
	// extractMark begins the memory model pass's system prompt
	// (supervisor.ModelExtractor).
	extractMark = "Read what one person said to an assistant"
)

// script is the scripted model: the input (the last message is the
// person's) gets the email_send call; a request whose last message is not
// a person's (the call's result) gets the answer. The scripted provider
// picks "the step after the one last chosen" for those, across sessions,
// so the answer is repeated for as many as may come in a row: at most
// one per conversation in flight between two inputs.
func script() string {
	steps := []models.ScriptStep{{
		Match: "weekly report",
		ToolCalls: []models.ScriptToolCall{{Name: tools.NameEmailSend,
			Arguments: json.RawMessage(`{"to":"` + recipient + `","subject":"Weekly report","body":"Here is the weekly report."}`)}},
	}}
	for range 256 {
		steps = append(steps, models.ScriptStep{Text: answer})
	}
	b, _ := json.Marshal(steps)
	return string(b)
}

// stack is the whole gateway on one store, with the HTTP API, the real
// email_send aimed at a loopback SMTP server, memory with its model pass,
// and a fake OpenAI server for that pass.
type stack struct {
	backend string
	env     *stacktest.Env
	store   *storetest.CountingStore
	smtp    *smtptest.Server
	client  *http.Client
	base    string // http://host:port

	// The memory model pass: its own fake model, so its calls are counted
	// apart, through a registry with the ledger as serve wires it.
	memModel *modeltest.OpenAI
	memReg   *models.Registry

	// Postgres only.
	pg     *postgres.Store
	tracer *counter
	stats  *pgx.Conn // untraced, for the server's counters
	// SQLite only.
	lite *sqlite.Store

	// streamPerTurn: each turn opens its own stream (from its input) and
	// closes it at the end of its run, as a client that follows one
	// request's answer does; else one stream stays open per session.
	streamPerTurn bool
}

// newStack builds a stack on backend ("sqlite" or "postgres"); a Postgres
// stack skips (or fails, with GATEHOUSE_TEST_REQUIRE_SERVICES=1) without
// GATEHOUSE_TEST_POSTGRES_URL. Everything is stopped when tb ends.
func newStack(tb testing.TB, backend string) *stack { return newStackWith(tb, backend, nil) }

// newStackWith is newStack with metrics observing it (m nil: metrics
// off).
func newStackWith(tb testing.TB, backend string, m stacktest.Metrics) *stack {
	tb.Helper()
	ctx := context.Background()
	s := &stack{backend: backend}
	var st store.Store
	switch backend {
	case "sqlite":
		l, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(tb.TempDir(), "gatehouse.db")})
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { l.Close() })
		s.lite, st = l, l
	case "postgres":
		url := testenv.PostgresURL(tb)
		s.tracer = newCounter()
		p := storetest.OpenPostgres(tb, postgres.Config{URL: url, Tracer: s.tracer})
		s.pg, st = p, p
		c, err := pgx.Connect(ctx, url)
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { c.Close(context.Background()) })
		s.stats = c
	default:
		tb.Fatalf("unknown backend %q", backend)
	}
	s.store = &storetest.CountingStore{Store: st}
	var envStore store.Store = s.store
	if r, ok := st.(store.Relay); ok {
		// Streams follow their sessions as on the store itself (on
		// Postgres: stream_followers, NOTIFY), and that is counted.
		envStore = storetest.CountingRelay{CountingStore: s.store, Relay: r}
	}

	s.smtp = smtptest.Start(tb)
	// The server hands every message to Arrived too (100 deep) and blocks
	// when nobody reads it.
	done, drained := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(drained)
		for {
			select {
			case <-s.smtp.Arrived:
			case <-done:
				return
			}
		}
	}()
	tb.Cleanup(func() { close(done); <-drained })

	s.memModel = modeltest.NewOpenAI(tb, "memory-key")
	s.memModel.SetDefault(modeltest.Reply{Text: `{"facts":[]}`})

	email := tools.NewEmailSend(tools.EmailConfig{SMTPURL: s.smtp.URL(), From: "gatehouse@example.com", Timeout: 10 * time.Second})
	s.env = stacktest.NewEnv(tb, nil, stacktest.EnvOptions{
		Store:       envStore,
		Tools:       []tools.Tool{email},
		Script:      script(),
		Memory:      true,
		MemoryTools: true,
		ModelPass:   true,
		// serve's default: a claim without a wake-up once a second.
		Poll: time.Second,
		// serve's default: the gate sweeper once a second.
		GateSweep: time.Second,
		HTTP:      &httpapi.Config{},
		Metrics:   m,
	})
	reg, err := models.New(models.Config{Selection: "openai:memory-model", OpenAIAPIKey: "memory-key", OpenAIBaseURL: s.memModel.BaseURL(),
		RetryBase: time.Millisecond, MaxRetries: 1, Ledger: supervisor.Ledger(s.env.Kernel, nil)})
	if err != nil {
		tb.Fatal(err)
	}
	s.memReg = reg
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	s.client = &http.Client{Transport: tr}
	tb.Cleanup(tr.CloseIdleConnections)
	s.base = "http://" + s.env.Addr
	return s
}

// runMemoryJobs runs the memory model pass's due jobs, as memory.Worker
// does in serve, and returns how many attempts ran.
func (s *stack) runMemoryJobs(ctx context.Context) (int, error) {
	return s.env.Memory.Flush(ctx, supervisor.ModelExtractor(s.memReg))
}

// memoryCalls counts the requests the memory model got that are the
// model pass's extraction calls.
func (s *stack) memoryCalls() int {
	n := 0
	for _, r := range s.memModel.Requests() {
		if bytes.Contains(r.Body, []byte(extractMark)) {
			n++
		}
	}
	return n
}

// turnsPerSession is how many approval turns a session holds: the
// benchmark's b.N turns are sessions of this many turns, one after another
// in each (the person's next message once the answer is in), so that the
// memory pass, which reads memory.Config.Batch (default 5) turns of one
// person in one session with one model call, is measured as it runs in a
// conversation rather than once per one-turn session.
const turnsPerSession = 5

// outcome is what one turn saw on its session's stream.
type outcome struct {
	session   string
	turn      int          // 0, 1, … within the session
	inputSeq  int64        // the user.message's seq
	runID     int64        // the run the input queued
	gateID    string       // the card's gate, opened after inputSeq
	decided   gh.GateState // from the decision's answer and gate.decided
	toolError bool
	messageID string // the Message-ID email_send's result names
	answer    string
	took      time.Duration // from the input's POST to the run's end on the stream
}

type streamEvent struct {
	Seq     int64           `json:"seq"`
	Kind    gh.Kind         `json:"kind"`
	Payload json.RawMessage `json:"payload"`
}

// turnTimeout is what a session may take per turn.
const turnTimeout = 60 * time.Second

// conversation is one session of turns approval turns as a client drives
// it: for each turn the input, the stream read to the turn's card, the
// approval, the stream read to the answer and the end of the turn's run;
// the next turn's input goes in after that. One stream stays attached for
// the whole session, opened after the first input from that input on, so
// every turn reads on from where the last one stopped; a turn takes only
// events after its own input (its seq) and the end of its own run (its
// runId), never an earlier turn's card or answer. It returns what each
// turn it ran saw.
func (s *stack) conversation(ctx context.Context, session string, turns int) ([]outcome, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Duration(turns)*turnTimeout)
	defer cancel()
	var (
		sse  *sseReader
		outs []outcome
	)
	for t := range turns {
		out := outcome{session: session, turn: t}
		start := time.Now()
		var in struct {
			Seq       int64 `json:"seq"`
			RunID     int64 `json:"runId"`
			Duplicate bool  `json:"duplicate"`
		}
		body := map[string]string{"text": prompt, "requestId": fmt.Sprintf("r-%s-%d", session, t)}
		if err := s.post(ctx, "/v1/sessions/"+session+"/input", body, http.StatusAccepted, &in); err != nil {
			return outs, fmt.Errorf("turn %d: input: %w", t, err)
		}
		if in.Duplicate || in.Seq <= 0 || in.RunID <= 0 {
			return outs, fmt.Errorf("turn %d: input answered %+v", t, in)
		}
		out.inputSeq, out.runID = in.Seq, in.RunID
		var perTurn io.ReadCloser
		if s.streamPerTurn {
			body, err := s.stream(ctx, session, in.Seq-1)
			if err != nil {
				return outs, err
			}
			perTurn, sse = body, newSSE(body)
		} else if sse == nil {
			// The session exists from its first input on: attach, from
			// that input.
			body, err := s.stream(ctx, session, in.Seq-1)
			if err != nil {
				return outs, err
			}
			defer body.Close()
			sse = newSSE(body)
		}
		err := s.turn(ctx, sse, &out)
		if perTurn != nil {
			perTurn.Close()
		}
		if err != nil {
			return outs, fmt.Errorf("turn %d: %w", t, err)
		}
		out.took = time.Since(start)
		outs = append(outs, out)
	}
	return outs, nil
}

// stream attaches to session's SSE stream from after seq (Last-Event-ID)
// and returns its body.
func (s *stack) stream(ctx context.Context, session string, after int64) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.base+"/v1/sessions/"+session+"/stream", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Last-Event-ID", strconv.FormatInt(after, 10))
	res, err := s.client.Do(s.env.Authorize(req))
	if err != nil {
		return nil, fmt.Errorf("stream: %w", err)
	}
	if res.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		return nil, fmt.Errorf("stream: %d %s", res.StatusCode, b)
	}
	return res.Body, nil
}

// turn reads the session's stream for the turn whose input out.inputSeq
// is (queueing run out.runID): up to its card, the approval, then up to
// its answer and its run's end. Events at or before the input are an
// earlier turn's and skipped.
func (s *stack) turn(ctx context.Context, sse *sseReader, out *outcome) error {
	next := func() (streamEvent, error) {
		for {
			ev, err := sse.next()
			if err != nil || ev.Seq > out.inputSeq {
				return ev, err
			}
		}
	}

	// Up to the card.
	for out.gateID == "" {
		ev, err := next()
		if err != nil {
			return fmt.Errorf("stream before the card: %w", err)
		}
		switch ev.Kind {
		case gh.KindGateOpened:
			var g gh.GateOpened
			if err := json.Unmarshal(ev.Payload, &g); err != nil {
				return err
			}
			if g.Tool != tools.NameEmailSend {
				return fmt.Errorf("a card for %q", g.Tool)
			}
			out.gateID = g.GateID
		case gh.KindAssistantMessage:
			var a gh.AssistantMessage
			json.Unmarshal(ev.Payload, &a)
			if a.StopReason != gh.StopToolUse {
				return fmt.Errorf("an answer before the card: %s %s %s", a.StopReason, a.Text, a.Error)
			}
		case gh.KindRunFinished:
			var f gh.RunFinished
			json.Unmarshal(ev.Payload, &f)
			if f.RunID == out.runID && f.Status != "awaiting_approval" {
				return fmt.Errorf("run %d ended (%s) before the card", f.RunID, f.Status)
			}
		}
	}

	var d struct {
		Decision gh.GateState `json:"decision"`
		Won      bool         `json:"won"`
	}
	if err := s.post(ctx, "/v1/gates/"+out.gateID+"/decision", map[string]string{"decision": "approve"}, http.StatusOK, &d); err != nil {
		return fmt.Errorf("decision: %w", err)
	}
	if d.Decision != gh.GateApproved || !d.Won {
		return fmt.Errorf("decision answered %+v", d)
	}

	// Up to the answer and the end of the run that gave it.
	for {
		ev, err := next()
		if err != nil {
			return fmt.Errorf("stream after the decision: %w", err)
		}
		switch ev.Kind {
		case gh.KindGateDecided:
			var g gh.GateDecided
			json.Unmarshal(ev.Payload, &g)
			if g.GateID == out.gateID {
				out.decided = g.Decision
			}
		case gh.KindToolResult:
			var r gh.ToolResult
			json.Unmarshal(ev.Payload, &r)
			out.toolError = out.toolError || r.IsError
			if r.Name == tools.NameEmailSend {
				if m := messageIDRe.FindStringSubmatch(r.Content); m != nil {
					out.messageID = m[1]
				}
			}
		case gh.KindAssistantMessage:
			var a gh.AssistantMessage
			json.Unmarshal(ev.Payload, &a)
			if a.StopReason == gh.StopEndTurn && len(a.ToolCalls) == 0 {
				out.answer = a.Text
			} else if a.StopReason != gh.StopToolUse {
				return fmt.Errorf("the turn ended with %s: %s %s", a.StopReason, a.Error, a.Text)
			}
		case gh.KindRunFinished:
			var f gh.RunFinished
			json.Unmarshal(ev.Payload, &f)
			if f.RunID != out.runID {
				return fmt.Errorf("run %d finished (%s) in the turn of run %d", f.RunID, f.Status, out.runID)
			}
			if out.answer != "" && f.Status == "done" {
				return nil
			}
		}
	}
}

// messageIDRe finds the Message-ID in email_send's result ("sent to …,
// Message-ID <…>").
var messageIDRe = regexp.MustCompile(`Message-ID <?([^<>\s;]+)>?`)

// post sends body as JSON and wants status; into, if set, gets the answer.
func (s *stack) post(ctx context.Context, path string, body any, status int, into any) error {
	b, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.base+path, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := s.client.Do(s.env.Authorize(req))
	if err != nil {
		return err
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if res.StatusCode != status {
		return fmt.Errorf("%s: %d %s", path, res.StatusCode, raw)
	}
	if into != nil {
		return json.Unmarshal(raw, into)
	}
	return nil
}

// sseReader reads committed events off an SSE stream (partials, comments
// and heartbeats skipped).
type sseReader struct{ sc *bufio.Scanner }

func newSSE(r io.Reader) *sseReader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	return &sseReader{sc: sc}
}

func (r *sseReader) next() (streamEvent, error) {
	var id, data string
	for r.sc.Scan() {
		line := r.sc.Text()
		switch {
		case line == "":
			if id != "" && data != "" {
				var ev streamEvent
				if err := json.Unmarshal([]byte(data), &ev); err != nil {
					return ev, fmt.Errorf("frame %s: %w", id, err)
				}
				return ev, nil
			}
			id, data = "", ""
		case strings.HasPrefix(line, "id:"):
			id = strings.TrimSpace(strings.TrimPrefix(line, "id:"))
		case strings.HasPrefix(line, "data:"):
			data += strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " ")
		}
	}
	if err := r.sc.Err(); err != nil {
		return streamEvent{}, err
	}
	return streamEvent{}, io.ErrUnexpectedEOF
}

// runConversations runs n turns as sessions named prefix-0 … of per
// turns each (the last holds what is left when per does not divide n), c
// sessions at a time, each session's turns one after another, and returns
// what each turn saw, session by session in order (turn i of session k at
// k*per+i), and the first error. A session that failed leaves its later
// turns zero.
func (s *stack) runConversations(ctx context.Context, prefix string, n, per, c int) ([]outcome, error) {
	outs := make([]outcome, n)
	sessions := (n + per - 1) / per
	next := make(chan int)
	var (
		mu    sync.Mutex
		first error
		wg    sync.WaitGroup
	)
	for range c {
		wg.Go(func() {
			for k := range next {
				lo := k * per
				hi := min(lo+per, n)
				got, err := s.conversation(ctx, fmt.Sprintf("%s-%d", prefix, k), hi-lo)
				copy(outs[lo:hi], got)
				if err != nil {
					mu.Lock()
					if first == nil {
						first = fmt.Errorf("session %d: %w", k, err)
					}
					mu.Unlock()
				}
			}
		})
	}
	for k := range sessions {
		next <- k
	}
	close(next)
	wg.Wait()
	return outs, first
}

// checkMails says what is wrong with the mail the SMTP server got for
// the turns whose outcomes are outs: each turn's call ran without error
// and gave the answer, exactly one mail arrived per turn, all to the
// recipient, and each turn's mail is the one its result names (its
// Message-ID, distinct per turn).
func (s *stack) checkMails(outs []outcome) error {
	want := map[string]int{} // Message-ID → index in outs
	for i, o := range outs {
		if o.decided != gh.GateApproved || o.toolError || o.answer != answer || o.messageID == "" {
			return fmt.Errorf("turn %d (%s #%d) saw %+v", i, o.session, o.turn, o)
		}
		if j, dup := want[o.messageID]; dup {
			return fmt.Errorf("turns %d and %d name one Message-ID %s", j, i, o.messageID)
		}
		want[o.messageID] = i
	}
	mails := s.smtp.Mails()
	if len(mails) != len(outs) {
		return fmt.Errorf("%d mails for %d turns", len(mails), len(outs))
	}
	seen := map[string]bool{}
	for _, m := range mails {
		if len(m.To) != 1 || m.To[0] != recipient {
			return fmt.Errorf("a mail to %v", m.To)
		}
		id := strings.Trim(strings.TrimSpace(m.MessageID), "<>")
		if seen[id] {
			return fmt.Errorf("two mails with Message-Id %s", m.MessageID)
		}
		seen[id] = true
		if _, ok := want[id]; !ok {
			return fmt.Errorf("a mail with Message-Id %s no turn's result names", m.MessageID)
		}
	}
	return nil
}

// quiesce waits until the store has committed nothing for 300 ms (the
// memory write after a turn's settle comes after the stream saw the run
// end), at most 10 s.
func (s *stack) quiesce() {
	last, still := s.store.Commits(), 0
	for deadline := time.Now().Add(10 * time.Second); still < 3 && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
		if n := s.store.Commits(); n != last {
			last, still = n, 0
		} else {
			still++
		}
	}
}
