package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/adapters/adaptertest"
	"github.com/gatehouse/gatehouse/httpapi"
	"github.com/gatehouse/gatehouse/httpapi/web"
	"github.com/gatehouse/gatehouse/internal/testing/stacktest"
	"github.com/gatehouse/gatehouse/kernel"
	"github.com/gatehouse/gatehouse/tools"
	"github.com/gatehouse/gatehouse/toolworker"
)

// waitFor bounds how long a test waits for something that must happen; it
// is a hang guard, not a speed assertion.
const waitFor = 30 * time.Second

// chromium finds the browser: GATEHOUSE_TEST_CHROMIUM, else Debian's
// chromium on the PATH. Without one the test is skipped, unless
// GATEHOUSE_TEST_REQUIRE_SERVICES=1 makes that a failure (CI).
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("GATEHOUSE_TEST_CHROMIUM"); p != "" {
		if _, err := os.Stat(p); err == nil {
			return p
		}
		missing(t, fmt.Sprintf("GATEHOUSE_TEST_CHROMIUM=%s does not exist", p))
	}
	for _, name := range []string{"/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	missing(t, "no chromium found (apt-get install chromium, or set GATEHOUSE_TEST_CHROMIUM)")
	return ""
}

func missing(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("GATEHOUSE_TEST_REQUIRE_SERVICES") == "1" {
		t.Fatal(why)
	}
	t.Skip(why)
}

// startStack starts the real Gatehouse on loopback with the web chat:
// internal/testing/stacktest's whole stack (SQLite, the kernel, the model — here
// o.Script for the scripted one —, the supervisor unless o.NoWorkers, the
// gates) with the HTTP API serving web.Handler(), and no chat platform
// unless platform is given. It returns the page's base URL.
func startStack(t *testing.T, platform adaptertest.Factory, o stacktest.EnvOptions) (*stacktest.Env, string) {
	t.Helper()
	if o.HTTP == nil {
		o.HTTP = &httpapi.Config{}
	}
	// A test that names its own token drives the token dialog itself;
	// every other browser logs in first, as a person opening the login
	// link from the start log does.
	ownToken := o.HTTP.APIToken != ""
	o.HTTP.Web = web.Handler()
	o.Poll = 100 * time.Millisecond
	e := stacktest.NewEnv(t, platform, o)
	base := "http://" + e.Addr
	if !ownToken {
		logins.Store(t, base+"/login?token="+url.QueryEscape(e.Token))
	}
	return e, base
}

// logins holds, by test, the login link browser opens first.
var logins sync.Map

// browser starts a headless chromium with a fresh profile and returns a
// tab. Its cleanup waits for the browser to exit, before the profile
// directory and the servers go.
func browser(t *testing.T) context.Context {
	t.Helper()
	exe := chromium(t)
	profile := t.TempDir()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true),
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(1100, 800),
	)
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	t.Cleanup(func() {
		cancel()
		acancel()
	})
	// Start the browser now, so a broken install fails here, clearly.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium %s: %v", exe, err)
	}
	if link, ok := logins.Load(t); ok {
		if err := chromedp.Do(ctx, chromedp.Navigate(link.(string))); err != nil {
			t.Fatalf("open the login link: %v", err)
		}
	}
	// An uncaught exception or a console.error in the page fails the test.
	var mu sync.Mutex
	var problems []string
	if err := chromedp.Listen(ctx, func(ev any) {
		var msg string
		switch ev := ev.(type) {
		case *runtime.EventExceptionThrown:
			d := ev.ExceptionDetails
			msg = fmt.Sprintf("uncaught exception: %s %s:%d", d.Text, d.URL, d.LineNumber+1)
			if d.Exception != nil {
				msg += " " + d.Exception.Description
			}
		case *runtime.EventConsoleAPICalled:
			if ev.Type != runtime.ConsoleAPICalledTypeError {
				return
			}
			msg = "console.error:"
			for _, a := range ev.Args {
				msg += " " + string(a.Value) + a.Description
			}
		default:
			return
		}
		mu.Lock()
		problems = append(problems, msg)
		mu.Unlock()
	}); err != nil {
		t.Fatalf("listen: %v", err)
	}
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, p := range problems {
			t.Errorf("page: %s", p)
		}
	})
	tctx, tcancel := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(tcancel)
	return tctx
}

func css(s string) chromedp.CSS { return chromedp.CSS(s) }

// bubble is a rendered message as the page shows it.
type bubble struct {
	Role   string `json:"role"`
	Text   string `json:"text"`
	Error  bool   `json:"error"`
	Queued bool   `json:"queued"`
	Tags   int    `json:"tags"` // element children inside the text: must be 0
}

const bubblesJS = `Array.from(document.querySelectorAll('[data-testid="message"]')).map(m => {
  const b = m.querySelector('.bubble');
  return {role: m.dataset.role, text: b ? b.textContent : '', error: m.dataset.error === 'true',
          queued: m.dataset.queued === 'true', tags: b ? b.querySelectorAll('b,script,img').length : 0};
})`

func bubbles(t *testing.T, ctx context.Context) []bubble {
	t.Helper()
	bs, err := chromedp.Run(ctx, chromedp.Evaluate[[]bubble](bubblesJS))
	if err != nil {
		t.Fatalf("read bubbles: %v", err)
	}
	return bs
}

// until polls a JavaScript predicate in the page.
func until(t *testing.T, ctx context.Context, what, expr string) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](expr,
		chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(waitFor))); err != nil {
		bs, _ := chromedp.Run(context.WithoutCancel(ctx), chromedp.Evaluate[[]bubble](bubblesJS))
		t.Fatalf("waiting for %s: %v (bubbles now: %+v)", what, err, bs)
	}
}

func do(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	dir := os.Getenv("GATEHOUSE_TEST_SCREENSHOTS")
	if dir == "" {
		dir = t.TempDir()
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
}

// newChat opens the page, starts a chat and returns its session id.
func newChat(t *testing.T, ctx context.Context, url string) string {
	t.Helper()
	do(t, ctx, "open the page",
		chromedp.Navigate(url+"/"),
		chromedp.WaitVisible(css(`[data-testid="new-chat"]`)),
		chromedp.Click(css(`[data-testid="new-chat"]`)),
		chromedp.WaitEnabled(css(`[data-testid="composer-input"]`)),
	)
	until(t, ctx, "the session in the URL", `location.hash.startsWith('#/s/')`)
	id, err := chromedp.Run(ctx, chromedp.Evaluate[string](`decodeURIComponent(location.hash.slice(4))`))
	if err != nil || id == "" {
		t.Fatalf("session id from the URL: %q %v", id, err)
	}
	until(t, ctx, "the session in the list",
		fmt.Sprintf(`!!document.querySelector('[data-testid="session-item"][data-session-id=%q][aria-current="page"]')`, id))
	return id
}

func sendMessage(t *testing.T, ctx context.Context, text string) {
	t.Helper()
	do(t, ctx, "send "+text,
		chromedp.SendKeys(css(`[data-testid="composer-input"]`), text),
		chromedp.Click(css(`[data-testid="send-button"]`)),
	)
}

const answer = "Hello! I am the scripted demo. <b>not bold</b> & done."

func TestBrowserChat(t *testing.T) {
	script := fmt.Sprintf(`[{"match": "hello", "text": %q}]`, answer)
	_, url := startStack(t, nil, stacktest.EnvOptions{Script: script})
	ctx := browser(t)

	newChat(t, ctx, url)
	sendMessage(t, ctx, "hello gatehouse")

	until(t, ctx, "the scripted answer",
		fmt.Sprintf(`Array.from(document.querySelectorAll('[data-testid="message"][data-role="assistant"] .bubble')).some(b => b.textContent === %q)`, answer))
	until(t, ctx, "the turn to end", `!document.querySelector('[data-testid="typing"],[data-testid="streaming"],[data-testid="pending"]') && !!document.querySelector('[data-testid="run-meta"]')`)

	want := []bubble{{Role: "user", Text: "hello gatehouse"}, {Role: "assistant", Text: answer}}
	if got := bubbles(t, ctx); !slices.Equal(got, want) {
		t.Fatalf("bubbles = %+v, want %+v", got, want)
	}
	input, err := chromedp.Run(ctx, chromedp.Value(css(`[data-testid="composer-input"]`)))
	if err != nil || input != "" {
		t.Errorf("composer after send = %q, %v; want it empty", input, err)
	}
	screenshot(t, ctx, "chat.png")

	// A reload shows the same conversation from the log: the same bubbles,
	// no duplicates.
	do(t, ctx, "reload", chromedp.Reload())
	until(t, ctx, "the conversation after the reload",
		`document.querySelectorAll('[data-testid="message"]').length >= 2 && !!document.querySelector('[data-testid="run-meta"]')`)
	if got := bubbles(t, ctx); !slices.Equal(got, want) {
		t.Fatalf("after reload: bubbles = %+v, want %+v", got, want)
	}

	// At phone width the chat list folds away and the conversation fits.
	do(t, ctx, "phone width", chromedp.EmulateViewport(390, 760, chromedp.EmulateMobile))
	until(t, ctx, "the menu button", `getComputedStyle(document.querySelector('[data-testid="menu-toggle"]')).display !== 'none'`)
	until(t, ctx, "the chat list to fold away", `document.querySelector('[data-testid="sidebar"]').getBoundingClientRect().right <= 0`)
	if wide, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.documentElement.scrollWidth > window.innerWidth + 1`)); err != nil || wide {
		t.Errorf("page wider than a phone: %v %v", wide, err)
	}
	screenshot(t, ctx, "chat-phone.png")
}

func TestBrowserFailedTurn(t *testing.T) {
	// model-unauthorized is not retried: the turn fails at once.
	_, url := startStack(t, nil, stacktest.EnvOptions{Script: `[{"error": "model-unauthorized"}, {"text": "It works now."}]`})
	ctx := browser(t)

	newChat(t, ctx, url)
	sendMessage(t, ctx, "will this work?")
	until(t, ctx, "the failure", `!!document.querySelector('[data-testid="message"][data-error="true"]')`)
	until(t, ctx, "the turn to end", `!document.querySelector('[data-testid="typing"]')`)

	bs := bubbles(t, ctx)
	if len(bs) != 2 || bs[0].Role != "user" || bs[0].Text != "will this work?" || !bs[1].Error {
		t.Fatalf("bubbles = %+v, want the input and one failure", bs)
	}
	if !strings.HasPrefix(bs[1].Text, "⚠️") || !strings.Contains(bs[1].Text, "scripted failure") {
		t.Errorf("failure text = %q, want ⚠️ and the error", bs[1].Text)
	}
	hint, err := chromedp.Run(ctx, chromedp.Text(css(`[data-testid="error-hint"]`)))
	if err != nil || !strings.Contains(hint, "refused the key") {
		t.Errorf("hint = %q, %v; want the provider hint", hint, err)
	}
	screenshot(t, ctx, "failed.png")

	// Retry runs the failed turn again (POST /retry): its answer follows,
	// and the button is gone with the failure it was for.
	do(t, ctx, "press Retry", chromedp.Click(css(`[data-testid="retry"]`)))
	until(t, ctx, "the retried answer", `[...document.querySelectorAll('[data-testid="message"][data-role="assistant"]')].some((m) => m.textContent.includes('It works now.'))`)
	until(t, ctx, "the Retry button gone", `!document.querySelector('[data-testid="retry"]')`)
	bs = bubbles(t, ctx)
	if last := bs[len(bs)-1]; last.Error || last.Text != "It works now." {
		t.Fatalf("bubbles after the retry = %+v", bs)
	}
}

// TestBrowserStreamingQueue drives the worker side by hand, so each step
// can be seen: partial text streams into a bubble that the committed
// answer replaces, and an input typed while the turn runs stays queued
// until the run.finished boundary.
func TestBrowserStreamingQueue(t *testing.T) {
	s, url := startStack(t, nil, stacktest.EnvOptions{NoWorkers: true})
	ctx := browser(t)
	bg := context.Background()

	id := newChat(t, ctx, url)
	sendMessage(t, ctx, "first question")
	until(t, ctx, "the input", `!!document.querySelector('[data-testid="message"][data-role="user"]')`)

	lease := claim(t, s.Kernel)
	if lease.SessionID != id {
		t.Fatalf("claimed session %q, want %q", lease.SessionID, id)
	}

	// Partial deltas show in one streaming bubble.
	const gen = "u1-a1"
	until(t, ctx, "the stream to connect", `document.querySelector('[data-testid="conn-status"]').dataset.state === 'live'`)
	for _, d := range []string{"Thinking ", "about <i>it</i>", "…"} {
		s.Kernel.PublishPartial(kernel.Partial{SessionID: id, GenerationID: gen, Text: d})
	}
	until(t, ctx, "the streaming text",
		`(document.querySelector('[data-testid="streaming"] .bubble') || {}).textContent === 'Thinking about <i>it</i>…'`)

	// An input sent while the turn runs is queued.
	sendMessage(t, ctx, "second question")
	until(t, ctx, "the queued input", `!!document.querySelector('[data-testid="message"][data-queued="true"]')`)

	// The committed answer replaces the streaming bubble; the queue does
	// not drain on an assistant message.
	commit(t, s.Kernel, lease, gh.KindAssistantMessage, gen, gh.AssistantMessage{
		GenerationID: gen, Text: "The first answer.", InputSeqs: []int64{1}, StopReason: gh.StopEndTurn,
	})
	until(t, ctx, "the answer", `Array.from(document.querySelectorAll('[data-testid="message"][data-role="assistant"]')).some(m => m.textContent === 'The first answer.')`)
	until(t, ctx, "the streaming bubble to go", `!document.querySelector('[data-testid="streaming"]')`)
	if bs := bubbles(t, ctx); len(bs) != 3 || !bs[2].Queued || bs[2].Text != "second question" {
		t.Fatalf("before run.finished: bubbles = %+v, want the second input still queued", bs)
	}

	// run.finished is the boundary: the queued input opens the next turn.
	finished, _ := json.Marshal(gh.RunFinished{RunID: lease.RunID, Status: "done", ModelRequests: 1, StopReason: gh.StopEndTurn, DurationMs: 1200})
	if _, err := s.Kernel.Finish(bg, lease, kernel.Settle{Outcome: gh.OutcomeDone, Events: []gh.NewEvent{{Kind: gh.KindRunFinished, Payload: finished}}}); err != nil {
		t.Fatalf("finish: %v", err)
	}
	until(t, ctx, "the queue to drain", `!document.querySelector('[data-testid="message"][data-queued="true"]')`)
	want := []bubble{
		{Role: "user", Text: "first question"},
		{Role: "assistant", Text: "The first answer."},
		{Role: "user", Text: "second question"},
	}
	if got := bubbles(t, ctx); !slices.Equal(got, want) {
		t.Fatalf("after run.finished: bubbles = %+v, want %+v", got, want)
	}

	// A guide with no turn running is committed as queued, and says so.
	edge(t, s.Kernel, id, gh.UserMessage{Text: "a guide", Delivery: gh.DeliveryQueue, RequestedDelivery: gh.DeliveryGuide, Source: "api"})
	edge(t, s.Kernel, id, gh.UserMessage{Text: "<script>alert(1)</script>", Delivery: gh.DeliveryQueue, Source: "api"})
	until(t, ctx, "the downgrade note", `!!document.querySelector('[data-testid="note-downgraded"]')`)
	screenshot(t, ctx, "streaming-queue.png")
	if bs := bubbles(t, ctx); bs[len(bs)-1].Text != "<script>alert(1)</script>" || bs[len(bs)-1].Tags != 0 {
		t.Errorf("payload text was not escaped: %+v", bs[len(bs)-1])
	}

	// The next turn uses a tool: the work folds under the turn, with the
	// tool's name and result.
	lease = claim(t, s.Kernel)
	commit(t, s.Kernel, lease, gh.KindAssistantMessage, "u2-a1", gh.AssistantMessage{
		GenerationID: "u2-a1", Text: "Let me look.", InputSeqs: []int64{2}, StopReason: gh.StopToolUse,
		ToolCalls: []gh.ToolCall{{ID: "tc_1", Name: "workspace.list", Arguments: json.RawMessage(`{"path":"."}`)}},
	})
	commit(t, s.Kernel, lease, gh.KindToolResult, "tc_1", gh.ToolResult{ToolCallID: "tc_1", Name: "workspace.list", Content: "src/ web/ docs/", DurationMs: 90})
	commit(t, s.Kernel, lease, gh.KindNotice, "", gh.Notice{Code: "model-fallback", Text: "scripted:a failed (model-timeout); answered by scripted:b"})
	commit(t, s.Kernel, lease, gh.KindAssistantMessage, "u2-a2", gh.AssistantMessage{
		GenerationID: "u2-a2", Text: "There are three folders.", InputSeqs: []int64{2}, StopReason: gh.StopEndTurn,
	})
	until(t, ctx, "the tool work", `(document.querySelector('[data-testid="tool-work"] summary') || {}).textContent === 'Used workspace.list'`)
	// Click only once the whole turn is shown: the notice and the answer
	// arriving re-render the turn, and a click between the two found a
	// node that was already gone.
	until(t, ctx, "the turn's answer", `document.body.innerText.includes('There are three folders.') && !!document.querySelector('[data-testid="notice"]')`)
	do(t, ctx, "open the tool work", chromedp.Click(css(`[data-testid="tool-work"] summary`)))
	until(t, ctx, "the tool result", `(document.querySelector('[data-testid="tool-result"]') || {}).textContent === 'src/ web/ docs/'`)
	until(t, ctx, "the notice", `(document.querySelector('[data-testid="notice"]') || {}).textContent === 'scripted:a failed (model-timeout); answered by scripted:b'`)
	screenshot(t, ctx, "tools.png")
}

// claim plays a worker: it waits for the session's queued run and claims it.
func claim(t *testing.T, k *kernel.Kernel) gh.Lease {
	t.Helper()
	var l gh.Lease
	stacktest.Eventually(t, "a run to claim", func() bool {
		var ok bool
		var err error
		if l, ok, err = k.Claim(context.Background(), "test-worker"); err != nil {
			t.Fatalf("claim: %v", err)
		}
		return ok
	})
	return l
}

func commit(t *testing.T, k *kernel.Kernel, l gh.Lease, kind gh.Kind, key string, payload any) {
	t.Helper()
	b, err := json.Marshal(payload)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := k.Commit(context.Background(), l, gh.NewEvent{Kind: kind, Key: key, Payload: b}); err != nil {
		t.Fatalf("commit %s: %v", kind, err)
	}
}

func edge(t *testing.T, k *kernel.Kernel, session string, u gh.UserMessage) {
	t.Helper()
	b, err := json.Marshal(u)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := k.EdgeCommit(context.Background(), kernel.EdgeInput{SessionID: session, Event: gh.NewEvent{Kind: gh.KindUserMessage, Payload: b}}); err != nil {
		t.Fatalf("edge commit: %v", err)
	}
}

// TestBrowserToken: with an API token the page asks for it once, keeps it,
// and uses it on fetch and on the stream.
func TestBrowserToken(t *testing.T) {
	_, url := startStack(t, nil, stacktest.EnvOptions{Script: `[{"text": "Authorised answer."}]`, HTTP: &httpapi.Config{APIToken: "s3cret-token"}})
	ctx := browser(t)

	do(t, ctx, "open the page and give the token",
		chromedp.Navigate(url+"/"),
		chromedp.WaitVisible(css(`[data-testid="token-input"]`)),
		chromedp.SendKeys(css(`[data-testid="token-input"]`), "s3cret-token"),
		chromedp.Click(css(`[data-testid="token-submit"]`)),
		chromedp.WaitNotVisible(css(`[data-testid="token-dialog"]`)),
		chromedp.Click(css(`[data-testid="new-chat"]`)),
		chromedp.WaitEnabled(css(`[data-testid="composer-input"]`)),
	)
	until(t, ctx, "the session in the URL", `location.hash.startsWith('#/s/')`)
	sendMessage(t, ctx, "are you there?")
	until(t, ctx, "the answer over the stream", `Array.from(document.querySelectorAll('[data-testid="message"][data-role="assistant"]')).some(m => m.textContent === 'Authorised answer.')`)

	do(t, ctx, "reload", chromedp.Reload())
	until(t, ctx, "the conversation after the reload", `document.querySelectorAll('[data-testid="message"]').length === 2`)
	if open, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelector('[data-testid="token-dialog"]').open`)); err != nil || open {
		t.Errorf("token dialog open after reload: %v %v; want the kept token used", open, err)
	}
	until(t, ctx, "the stream with the token", `document.querySelector('[data-testid="conn-status"]').dataset.state === 'live'`)
}

// The approval card: Approve in the page runs the effect once, the card
// shows who decided where, and a reload shows the same from the log.
func TestBrowserApproval(t *testing.T) {
	var sends atomic.Int32
	send := toolworker.FuncTool{ToolName: "send", ToolTier: tools.Danger, Desc: "send a thing",
		Fn: func(context.Context, tools.Call) (string, error) { sends.Add(1); return "sent", nil }}
	script := `[{"match": "please send", "toolCalls": [{"id": "call_1", "name": "send", "arguments": {"to": "x"}}]}, {"text": "Sent it."}]`
	_, url := startStack(t, nil, stacktest.EnvOptions{Script: script, Tools: []tools.Tool{send}})
	ctx := browser(t)
	newChat(t, ctx, url)
	sendMessage(t, ctx, "please send it")
	until(t, ctx, "the approval card", `!!document.querySelector('[data-testid="gate-card"] [data-testid="gate-approve"]')`)
	if sends.Load() != 0 {
		t.Fatal("the effect ran before approval")
	}
	screenshot(t, ctx, "approval-card.png")
	do(t, ctx, "approve", chromedp.Click(css(`[data-testid="gate-approve"]`)))
	until(t, ctx, "the decision on the card", `(document.querySelector('[data-testid="gate-outcome"]')||{}).textContent === "Approved by the operator via web"`)
	until(t, ctx, "the answer", `Array.from(document.querySelectorAll('[data-testid="message"][data-role="assistant"] .bubble')).some(b => b.textContent === "Sent it.")`)
	if n := sends.Load(); n != 1 {
		t.Fatalf("the effect ran %d times", n)
	}
	do(t, ctx, "reload", chromedp.Reload())
	until(t, ctx, "the decided card after the reload", `(document.querySelector('[data-testid="gate-outcome"]')||{}).textContent === "Approved by the operator via web" && !document.querySelector('[data-testid="gate-approve"]')`)
	screenshot(t, ctx, "approval-decided.png")
}

// What the agent remembers shows under the answers that used it, and in a
// panel where the person can forget it.
func TestBrowserMemory(t *testing.T) {
	script := `[{"match": "sara is", "text": "Noted."}, {"match": "what is", "text": "It is sara@example.com."}]`
	_, url := startStack(t, nil, stacktest.EnvOptions{Script: script, Memory: true})
	ctx := browser(t)
	newChat(t, ctx, url)
	sendMessage(t, ctx, "Sara is sara@example.com")
	until(t, ctx, "the first answer", `Array.from(document.querySelectorAll('[data-testid="message"][data-role="assistant"] .bubble')).some(b => b.textContent === "Noted.")`)
	until(t, ctx, "the turn to end", `!document.querySelector('[data-testid="typing"],[data-testid="pending"]')`)
	sendMessage(t, ctx, "What is Sara's email?")
	until(t, ctx, "the memory used by the answer", `((document.querySelector('[data-testid="memories-used"]')||{}).textContent||"").includes("sara@example.com")`)
	do(t, ctx, "open the memory panel", chromedp.Click(css(`[data-testid="memory-panel"] summary`)))
	until(t, ctx, "the remembered fact", `((document.querySelector('[data-testid="memory-item"]')||{}).textContent||"").includes("sara@example.com")`)
	screenshot(t, ctx, "memory.png")
	do(t, ctx, "forget it", chromedp.Click(css(`[data-testid="memory-forget"]`)))
	until(t, ctx, "the fact to be gone", `!document.querySelector('[data-testid="memory-item"]')`)
}
