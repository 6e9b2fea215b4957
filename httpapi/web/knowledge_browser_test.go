package web_test

import (
	"context"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/gatehouse/gatehouse/httpapi"
	"github.com/gatehouse/gatehouse/httpapi/knowledgeapi"
	"github.com/gatehouse/gatehouse/internal/testing/stacktest"
	"github.com/gatehouse/gatehouse/knowledge"
)

const runbook = `# Deploy runbook

## Rollback

To roll back a release, run the rollback job in the pipeline and tell the on-call engineer in the incidents channel.

## Certificates

TLS certificates renew automatically every sixty days through the ACME client.

## Backups

Database backups run nightly at two o'clock and are kept for thirty days.
`

// The admin page's Knowledge: a Markdown file uploaded into the shared
// collection is listed with its passages, a question shows the passage
// that would be given with its evidence and those under the floor, a
// binary file under a text name is refused on the form that sent it, and
// Delete removes the document.
func TestBrowserAdminKnowledge(t *testing.T) {
	// The knowledge endpoints need the stack's store, which exists once
	// the stack does: the handler is set then, before any request.
	var h atomic.Pointer[knowledgeapi.Handler]
	lazy := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.Load().ServeHTTP(w, r) })
	s, url := startStack(t, nil, stacktest.EnvOptions{NoWorkers: true, HTTP: &httpapi.Config{Knowledge: lazy}})
	log := slog.New(slog.DiscardHandler)
	lib, err := knowledge.New(s.Store, knowledge.Config{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	h.Store(knowledgeapi.New(knowledgeapi.Config{Library: lib, WriteError: httpapi.ErrorWriter(log)}))

	dir := t.TempDir()
	md := filepath.Join(dir, "runbook.md")
	bin := filepath.Join(dir, "photo.md")
	if err := os.WriteFile(md, []byte(runbook), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, append([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), make([]byte, 64)...), 0o644); err != nil {
		t.Fatal(err)
	}

	ctx := browser(t)
	do(t, ctx, "open the admin page", chromedp.Navigate(url+"/admin"))
	until(t, ctx, "the knowledge section, empty", `!document.getElementById("knowledge-section").hidden && document.querySelector("#documents tbody").textContent === "nothing here"`)
	noBanner(t, ctx)

	do(t, ctx, "upload the runbook", chromedp.SetUploadFiles(css(`[data-testid="knowledge-file"]`), []string{md}), chromedp.Click(css(`[data-testid="knowledge-upload"]`)))
	until(t, ctx, "the upload confirmed", `document.querySelector('[data-testid="knowledge-upload-status"]').textContent === "Added runbook.md: 3 passages."`)
	until(t, ctx, "the runbook listed with its passages and size", `Array.from(document.querySelectorAll('[data-testid="documents-row"]')).some(r => {
		const c = Array.from(r.cells).map(td => td.textContent);
		return c[0] === "Deploy runbook — runbook.md" && c[1] === "shared" && c[2] === "text/markdown" && c[3] === "`+strconv.Itoa(len(runbook))+` B" && c[4] === "3" && c[5] === "admin (operator)" && c[6] !== "";
	})`)
	until(t, ctx, "the shared collection counted", `Array.from(document.querySelectorAll('[data-testid="collections-row"]')).some(r => Array.from(r.cells).map(td => td.textContent).slice(0, 3).join("|") === "shared (trusted)|1|3")`)
	do(t, ctx, "show its passages", chromedp.Click(css(`[data-testid="document-passages"]`)))
	until(t, ctx, "the passages with their headings", `(() => {
		const ps = Array.from(document.querySelectorAll('[data-testid="document-passage"]')).map(p => p.textContent);
		return ps.length === 3 && ps[0].startsWith("Deploy runbook › Rollback") && ps[2].includes("kept for thirty days");
	})()`)

	// A question: the rollback passage with its evidence; the passages
	// that share only a word are shown under the floor.
	do(t, ctx, "ask a question", chromedp.SendKeys(css(`[data-testid="knowledge-question"]`), "How do I roll back a release?"), chromedp.Click(css(`[data-testid="knowledge-ask"]`)))
	until(t, ctx, "the recalled passage with its evidence", `(() => {
		const r = Array.from(document.querySelectorAll('[data-testid="recalled"]'));
		if (r.length !== 1) return false;
		const ev = r[0].querySelector('[data-testid="evidence"]').textContent;
		return r[0].textContent.includes("Deploy runbook (shared/runbook.md) › Deploy runbook › Rollback") && r[0].textContent.includes("run the rollback job") &&
			/^lexical: evidence \d\.\d\d = closeness \d\.\d\d \+ coverage 1\.00 ≥ floor 1, rank 1 /.test(ev) && /fused 0\.0164$/.test(ev);
	})()`)
	until(t, ctx, "the summary", `document.querySelector('[data-testid="knowledge-summary"]').textContent.startsWith("1 passage would be given (terms: roll, back, release; collections: shared;")`)
	screenshot(t, ctx, "admin-knowledge.png")
	do(t, ctx, "ask about what is not there", chromedp.SetValue(css(`[data-testid="knowledge-question"]`), "What is the capital of Peru?"), chromedp.Click(css(`[data-testid="knowledge-ask"]`)))
	until(t, ctx, "nothing recalled", `document.querySelector('[data-testid="knowledge-summary"]').textContent.startsWith("Nothing would be recalled") && !document.querySelector('[data-testid="recalled"]')`)
	do(t, ctx, "ask with a shared word", chromedp.SetValue(css(`[data-testid="knowledge-question"]`), "When do backups of the certificates expire?"), chromedp.Click(css(`[data-testid="knowledge-ask"]`)))
	until(t, ctx, "a passage under the floor, with its evidence", `Array.from(document.querySelectorAll('[data-testid="not-recalled"]')).some(li =>
		li.textContent.includes("— under the floor") && / < floor 1[,;( ]/.test(li.querySelector('[data-testid="evidence"]').textContent) && / fused 0$/.test(li.textContent))`)

	// A binary file under a text name: refused on the form, not stored.
	do(t, ctx, "upload a binary .md", chromedp.SetUploadFiles(css(`[data-testid="knowledge-file"]`), []string{bin}), chromedp.Click(css(`[data-testid="knowledge-upload"]`)))
	until(t, ctx, "the refusal on the form", `document.querySelector('[data-testid="knowledge-upload-status"]').textContent === "Not added: photo.md: holds NUL bytes, so it is binary, not text"`)
	if docs, err := lib.Documents(context.Background(), ""); err != nil || len(docs) != 1 {
		t.Fatalf("after the refusal: %+v %v", docs, err)
	}

	do(t, ctx, "delete the runbook", chromedp.Click(css(`[data-testid="document-delete"]`)))
	until(t, ctx, "no document left", `document.querySelector("#documents tbody").textContent === "nothing here" && document.getElementById("document-view").hidden`)
	if docs, err := lib.Documents(context.Background(), ""); err != nil || len(docs) != 0 {
		t.Fatalf("deleted on the page, yet: %+v %v", docs, err)
	}
	noBanner(t, ctx)
}
