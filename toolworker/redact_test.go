package toolworker_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/kernel"
	"github.com/gatehouse/gatehouse/store/sqlite"
	"github.com/gatehouse/gatehouse/tools"
	"github.com/gatehouse/gatehouse/toolworker"
)

func TestRedactorReplacesEverySecretForm(t *testing.T) {
	r := toolworker.NewRedactor("sk-live-0123456789", "p@ss w/rd", "", "ab")
	in := "key=sk-live-0123456789 url=smtp://u:p%40ss+w%2Frd@h basic=" + base64.StdEncoding.EncodeToString([]byte("p@ss w/rd")) + " plain=p@ss w/rd short=ab"
	got := r.Redact(in)
	for _, leaked := range []string{"sk-live-0123456789", "p@ss w/rd", "p%40ss+w%2Frd", base64.StdEncoding.EncodeToString([]byte("p@ss w/rd"))} {
		if strings.Contains(got, leaked) {
			t.Errorf("%q survives redaction: %s", leaked, got)
		}
	}
	if strings.Count(got, toolworker.Redacted) != 4 {
		t.Errorf("want 4 redactions, got %s", got)
	}
	// Values too short to be secrets are left alone, or every word would go.
	if !strings.Contains(got, "short=ab") {
		t.Errorf("a two-letter value was redacted: %s", got)
	}
	if (toolworker.Redactor{}).Redact("x") != "x" {
		t.Error("the zero Redactor changed text")
	}
}

func TestSecretsOfURL(t *testing.T) {
	for raw, want := range map[string]string{
		"smtp://agent:hunter22@mail:587":      "hunter22",
		"redis://:r3dis-token@127.0.0.1:6379": "r3dis-token",
		"postgres://tok3n@db/x":               "tok3n",
		"http://host/path":                    "",
	} {
		got := strings.Join(toolworker.SecretsOfURL(raw), ",")
		if got != want {
			t.Errorf("SecretsOfURL(%q) = %q, want %q", raw, got, want)
		}
	}
}

// A tool that prints a configured secret (a remote server echoing a key, a
// command reading a file) has it replaced before the result is committed:
// neither the model nor the log ever holds it.
func TestToolResultsAreCommittedWithSecretsRedacted(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(t.TempDir(), "g.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	k := kernel.New(st, kernel.Config{})
	const secret = "gh-api-token-5ecr3t"
	leak := toolworker.FuncTool{ToolName: "leak", Fn: func(context.Context, tools.Call) (string, error) {
		return "environ: GATEHOUSE_API_TOKEN=" + secret, nil
	}}
	fail := toolworker.FuncTool{ToolName: "fail", Fn: func(context.Context, tools.Call) (string, error) {
		return "", &echoErr{secret}
	}}
	w := toolworker.New(toolworker.Config{Kernel: k, Tools: tools.NewRegistry(leak, fail), ApprovalTimeout: time.Minute, Secrets: []string{secret}})
	k.CreateSession(ctx, gh.Session{ID: "s1"})
	if _, err := k.EdgeCommit(ctx, kernel.EdgeInput{SessionID: "s1", Event: gh.NewEvent{Kind: gh.KindUserMessage, Payload: json.RawMessage(`{"text":"go"}`)}}); err != nil {
		t.Fatal(err)
	}
	l, ok, err := k.Claim(ctx, "w")
	if err != nil || !ok {
		t.Fatalf("claim: %v %v", ok, err)
	}
	out, err := w.RunBatch(ctx, l, []gh.ToolCall{{ID: "c1", Name: "leak", Arguments: json.RawMessage(`{}`)}, {ID: "c2", Name: "fail", Arguments: json.RawMessage(`{}`)}})
	if err != nil || len(out.Results) != 2 {
		t.Fatalf("batch: %v %+v", err, out)
	}
	evs, err := k.Events(ctx, "s1", 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var results int
	for _, ev := range evs {
		if strings.Contains(string(ev.Payload), secret) {
			t.Errorf("event %d (%s) holds the secret: %s", ev.Seq, ev.Kind, ev.Payload)
		}
		if ev.Kind == gh.KindToolResult {
			results++
			if !strings.Contains(string(ev.Payload), toolworker.Redacted) {
				t.Errorf("result %s lacks the redaction mark", ev.Payload)
			}
		}
	}
	if results != 2 {
		t.Fatalf("%d tool results committed, want 2", results)
	}
}

type echoErr struct{ s string }

func (e *echoErr) Error() string { return "server said: bad key " + e.s }

// Output with NUL bytes (a /proc file, a binary file) commits, with the
// bytes shown, instead of failing the commit and leaving the call without
// a result.
func TestToolOutputWithNULCommits(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(t.TempDir(), "g.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	k := kernel.New(st, kernel.Config{})
	nul := toolworker.FuncTool{ToolName: "environ", Fn: func(context.Context, tools.Call) (string, error) {
		return "PATH=/bin\x00HOME=/w\x00", nil
	}}
	w := toolworker.New(toolworker.Config{Kernel: k, Tools: tools.NewRegistry(nul)})
	k.CreateSession(ctx, gh.Session{ID: "s1"})
	k.EdgeCommit(ctx, kernel.EdgeInput{SessionID: "s1", Event: gh.NewEvent{Kind: gh.KindUserMessage, Payload: json.RawMessage(`{"text":"go"}`)}})
	l, ok, err := k.Claim(ctx, "w")
	if err != nil || !ok {
		t.Fatalf("claim: %v %v", ok, err)
	}
	out, err := w.RunBatch(ctx, l, []gh.ToolCall{{ID: "c1", Name: "environ", Arguments: json.RawMessage(`{}`)}})
	if err != nil || len(out.Results) != 1 {
		t.Fatalf("batch: %v %+v", err, out)
	}
	if got := out.Results[0].Result.Content; got != `PATH=/bin\x00HOME=/w\x00` {
		t.Fatalf("committed %q", got)
	}
}
