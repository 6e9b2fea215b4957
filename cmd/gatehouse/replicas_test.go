package main

import (
	"encoding/json"
	"fmt"
	"io"
	"log"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/adapters/telegram/telegramtest"
	"github.com/gatehouse/gatehouse/internal/testing/testenv"
)

// Replicas in CI (issue 14, part 7): three real gateway processes on one
// Postgres and Redis, one fake Telegram. With turns in flight on every
// replica, the one holding the Telegram connection is killed with
// SIGKILL and another is sent SIGTERM. What a user of the chats would
// notice: every message gets its answer exactly once, the bot keeps
// reading its chats within the platform lease's TTL plus one renewal, and
// the replica told to stop drains and exits 0.

const (
	replicaCount    = 3
	replicaChats    = 6 // two turns for each replica's two workers
	replicaLeaseTTL = 3 * time.Second
)

func TestReplicasSurviveKillOfTheConnectionHolderAndADrain(t *testing.T) {
	pg := testenv.PostgresURL(t)
	rd := testenv.RedisURL(t)
	tg := telegramtest.NewTelegram(t, telegramtest.TelegramOptions{})
	model := newReplicaModel(t, 300*time.Millisecond)

	var chats, users []string
	for i := 1; i <= replicaChats; i++ {
		chats = append(chats, fmt.Sprintf("user%d", i))
		users = append(users, tg.UserID(chats[i-1]))
	}
	reps := make([]*proc, replicaCount)
	proxies := make([]*tgProxy, replicaCount)
	for i := range reps {
		// Each replica reaches the Bot API and the model through its own
		// address, so the test can tell which replica polls and which
		// runs a turn.
		proxies[i] = newTGProxy(t, tg.URL)
		reps[i] = start(t,
			"GATEHOUSE_DATABASE_URL="+pg, "GATEHOUSE_REDIS_URL="+rd,
			"GATEHOUSE_MODEL=openai:test-model", "OPENAI_API_KEY=test-key", fmt.Sprintf("OPENAI_BASE_URL=%s/r%d/v1", model.srv.URL, i),
			"TELEGRAM_BOT_TOKEN="+tg.Token, "TELEGRAM_API_URL="+proxies[i].srv.URL, "TELEGRAM_ALLOWED_USERS="+strings.Join(users, ","),
			"GATEHOUSE_LEASE_TTL="+replicaLeaseTTL.String(), "GATEHOUSE_WORKERS=2", "GATEHOUSE_MEMORY_BATCH=20",
			"GATEHOUSE_DRAIN_TIMEOUT=20s")
	}

	// One replica holds the connection; the others stand by.
	holder := -1
	waitUntil(t, "one replica connected to Telegram, the others on standby", func() bool {
		connected, standby := -1, 0
		for i, p := range reps {
			switch platformState(p.addr) {
			case "connected":
				if connected >= 0 {
					t.Fatalf("replicas %d and %d both report the Telegram connection", connected, i)
				}
				connected = i
			case "standby":
				standby++
			}
		}
		holder = connected
		return connected >= 0 && standby == replicaCount-1 && len(proxies[connected].pollsAfter(time.Time{})) > 0
	})
	t.Logf("replica %d holds the Telegram connection", holder)

	expected := map[string]string{} // tag → its chat
	n := 0
	say := func() {
		for _, c := range chats {
			n++
			tag := fmt.Sprintf("msg-%02d", n)
			expected[tag] = c
			tg.Say(c, c, "Please answer "+tag+".", false)
		}
	}

	// Round 1: the stream flows through all three replicas.
	say()
	waitUntil(t, "round 1 answered", func() bool { return len(answeredTags(tg, chats)) == len(expected) })

	// Round 2 is held in the model: every replica runs two turns, and no
	// answer is on its way out (a row a replica dies sending is a dead
	// letter by design, "outcome unknown", which this test is not about).
	model.hold()
	say()
	waitUntil(t, "round 2's six turns in flight, two on each replica", func() bool {
		w := model.held()
		return w[0] == 2 && w[1] == 2 && w[2] == 2
	})
	waitUntil(t, "nothing left to send", func() bool {
		return outboxCount(t, reps[holder].addr, "pending") == 0 && outboxCount(t, reps[holder].addr, "sending") == 0
	})
	for i, p := range proxies {
		if i != holder && len(p.pollsAfter(time.Time{})) > 0 {
			t.Fatalf("replica %d polled Telegram while replica %d held the connection", i, holder)
		}
	}

	// Kill the holder; tell another to stop.
	drainer := (holder + 1) % replicaCount
	survivor := (holder + 2) % replicaCount
	killedAt := time.Now()
	if err := reps[holder].cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-reps[holder].done
	if err := reps[drainer].cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// Round 3 is written while nobody reads the chats; the drainer's
	// turns may finish now.
	say()
	model.release()

	// (2) A surviving replica reads the chats again within the lease's
	// TTL plus one renewal (a third of it). The slack is for a loaded
	// 2-core machine, not a speed target.
	bound := replicaLeaseTTL + replicaLeaseTTL/3 + replicaLeaseTTL
	var took time.Duration
	by := -1
	waitUntil(t, "a surviving replica polling Telegram", func() bool {
		for _, i := range []int{drainer, survivor} {
			if polls := proxies[i].pollsAfter(killedAt); len(polls) > 0 && (by < 0 || polls[0].Sub(killedAt) < took) {
				by, took = i, polls[0].Sub(killedAt)
			}
		}
		return by >= 0
	})
	t.Logf("replica %d took the Telegram connection over %v after the kill (bound %v: TTL %v + renewal %v + slack %v)",
		by, took.Round(time.Millisecond), bound, replicaLeaseTTL, replicaLeaseTTL/3, replicaLeaseTTL)
	if took > bound {
		t.Errorf("the Telegram connection was taken over %v after the kill; want within the lease TTL plus one renewal (%v, slack included)", took, bound)
	}

	// (3) The replica told to stop drains and exits 0.
	select {
	case err := <-reps[drainer].done:
		if err != nil {
			t.Fatalf("the drained replica exited with %v\n%s", err, reps[drainer].out.String())
		}
	case <-time.After(45 * time.Second):
		t.Fatalf("the replica sent SIGTERM did not exit")
	}
	if !strings.Contains(reps[drainer].out.String(), "drained") {
		t.Fatalf("no drain in the stopped replica's log:\n%s", reps[drainer].out.String())
	}

	// (1) Every message answered exactly once, in its own chat. A wait
	// that runs out goes on to say which answers are missing.
	for deadline := time.Now().Add(time.Minute); len(answeredTags(tg, chats)) < len(expected) && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(replicaLeaseTTL) // room for a second copy to show up, if one were coming
	got := answeredTags(tg, chats)
	var wrong []string
	for tag, c := range expected {
		if where := got[tag]; len(where) != 1 || where[0] != c {
			wrong = append(wrong, fmt.Sprintf("%s (from %s) answered in %v", tag, c, where))
		}
	}
	for tag := range got {
		if expected[tag] == "" {
			wrong = append(wrong, fmt.Sprintf("unknown %s answered in %v", tag, got[tag]))
		}
	}
	for _, c := range chats {
		for _, m := range tg.Messages(c) {
			if !answerRE.MatchString(m.Text) {
				wrong = append(wrong, fmt.Sprintf("unexpected message in %s: %q", c, m.Text))
			}
		}
	}
	if len(wrong) > 0 {
		slices.Sort(wrong)
		t.Errorf("after the kill and the drain:\n%s\ndead letters: %s", strings.Join(wrong, "\n"), getText(t, "http://"+reps[survivor].addr+"/v1/outbox?state=dead"))
	}
	if d := outboxCount(t, reps[survivor].addr, "dead"); d != 0 {
		t.Errorf("%d dead letters: %s", d, getText(t, "http://"+reps[survivor].addr+"/v1/outbox?state=dead"))
	}
	waitUntil(t, "the survivor holding the connection", func() bool { return platformState(reps[survivor].addr) == "connected" })
	if t.Failed() {
		t.Logf("killed replica %d:\n%s", holder, reps[holder].out.String())
	}
	reps[survivor].stopWith(t, syscall.SIGTERM)
}

var (
	tagRE    = regexp.MustCompile(`msg-\d+`)
	answerRE = regexp.MustCompile(`^Answer to msg-\d+( msg-\d+)*\.$`)
)

// answeredTags maps each message tag to the chats it was answered in,
// once per answer the bot sent.
func answeredTags(tg *telegramtest.TelegramFake, chats []string) map[string][]string {
	out := map[string][]string{}
	for _, c := range chats {
		for _, m := range tg.Messages(c) {
			if !answerRE.MatchString(m.Text) {
				continue
			}
			for _, tag := range tagRE.FindAllString(m.Text, -1) {
				out[tag] = append(out[tag], c)
			}
		}
	}
	return out
}

// platformState is the Telegram state a replica reports for itself
// (connected, standby, …), "" when it does not answer.
func platformState(addr string) string {
	res, err := noKeepAlive.Get("http://" + addr + "/v1/adapters")
	if err != nil {
		return ""
	}
	defer res.Body.Close()
	var body struct {
		Adapters []struct{ Platform, State string }
	}
	if json.NewDecoder(res.Body).Decode(&body) != nil {
		return ""
	}
	for _, a := range body.Adapters {
		if a.Platform == "telegram" {
			return a.State
		}
	}
	return ""
}

func outboxCount(t *testing.T, addr, state string) int {
	t.Helper()
	var body struct{ Entries []json.RawMessage }
	if err := json.Unmarshal([]byte(getText(t, "http://"+addr+"/v1/outbox?platform=telegram&state="+state)), &body); err != nil {
		t.Fatalf("outbox: %v", err)
	}
	return len(body.Entries)
}

// tgProxy stands between one replica and the Telegram fake and notes when
// that replica calls getUpdates.
type tgProxy struct {
	srv   *httptest.Server
	mu    sync.Mutex
	polls []time.Time
}

func newTGProxy(t *testing.T, target string) *tgProxy {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.ErrorLog = log.New(io.Discard, "", 0) // a killed replica's poll is cancelled
	p := &tgProxy{}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.EqualFold(path.Base(r.URL.Path), "getUpdates") {
			p.mu.Lock()
			p.polls = append(p.polls, time.Now())
			p.mu.Unlock()
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *tgProxy) pollsAfter(t0 time.Time) []time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []time.Time
	for _, at := range p.polls {
		if at.After(t0) {
			out = append(out, at)
		}
	}
	return out
}

// replicaModel is an OpenAI-compatible streaming model that answers the
// tags of the user messages after the last assistant message ("Answer to
// msg-03 msg-09."), slowly, and can be held: while held, requests wait
// (each replica's under /r<i>/v1) until it is released or their client
// leaves.
type replicaModel struct {
	srv   *httptest.Server
	delay time.Duration

	mu      sync.Mutex
	gate    chan struct{} // closed while requests may pass
	waiting map[int]int
}

func newReplicaModel(t *testing.T, delay time.Duration) *replicaModel {
	m := &replicaModel{delay: delay, gate: make(chan struct{}), waiting: map[int]int{}}
	close(m.gate)
	m.srv = httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(m.srv.Close)
	t.Cleanup(m.release) // no request held past the test
	return m
}

func (m *replicaModel) hold() {
	m.mu.Lock()
	defer m.mu.Unlock()
	select {
	case <-m.gate:
		m.gate = make(chan struct{})
	default:
	}
}

func (m *replicaModel) release() {
	m.mu.Lock()
	defer m.mu.Unlock()
	select {
	case <-m.gate:
	default:
		close(m.gate)
	}
}

// held counts the requests waiting at the gate, by replica.
func (m *replicaModel) held() map[int]int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.waiting)
}

func (m *replicaModel) serve(w http.ResponseWriter, r *http.Request) {
	var replica int
	if _, err := fmt.Sscanf(r.URL.Path, "/r%d/v1/chat/completions", &replica); err != nil || r.Method != http.MethodPost {
		http.Error(w, `{"error":{"message":"unknown route","type":"invalid_request_error"}}`, http.StatusNotFound)
		return
	}
	var req struct {
		Model    string `json:"model"`
		Stream   bool   `json:"stream"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || !req.Stream {
		http.Error(w, `{"error":{"message":"want a streaming request","type":"invalid_request_error"}}`, http.StatusBadRequest)
		return
	}
	last := -1
	for i, msg := range req.Messages {
		if msg.Role == "assistant" {
			last = i
		}
	}
	var tags []string
	for _, msg := range req.Messages[last+1:] {
		if msg.Role != "user" {
			continue
		}
		for _, tag := range tagRE.FindAllString(contentText(msg.Content), -1) {
			if !slices.Contains(tags, tag) {
				tags = append(tags, tag)
			}
		}
	}
	text := "Nothing to answer."
	if len(tags) > 0 {
		text = "Answer to " + strings.Join(tags, " ") + "."
	}

	select {
	case <-time.After(m.delay):
	case <-r.Context().Done():
		return
	}
	m.mu.Lock()
	gate := m.gate
	m.waiting[replica]++
	m.mu.Unlock()
	select {
	case <-gate:
	case <-r.Context().Done():
	}
	m.mu.Lock()
	m.waiting[replica]--
	m.mu.Unlock()
	if r.Context().Err() != nil {
		return
	}

	w.Header().Set("Content-Type", "text/event-stream")
	id, created := fmt.Sprintf("chatcmpl-replica-%d", time.Now().UnixNano()), time.Now().Unix()
	send := func(v map[string]any) {
		v["id"], v["object"], v["created"], v["model"] = id, "chat.completion.chunk", created, req.Model
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "data: %s\n\n", b)
		w.(http.Flusher).Flush()
	}
	choice := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
	}
	send(choice(map[string]any{"role": "assistant", "content": ""}, nil))
	send(choice(map[string]any{"content": text}, nil))
	send(choice(map[string]any{}, "stop"))
	send(map[string]any{"choices": []any{}, "usage": map[string]any{"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}})
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// contentText is a message's text, whether its content is a string or a
// list of parts.
func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct{ Text string }
	_ = json.Unmarshal(raw, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text + "\n")
	}
	return b.String()
}
