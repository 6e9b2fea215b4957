package main

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/gatehouse/gatehouse/adapters/telegram/telegramtest"
	"github.com/gatehouse/gatehouse/internal/testing/testenv"
	"github.com/gatehouse/gatehouse/models/modeltest"
)

// Pairing as a stranger and an operator meet it, with real processes: the
// gateway long-polls the fake Telegram, `gatehouse pair approve` runs as a
// process of its own against the same database, and the API revokes.
// What is decided holds across restarts of the gateway.

var pairingCodeRE = regexp.MustCompile(`\b[A-HJKMNP-Z2-9]{8}\b`)

func TestPairingThroughTheBinary(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		testPairingThroughTheBinary(t, "GATEHOUSE_DATA_DIR="+filepath.Join(t.TempDir(), "data"))
	})
	t.Run("postgres", func(t *testing.T) {
		testPairingThroughTheBinary(t, "GATEHOUSE_DATABASE_URL="+testenv.PostgresURL(t))
	})
}

func testPairingThroughTheBinary(t *testing.T, database string) {
	const token = "pairing-test-token"
	tg := telegramtest.NewTelegram(t, telegramtest.TelegramOptions{})
	model := modeltest.NewOpenAI(t, "test-key")
	model.SetDefault(modeltest.Reply{Text: "Hello, friend."})
	envs := append([]string{database, "GATEHOUSE_PAIRING=on", "GATEHOUSE_API_TOKEN=" + token,
		"GATEHOUSE_MODEL=openai:test-model", "OPENAI_API_KEY=test-key", "OPENAI_BASE_URL=" + model.BaseURL(), "GATEHOUSE_MODEL_RETRIES=1"},
		telegramEnvs(tg)...)
	if strings.HasPrefix(database, "GATEHOUSE_DATABASE_URL") {
		// The data directory holds only the spool then; one for all runs.
		envs = append(envs, "GATEHOUSE_DATA_DIR="+filepath.Join(t.TempDir(), "data"))
	}
	codes := func() []string {
		var out []string
		for _, m := range tg.Messages("bob") {
			if c := pairingCodeRE.FindString(m.Text); c != "" && strings.Contains(m.Text, "admin") {
				out = append(out, c)
			}
		}
		return out
	}
	answers := func() int { return count(chatTexts(tg, "bob"), "Hello, friend.") }
	// heard reports whether any model request carried text (turns and the
	// memory passes after them both ask the model).
	heard := func(text string) bool {
		for _, r := range model.Requests() {
			if strings.Contains(string(r.Body), text) {
				return true
			}
		}
		return false
	}

	p := start(t, envs...)
	// A stranger writes: they get a code, the model hears nothing.
	tg.Say("bob", "bob", "hi, who are you?", false)
	waitUntil(t, "the pairing code in bob's chat", func() bool { return len(codes()) == 1 })
	code := codes()[0]
	log := receiveLog(t, p.addr, token, "pairing")
	if len(log) != 1 || !strings.Contains(log[0].Detail, code) || log[0].UserID != tg.UserID("bob") {
		t.Fatalf("the receive log shows %+v; want bob's message dropped with the code %s", log, code)
	}
	// Until approved, writing again gets nothing.
	tg.Say("bob", "bob", "hello?", false)
	waitUntil(t, "the second message in the receive log", func() bool { return len(receiveLog(t, p.addr, token, "pairing")) == 2 })
	if len(model.Requests()) != 0 || len(codes()) != 1 {
		t.Fatalf("before approval: %d model requests, codes %q", len(model.Requests()), codes())
	}
	if c := pairingCodeRE.FindString(chatTexts(tg, "bob")[0]); c != code {
		t.Fatalf("the code sent is %q, the receive log's %q", c, code)
	}

	// The operator approves from the command line, a process of its own.
	if out, code := pair(t, envs, "approve", "NOPE2345"); code != 1 || !strings.Contains(out, "unknown-pairing-code") {
		t.Fatalf("an unknown code: exit %d\n%s", code, out)
	}
	out, exit := pair(t, envs, "approve", strings.ToLower(code))
	if exit != 0 || !strings.Contains(out, "approved "+code) || !strings.Contains(out, tg.UserID("bob")) {
		t.Fatalf("pair approve: exit %d\n%s", exit, out)
	}
	if out, _ := pair(t, envs, "list"); !strings.Contains(out, tg.UserID("bob")) || !strings.Contains(out, "cli") {
		t.Fatalf("pair list after approval:\n%s", out)
	}
	tg.Say("bob", "bob", "so, can we talk?", false)
	waitUntil(t, "bob answered", func() bool { return answers() == 1 })

	// Across a restart bob is still in.
	p.stopWith(t, syscall.SIGTERM)
	p = start(t, envs...)
	tg.Say("bob", "bob", "still there?", false)
	waitUntil(t, "bob answered after a restart", func() bool { return answers() == 2 })

	// Revoked through the API (which wants the token): dropped again.
	if status := deletePerson(t, p.addr, "", tg.UserID("bob")); status != http.StatusUnauthorized {
		t.Fatalf("revoking without the token: %d", status)
	}
	if status := deletePerson(t, p.addr, token, tg.UserID("bob")); status != http.StatusOK {
		t.Fatalf("revoke: %d", status)
	}
	if status := deletePerson(t, p.addr, token, tg.UserID("bob")); status != http.StatusNotFound {
		t.Fatalf("revoking twice: %d", status)
	}
	tg.Say("bob", "bob", "hello again", false)
	waitUntil(t, "a new code for bob", func() bool { return len(codes()) == 2 })

	// And across another restart bob stays out.
	p.stopWith(t, syscall.SIGTERM)
	p = start(t, envs...)
	tg.Say("bob", "bob", "anyone?", false)
	waitUntil(t, "the message after the restart dropped", func() bool { return len(receiveLog(t, p.addr, token, "pairing")) == 4 })
	if answers() != 2 || heard("hello again") || heard("anyone?") || heard("hi, who are you?") || heard("hello?") || !heard("still there?") {
		t.Fatalf("after revocation: %d answers, chat %q; the model heard what it must not, or not what it should", answers(), chatTexts(tg, "bob"))
	}
	if codes := codes(); len(codes) != 2 {
		t.Fatalf("codes sent: %q; want one before approval and one after revocation", codes)
	}
	p.stopWith(t, syscall.SIGTERM)
}

type receiveRow struct {
	UserID string `json:"userId"`
	Reason string `json:"reason"`
	Detail string `json:"detail"`
}

func receiveLog(t *testing.T, addr, token, reason string) []receiveRow {
	t.Helper()
	req, _ := http.NewRequest("GET", "http://"+addr+"/v1/receive-log?reason="+reason, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var body struct{ Entries []receiveRow }
	if err := json.NewDecoder(res.Body).Decode(&body); err != nil || res.StatusCode != 200 {
		t.Fatalf("receive log: %d %v", res.StatusCode, err)
	}
	return body.Entries
}

func deletePerson(t *testing.T, addr, token, user string) int {
	t.Helper()
	req, _ := http.NewRequest("DELETE", "http://"+addr+"/v1/people/telegram/"+user, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

// pair runs `gatehouse pair args…` with the gateway's settings and
// returns its output and exit code.
func pair(t *testing.T, envs []string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(binary(t), append([]string{"pair"}, args...)...)
	cmd.Env = append(os.Environ(), envs...)
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return string(out), ee.ExitCode()
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(out), 0
}

// `gatehouse pair` refuses what it cannot do with the usage, before it
// opens anything, and works on a database no gateway has served yet.
func TestPairCommandArguments(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	vars := env(map[string]string{"GATEHOUSE_DATA_DIR": dir, "GATEHOUSE_PAIRING": "on"})
	for _, args := range [][]string{{"pair"}, {"pair", "approve"}, {"pair", "approve", "A", "B"}, {"pair", "revoke", "telegram"}, {"pair", "nope"}} {
		var out strings.Builder
		if code := run(args, &out, &out, vars); code != 2 || !strings.Contains(out.String(), "gatehouse pair approve CODE") {
			t.Errorf("%q: exit %d\n%s", args, code, out.String())
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("a refused command opened the database: %v", err)
	}
	var out strings.Builder
	if code := run([]string{"pair", "--config", filepath.Join(t.TempDir(), "none.yaml"), "list"}, &out, &out, vars); code != 2 {
		t.Fatalf("a missing config file: exit %d\n%s", code, out.String())
	}
	out.Reset()
	if code := run([]string{"pair", "list"}, &out, &out, vars); code != 0 || !strings.Contains(out.String(), "PENDING CODE") {
		t.Fatalf("list on a new database: exit %d\n%s", code, out.String())
	}
	out.Reset()
	if code := run([]string{"pair", "revoke", "telegram", "42"}, &out, &out, vars); code != 1 || !strings.Contains(out.String(), "not-found") {
		t.Fatalf("revoking someone not let in: exit %d\n%s", code, out.String())
	}
	out.Reset()
	if code := run([]string{"pair", "approve", "AB-CD"}, &out, &out, vars); code != 1 || !strings.Contains(out.String(), "unknown-pairing-code") {
		t.Fatalf("approving a malformed code: exit %d\n%s", code, out.String())
	}
}
