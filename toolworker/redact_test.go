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
		"smtp://agent:hunter22@mail:587":                      "hunter22",
		"redis://:r3dis-token@127.0.0.1:6379":                 "r3dis-token",
		"redis://r3dis-token@127.0.0.1:6379":                  "r3dis-token", // token-style: the user is the token
		"rediss://t0ken-tls@cache:6380/0":                     "t0ken-tls",
		"redis://default:pw-of-acl@cache":                     "pw-of-acl", // an ACL user name is not a secret
		"postgres://tok3n@db/x":                               "",          // a bare user name is not a secret
		"http://admin@host/path":                              "",
		"http://host/path":                                    "",
		"":                                                    "",
		"postgres://u@db/x?sslmode=require&password=qu3ry-pw": "qu3ry-pw",
		"https://api.example/v1?key=AIzaSy-goog":              "AIzaSy-goog",
		"https://api.example/v1?api_key=k-123456":             "k-123456",
		"https://api.example/v1?access_token=at-999&page=2":   "at-999",
		"https://api.example/v1?X-Auth=xa-42424":              "xa-42424",
		"https://api.example/v1?client_secret=cs-7777&x=1":    "cs-7777",
		"smtp://mail:587?pass=smtp-pw":                        "smtp-pw",
		"https://api.example/v1?api-version=2024-06-01":       "",
		"host=db password=xyz123 user=u":                      "xyz123",
		"host=db user=u password='x y z' dbname=app":          "x y z",
		`password='it\'s a \\ secret' host=db`:                `it's a \ secret`,
		"host = db  password = spaced-pw   sslmode=disable":   "spaced-pw",
		"host=db user=u dbname=app":                           "",
		"/var/lib/gatehouse/g.db":                             "",
	} {
		got := strings.Join(toolworker.SecretsOfURL(raw), ",")
		if got != want {
			t.Errorf("SecretsOfURL(%q) = %q, want %q", raw, got, want)
		}
	}
}

// Each form a secret leaks in, embedded in the text it leaks with, is
// redacted; ordinary text around and apart from it is left alone.
func TestRedactorCatchesEncodedForms(t *testing.T) {
	const pw = "Tr0ub4dor/&3x"
	r := toolworker.NewRedactor(pw)
	b64 := base64.StdEncoding.EncodeToString
	b64url := base64.URLEncoding.EncodeToString
	type tc struct{ name, text string }
	var cases []tc
	for _, user := range []string{"b", "bo", "bob", "bobb", "bobby"} {
		cases = append(cases,
			tc{"basic user " + user, "Authorization: Basic " + b64([]byte(user+":"+pw)) + "\r\n"},
			tc{"basic-url user " + user, "token=" + b64url([]byte(user+":"+pw)) + ";"},
			tc{"basic with suffix user " + user, "x " + b64([]byte(user+":"+pw+"@host")) + " y"},
		)
	}
	cases = append(cases,
		tc{"AUTH PLAIN", "C: AUTH PLAIN " + b64([]byte("\x00bob\x00"+pw)) + "\r\nS: 235 ok"},
		tc{"AUTH PLAIN with authzid", "AUTH PLAIN " + b64([]byte("bob\x00bob\x00"+pw))},
		tc{"lowercase query escape", "GET /login?u=bob&p=Tr0ub4dor%2f%263x HTTP/1.1"},
		tc{"uppercase query escape", "GET /login?u=bob&p=Tr0ub4dor%2F%263x HTTP/1.1"},
		tc{"lowercase path escape", "dial smtp://bob:Tr0ub4dor%2f&3x@mail"},
		tc{"JSON", `{"password":"Tr0ub4dor/\u00263x"}`},
		tc{"JSON without HTML escaping", `{"password":"Tr0ub4dor/&3x"}`},
		tc{"JSON with escaped slash", `{"password":"Tr0ub4dor\/&3x"}`},
		tc{"JSON with escaped slash and HTML escaping", `{"password":"Tr0ub4dor\/\u00263x"}`},
	)
	for _, c := range cases {
		got := r.Redact(c.text)
		if !strings.Contains(got, toolworker.Redacted) {
			t.Errorf("%s: %q not redacted", c.name, c.text)
		}
	}

	// Whatever comes before and after the secret in the encoded data.
	for pre := range 7 {
		for post := range 4 {
			data := []byte(strings.Repeat("\xa5", pre) + pw + strings.Repeat("\x5a", post))
			for _, e := range []string{b64(data), b64url(data), base64.RawStdEncoding.EncodeToString(data)} {
				if got := r.Redact(e); !strings.Contains(got, toolworker.Redacted) {
					t.Errorf("base64 of %d bytes + secret + %d bytes: %s not redacted", pre, post, e)
				}
			}
		}
	}

	// Non-ASCII secrets in JSON as Python writes them (\u escapes).
	if got := toolworker.NewRedactor("pässwörd-1").Redact(`{"p": "p\u00e4ssw\u00f6rd-1"}`); got != `{"p": "[redacted]"}` {
		t.Errorf("ASCII-escaped JSON: %s", got)
	}
	// A short secret and the least fragment of its base64 forms.
	if got := toolworker.NewRedactor("abcd").Redact("Basic " + b64([]byte("u:abcd"))); !strings.Contains(got, toolworker.Redacted) {
		t.Errorf("short secret in Basic: %s", got)
	}

	for _, plain := range []string{
		"The quick brown fox jumps over the lazy dog. HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8",
		"Authorization: Basic " + b64([]byte("bob:another-password")),
		"GET /search?q=Troubadour%2F%263 HTTP/1.1",
		`{"user":"bob","note":"Tr0ub4dor and 3x"}`,
		b64([]byte("Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore.")),
	} {
		if got := r.Redact(plain); got != plain {
			t.Errorf("ordinary text changed: %q -> %q", plain, got)
		}
	}
}

// A tool that prints a configured secret (a remote server echoing a key, a
// command reading a file) has it replaced before the result is committed:
// neither the model nor the log ever holds it.
func TestToolResultsAreCommittedWithSecretsRedacted(t *testing.T) {
	const secret = "gh-api-token-5ecr3t"
	leak := toolworker.FuncTool{ToolName: "leak", Fn: func(context.Context, tools.Call) (string, error) {
		return "environ: GATEHOUSE_API_TOKEN=" + secret, nil
	}}
	fail := toolworker.FuncTool{ToolName: "fail", Fn: func(context.Context, tools.Call) (string, error) {
		return "", &echoErr{secret}
	}}
	k, out, err := runBatchOnce(t, toolworker.Config{Tools: tools.NewRegistry(leak, fail), ApprovalTimeout: time.Minute, Secrets: []string{secret}},
		gh.ToolCall{ID: "c1", Name: "leak", Arguments: json.RawMessage(`{}`)}, gh.ToolCall{ID: "c2", Name: "fail", Arguments: json.RawMessage(`{}`)})
	if err != nil || len(out.Results) != 2 {
		t.Fatalf("batch: %v %+v", err, out)
	}
	evs, err := k.Events(context.Background(), "s1", 0, 100)
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
	nul := toolworker.FuncTool{ToolName: "environ", Fn: func(context.Context, tools.Call) (string, error) {
		return "PATH=/bin\x00HOME=/w\x00", nil
	}}
	_, out, err := runBatchOnce(t, toolworker.Config{Tools: tools.NewRegistry(nul)}, gh.ToolCall{ID: "c1", Name: "environ", Arguments: json.RawMessage(`{}`)})
	if err != nil || len(out.Results) != 1 {
		t.Fatalf("batch: %v %+v", err, out)
	}
	if got := out.Results[0].Result.Content; got != `PATH=/bin\x00HOME=/w\x00` {
		t.Fatalf("committed %q", got)
	}
}

// runBatchOnce runs one tool batch through a worker built from cfg, over a
// fresh SQLite store, in a claimed run of a session "s1" that has one
// input. It returns the kernel, to read what was committed.
func runBatchOnce(t *testing.T, cfg toolworker.Config, calls ...gh.ToolCall) (*kernel.Kernel, toolworker.BatchResult, error) {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(t.TempDir(), "g.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	k := kernel.New(st, kernel.Config{})
	cfg.Kernel, cfg.Gates = k, sqlGates(st, k)
	w := toolworker.New(cfg)
	if _, _, err := k.CreateSession(ctx, gh.Session{ID: "s1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := k.EdgeCommit(ctx, kernel.EdgeInput{SessionID: "s1", Event: gh.NewEvent{Kind: gh.KindUserMessage, Payload: json.RawMessage(`{"text":"go"}`)}}); err != nil {
		t.Fatal(err)
	}
	l, ok, err := k.Claim(ctx, "w")
	if err != nil || !ok {
		t.Fatalf("claim: %v %v", ok, err)
	}
	out, err := w.RunBatch(ctx, l, toolworker.Asker{}, calls)
	return k, out, err
}
