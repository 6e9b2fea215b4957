package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gatehouse/gatehouse/internal/testing/testenv"
	"github.com/gatehouse/gatehouse/models"
)

// The first run: the binary started with no configuration at all (an
// empty environment but for the address and the data directory) says
// once that no model is configured — in the log, in /v1/info and in the
// web chat — and the web chat's "Try the tour" leads to an approval card;
// Approve delivers the mail to the dev mailbox, shown in the chat and in
// /admin; Deny says so. A screenshot of each step is kept
// (GATEHOUSE_TEST_ARTIFACTS, else test-artifacts/tour in the repository).
func TestFirstRunTour(t *testing.T) {
	exe := tourChromium(t)
	addr := freeAddr(t)
	data := filepath.Join(t.TempDir(), "data")
	cmd := exec.Command(binary(t), "serve")
	cmd.Env = []string{"GATEHOUSE_ADDR=" + addr, "GATEHOUSE_DATA_DIR=" + data}
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("gatehouse output:\n%s", out.String())
		}
	})
	base := "http://" + addr
	waitUntil(t, "the gateway answering /healthz", func() bool {
		resp, err := noKeepAlive.Get(base + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})

	// The log says it once, and gives the login link of the token this
	// first start generated.
	waitUntil(t, "the start logged", func() bool { return strings.Contains(out.String(), "login=") })
	login := loginLink(t, out.String(), base)
	useToken(t, addr, tokenOfLink(t, login))
	if n := strings.Count(out.String(), "Set GATEHOUSE_MODEL"); n != 1 {
		t.Errorf("the log says how to set a model %d times, want once:\n%s", n, out.String())
	}
	// /v1/info says it, as the missing model.
	var info struct {
		ModelConfigured bool `json:"modelConfigured"`
		Missing         []struct{ Setting, Message string }
	}
	getJSON(t, base+"/v1/info", &info)
	if info.ModelConfigured || len(info.Missing) == 0 || info.Missing[0].Setting != "GATEHOUSE_MODEL" || info.Missing[0].Message != models.NotConfiguredHint {
		t.Fatalf("/v1/info: %+v", info)
	}

	artifacts := tourArtifacts(t)
	ctx := tourBrowser(t, exe)
	shot := func(name string) {
		t.Helper()
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		if err := os.WriteFile(filepath.Join(artifacts, name), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	until := func(what, expr string) {
		t.Helper()
		if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](expr,
			chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(30*time.Second))); err != nil {
			text, _ := chromedp.Run(context.WithoutCancel(ctx), chromedp.Evaluate[string](`document.body.innerText`))
			t.Fatalf("waiting for %s: %v\npage:\n%s", what, err, text)
		}
	}
	do := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	count := func(s string) int {
		t.Helper()
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](fmt.Sprintf(`document.body.innerText.split(%q).length - 1`, s)))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	send := func(text string) {
		t.Helper()
		do("send "+text, chromedp.SendKeys(chromedp.CSS(`[data-testid="composer-input"]`), text),
			chromedp.Click(chromedp.CSS(`[data-testid="send-button"]`)))
	}
	const ask = "Email Sara that the report is ready."

	// 0. The login link from the start log: it trades the token for a
	// session cookie and leaves the address bar without it.
	do("open the login link", chromedp.Navigate(login), chromedp.WaitVisible(chromedp.CSS(`[data-testid="try-tour"]`)))
	if loc, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.href`)); err != nil || loc != base+"/" {
		t.Fatalf("after the login link the address bar shows %q (%v), want %s/", loc, err, base)
	}
	if c, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.cookie`)); err != nil || strings.Contains(c, "gatehouse_session") {
		t.Fatalf("the session cookie is readable by the page (%q, %v): it must be HttpOnly", c, err)
	}

	// 1. No model: said once, with the way out.
	do("open a new chat", chromedp.Navigate(base+"/"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="try-tour"]`)),
		chromedp.Click(chromedp.CSS(`[data-testid="new-chat"]`)),
		chromedp.WaitEnabled(chromedp.CSS(`[data-testid="composer-input"]`)))
	send("hello")
	until("the failed turn", `!!document.querySelector('[data-testid="message"][data-error="true"]')`)
	if n := count("Set GATEHOUSE_MODEL"); n != 1 {
		t.Errorf("the web chat says how to set a model %d times, want once", n)
	}
	shot("01-no-model.png")

	// 2. The tour, for this chat.
	do("try the tour", chromedp.Click(chromedp.CSS(`[data-testid="try-tour"]`)))
	until("the tour label", `!document.querySelector('[data-testid="tour-badge"]').hidden && !!document.querySelector('[data-testid="tour-note"]')`)
	shot("02-tour.png")

	// 3. The approval card.
	send(ask)
	until("the approval card", `!!document.querySelector('[data-testid="gate-card"] [data-testid="gate-approve"]')`)
	card, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('[data-testid="gate-card"]').innerText`))
	if err != nil || !strings.Contains(card, "email_send") || !strings.Contains(card, "sara@example.com") || !strings.Contains(card, "tour") {
		t.Fatalf("the card: %q %v", card, err)
	}
	shot("03-card.png")

	// 4. Approve: delivered to the dev mailbox, said in the chat.
	do("approve", chromedp.Click(chromedp.CSS(`[data-testid="gate-approve"]`)))
	until("the answer after Approve", `[...document.querySelectorAll('[data-testid="message"][data-role="assistant"]')].some(m => m.innerText.includes('delivered to the dev mailbox'))`)
	until("the decision on the card", `document.querySelector('[data-testid="gate-card"]').dataset.decision === 'approved'`)
	chatURL, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`location.href`))
	shot("04-approved.png")

	// 5. /admin lists the mail.
	do("open /admin", chromedp.Navigate(base+"/admin"))
	until("the mail in the dev mailbox", `[...document.querySelectorAll('[data-testid="devmail-row"]')].some(r => r.innerText.includes('sara@example.com') && r.innerText.includes('The report is ready'))`)
	shot("05-admin-devmail.png")
	mails, err := os.ReadDir(filepath.Join(data, "devmail"))
	if err != nil || len(mails) != 1 {
		t.Fatalf("dev mailbox files: %v %v", mails, err)
	}

	// 6. Deny: nothing delivered, and the answer says so.
	do("back to the chat", chromedp.Navigate(chatURL),
		chromedp.WaitEnabled(chromedp.CSS(`[data-testid="composer-input"]`)))
	until("the chat loaded", `document.querySelectorAll('[data-testid="gate-card"]').length === 1`)
	send(ask)
	until("a second card", `!!document.querySelector('[data-testid="gate-card"] [data-testid="gate-deny"]')`)
	do("deny", chromedp.Click(chromedp.CSS(`[data-testid="gate-deny"]`)))
	until("the answer after Deny", `[...document.querySelectorAll('[data-testid="message"][data-role="assistant"]')].some(m => m.innerText.includes('you denied it'))`)
	shot("06-denied.png")
	if mails, _ := os.ReadDir(filepath.Join(data, "devmail")); len(mails) != 1 {
		t.Fatalf("after Deny the dev mailbox has %d mails, want 1", len(mails))
	}

	// 7. Another chat is not the tour.
	do("a second chat", chromedp.Navigate(base+"/"), chromedp.Click(chromedp.CSS(`[data-testid="new-chat"]`)),
		chromedp.WaitEnabled(chromedp.CSS(`[data-testid="composer-input"]`)))
	until("no tour in the new chat", `document.querySelector('[data-testid="tour-badge"]').hidden && !!document.querySelector('[data-testid="try-tour"]')`)
	t.Logf("screenshots: %s", artifacts)
	fmt.Fprintf(os.Stderr, "TestFirstRunTour screenshots: %s\n", artifacts)
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("%s: %v", url, err)
	}
}

// tourArtifacts is where the screenshots go: GATEHOUSE_TEST_ARTIFACTS, or
// test-artifacts/tour at the repository's root (git-ignored).
func tourArtifacts(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("GATEHOUSE_TEST_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join("..", "..", "test-artifacts")
	}
	dir, err := filepath.Abs(filepath.Join(dir, "tour"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// tourChromium finds the browser as the web chat's tests do; without one
// the test is skipped (failed when services are required).
func tourChromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("GATEHOUSE_TEST_CHROMIUM"); p != "" {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	for _, name := range []string{"/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if testenv.RequireServices() {
		t.Fatal("no chromium found (apt-get install chromium, or set GATEHOUSE_TEST_CHROMIUM)")
	}
	t.Skip("no chromium found (apt-get install chromium, or set GATEHOUSE_TEST_CHROMIUM)")
	return ""
}

// tourBrowser starts a headless chromium with a fresh profile; it ends
// with the test.
func tourBrowser(t *testing.T, exe string) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1100, 800))
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); acancel() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium %s: %v", exe, err)
	}
	tctx, tcancel := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(tcancel)
	return tctx
}
