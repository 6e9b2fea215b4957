package knowledgeapi_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/httpapi"
	"github.com/gatehouse/gatehouse/httpapi/knowledgeapi"
	"github.com/gatehouse/gatehouse/kernel"
	"github.com/gatehouse/gatehouse/knowledge"
	"github.com/gatehouse/gatehouse/store"
	"github.com/gatehouse/gatehouse/store/postgres"
	"github.com/gatehouse/gatehouse/store/sqlite"
	"github.com/gatehouse/gatehouse/store/storetest"
)

const handbook = `# Employee handbook

## Vacation

Every employee receives 25 vacation days per year. Unused vacation days carry over until March.

## Equipment

New staff receive a laptop on their first morning. Return the laptop when leaving the company.

## Expenses

Submit receipts within thirty days through the finance portal.
`

const token = "tok"

// env is the API server (httpapi, with its token) serving the knowledge
// endpoints over a library on a real store.
type env struct {
	t   *testing.T
	ts  *httptest.Server
	lib *knowledge.Library
}

// eachBackend runs fn on a fresh SQLite store and a fresh Postgres schema
// (skipped without GATEHOUSE_TEST_POSTGRES_URL).
func eachBackend(t *testing.T, lcfg knowledge.Config, fails map[string]string, fn func(t *testing.T, e *env)) {
	t.Run("sqlite", func(t *testing.T) {
		fn(t, newEnv(t, storetest.OpenSQLite(t, sqlite.Config{Synchronous: "NORMAL"}), lcfg, fails))
	})
	t.Run("postgres", func(t *testing.T) {
		fn(t, newEnv(t, storetest.OpenPostgres(t, postgres.Config{MaxConns: 8}), lcfg, fails))
	})
}

func newEnv(t *testing.T, st store.Store, lcfg knowledge.Config, fails map[string]string) *env {
	log := slog.New(slog.DiscardHandler)
	lcfg.Logger = log
	lib, err := knowledge.New(st, lcfg)
	if err != nil {
		t.Fatal(err)
	}
	kcfg := knowledgeapi.Config{Library: lib, WriteError: httpapi.ErrorWriter(log)}
	if fails != nil {
		kcfg.Failures = func() map[string]string { return fails }
	}
	srv := httpapi.New(httpapi.Config{Kernel: kernel.New(st, kernel.Config{}), Store: st, APIToken: token, Logger: log,
		Knowledge: knowledgeapi.New(kcfg)})
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		ts.CloseClientConnections()
		ts.Close()
	})
	return &env{t: t, ts: ts, lib: lib}
}

type reply struct {
	status int
	header http.Header
	body   []byte
}

func (r reply) decode(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decode %s: %v", r.body, err)
	}
}

// refused checks an error answer: its status, code and a piece of its
// message.
func (r reply) refused(t *testing.T, what string, status int, code gh.Code, msg string) {
	t.Helper()
	var e struct {
		Code    gh.Code `json:"code"`
		Message string  `json:"message"`
	}
	r.decode(t, &e)
	if r.status != status || e.Code != code || !strings.Contains(e.Message, msg) {
		t.Fatalf("%s: %d %s %q, want %d %s with %q", what, r.status, e.Code, e.Message, status, code, msg)
	}
}

func (e *env) do(method, path, contentType string, body io.Reader) reply {
	e.t.Helper()
	req, err := http.NewRequest(method, e.ts.URL+path, body)
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	res, err := e.ts.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return reply{status: res.StatusCode, header: res.Header, body: b}
}

func (e *env) json(method, path string, v any) reply {
	e.t.Helper()
	b, _ := json.Marshal(v)
	return e.do(method, path, "application/json", bytes.NewReader(b))
}

// form posts a multipart upload of one file, with fields.
func (e *env) form(name string, data []byte, fields map[string]string) reply {
	e.t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for k, v := range fields {
		_ = mw.WriteField(k, v)
	}
	fw, _ := mw.CreateFormFile("file", name)
	_, _ = fw.Write(data)
	_ = mw.Close()
	return e.do("POST", "/v1/documents", mw.FormDataContentType(), &buf)
}

type document struct {
	ID         int64  `json:"id"`
	Collection string `json:"collection"`
	Name       string `json:"name"`
	Title      string `json:"title"`
	MediaType  string `json:"mediaType"`
	Size       int64  `json:"size"`
	Passages   int    `json:"passages"`
	Source     string `json:"source"`
	Version    int    `json:"version"`
	Trusted    bool   `json:"trusted"`
	AddedAt    string `json:"addedAt"`
	UpdatedAt  string `json:"updatedAt"`
}

type added struct {
	Document document `json:"document"`
	Changed  bool     `json:"changed"`
}

type listing struct {
	Documents []document `json:"documents"`
	More      bool       `json:"more"`
	Failures  []struct {
		Name, Error string
	} `json:"failures"`
}

type recalled struct {
	Passage struct {
		ID      int64    `json:"id"`
		Heading []string `json:"heading"`
		Text    string   `json:"text"`
	} `json:"passage"`
	Document document           `json:"document"`
	Evidence knowledge.Evidence `json:"evidence"`
	Reason   string             `json:"reason"`
}

type recallReply struct {
	Terms       []string   `json:"terms"`
	Passages    []recalled `json:"passages"`
	NotRecalled []recalled `json:"notRecalled"`
	Floor       float64    `json:"lexicalFloor"`
}

// An upload through the form and JSON, listed with its passages and
// sizes, recalled with its evidence (and what fell under the floor),
// deleted.
func TestDocuments(t *testing.T) {
	eachBackend(t, knowledge.Config{}, map[string]string{"scan.pdf": "scan.pdf: document has no text"}, func(t *testing.T, e *env) {
		r := e.form("handbook.md", []byte(handbook), map[string]string{"source": "admin"})
		var a added
		r.decode(t, &a)
		d := a.Document
		if r.status != http.StatusCreated || !a.Changed || d.Collection != knowledge.Shared || d.Name != "handbook.md" || d.Title != "Employee handbook" ||
			d.MediaType != knowledge.TypeMarkdown || d.Size != int64(len(handbook)) || d.Passages != 3 || d.Source != "admin" || d.Version != 1 || !d.Trusted || d.AddedAt == "" {
			t.Fatalf("upload: %d %s", r.status, r.body)
		}
		// The same bytes again: nothing changes.
		if r := e.form("handbook.md", []byte(handbook), nil); r.status != http.StatusOK || !strings.Contains(string(r.body), `"changed":false`) {
			t.Fatalf("the same bytes again: %d %s", r.status, r.body)
		}
		// JSON, as text and as base64, into a chat's collection.
		notes := "# Notes\n\nThe office plants are watered on Fridays by Dana.\n"
		if r := e.json("POST", "/v1/documents", map[string]string{"name": "notes.md", "collection": "chat:s1", "content": notes}); r.status != http.StatusCreated {
			t.Fatalf("json text: %d %s", r.status, r.body)
		}
		if r := e.json("POST", "/v1/documents", map[string]string{"name": "more.txt", "content": base64.StdEncoding.EncodeToString([]byte("Parking passes are at the front desk.")), "encoding": "base64"}); r.status != http.StatusCreated || !strings.Contains(string(r.body), `"mediaType":"text/plain"`) {
			t.Fatalf("json base64: %d %s", r.status, r.body)
		}

		var l listing
		r = e.do("GET", "/v1/documents?collection=shared", "", nil)
		r.decode(t, &l)
		if r.status != 200 || len(l.Documents) != 2 || l.Documents[0].Name != "handbook.md" || l.Documents[0].Passages != 3 || l.Documents[1].Name != "more.txt" || l.More ||
			len(l.Failures) != 1 || l.Failures[0].Name != "scan.pdf" {
			t.Fatalf("shared documents: %d %s", r.status, r.body)
		}
		r = e.do("GET", "/v1/documents?limit=1", "", nil)
		l = listing{}
		r.decode(t, &l)
		if len(l.Documents) != 1 || !l.More || l.Documents[0].Collection != "chat:s1" {
			t.Fatalf("all documents, one: %s", r.body)
		}
		r = e.do("GET", "/v1/collections", "", nil)
		if r.status != 200 || !strings.Contains(string(r.body), `{"collections":[{"name":"shared","documents":2,"passages":4,"trusted":true`) || !strings.Contains(string(r.body), `"name":"chat:s1","documents":1,"passages":1,"trusted":false`) {
			t.Fatalf("collections: %s", r.body)
		}
		// A document with its passages.
		r = e.do("GET", fmt.Sprintf("/v1/documents/%d", d.ID), "", nil)
		var full struct {
			Document document `json:"document"`
			Passages []struct {
				Heading    []string `json:"heading"`
				Text       string   `json:"text"`
				Start, End int
			} `json:"passages"`
		}
		r.decode(t, &full)
		if len(full.Passages) != 3 || strings.Join(full.Passages[0].Heading, " > ") != "Employee handbook > Vacation" || handbook[full.Passages[0].Start:full.Passages[0].End] != full.Passages[0].Text {
			t.Fatalf("passages: %s", r.body)
		}

		// What a question would recall, with its evidence; the other
		// passages that matched a word are under the floor.
		var rc recallReply
		r = e.json("POST", "/v1/knowledge/recall", map[string]string{"question": "How many vacation days does an employee receive?"})
		r.decode(t, &rc)
		if r.status != 200 || len(rc.Passages) != 1 || rc.Passages[0].Document.Name != "handbook.md" || !strings.Contains(rc.Passages[0].Passage.Text, "25 vacation days") {
			t.Fatalf("recall: %d %s", r.status, r.body)
		}
		ev := rc.Passages[0].Evidence
		if ev.Lexical == nil || ev.Lexical.Evidence < rc.Floor || ev.Lexical.Rank != 1 || ev.Fused <= 0 || rc.Floor != 1.0 {
			t.Fatalf("evidence: %s", r.body)
		}
		under := false
		for _, n := range rc.NotRecalled {
			if n.Reason != "under the floor" || n.Evidence.Lexical == nil || n.Evidence.Lexical.Evidence >= rc.Floor || n.Evidence.Fused != 0 {
				t.Fatalf("not recalled: %s", r.body)
			}
			under = under || strings.Contains(n.Passage.Text, "New staff receive a laptop")
		}
		if !under {
			t.Fatalf("the passage that shares a word is not shown under the floor: %s", r.body)
		}
		// A chat's collection is read only as that chat.
		for sid, want := range map[string]int{"": 0, "s1": 1, "s2": 0} {
			rc = recallReply{}
			e.json("POST", "/v1/knowledge/recall", map[string]string{"question": "Who waters the office plants on Fridays?", "sessionId": sid}).decode(t, &rc)
			if len(rc.Passages) != want {
				t.Fatalf("as chat %q: %d passages, want %d", sid, len(rc.Passages), want)
			}
		}
		// An unrelated question recalls nothing.
		rc = recallReply{}
		e.json("POST", "/v1/knowledge/recall", map[string]string{"question": "What is the capital of Peru?"}).decode(t, &rc)
		if len(rc.Passages) != 0 {
			t.Fatalf("unrelated: %+v", rc)
		}

		// Deleted: gone from the list and from recall.
		if r := e.do("DELETE", fmt.Sprintf("/v1/documents/%d", d.ID), "", nil); r.status != 200 || !strings.Contains(string(r.body), `"name":"handbook.md"`) {
			t.Fatalf("delete: %d %s", r.status, r.body)
		}
		e.do("DELETE", fmt.Sprintf("/v1/documents/%d", d.ID), "", nil).refused(t, "delete again", 404, gh.CodeNotFound, fmt.Sprintf("no document %d", d.ID))
		e.do("GET", fmt.Sprintf("/v1/documents/%d", d.ID), "", nil).refused(t, "get deleted", 404, gh.CodeNotFound, "no document")
		rc = recallReply{}
		e.json("POST", "/v1/knowledge/recall", map[string]string{"question": "How many vacation days does an employee receive?"}).decode(t, &rc)
		if len(rc.Passages) != 0 || len(rc.NotRecalled) != 0 {
			t.Fatalf("recall after delete: %+v", rc)
		}
	})
}

// Bad input is refused with the library's message and nothing is stored;
// requests outside the API's rules get its usual errors.
func TestRefusals(t *testing.T) {
	eachBackend(t, knowledge.Config{MaxDocumentBytes: 4096}, nil, func(t *testing.T, e *env) {
		png := append([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), make([]byte, 64)...)
		e.form("photo.md", png, nil).refused(t, "binary under a text name", 400, gh.CodeInvalid, "photo.md: holds NUL bytes, so it is binary, not text")
		e.json("POST", "/v1/documents", map[string]string{"name": "latin1.txt", "content": base64.StdEncoding.EncodeToString([]byte("caf\xe9")), "encoding": "base64"}).
			refused(t, "not UTF-8", 400, gh.CodeInvalid, "latin1.txt: is not UTF-8 text")
		e.form("big.md", bytes.Repeat([]byte("word "), 1000), nil).refused(t, "over the document bound", 413, gh.CodePayloadTooLarge, "big.md: over the library's bound of 4096 bytes")
		e.json("POST", "/v1/documents", map[string]string{"name": "big.md", "content": strings.Repeat("word ", 1000)}).
			refused(t, "over the bound in JSON", 413, gh.CodePayloadTooLarge, "big.md: 5000 bytes, over the library's bound of 4096")
		e.form("huge.md", bytes.Repeat([]byte("word "), 100_000), nil).refused(t, "far over the bound", 413, gh.CodePayloadTooLarge, "huge.md: over the library's bound of 4096 bytes")
		e.json("POST", "/v1/documents", map[string]string{"name": "huge.md", "content": strings.Repeat("word ", 100_000)}).
			refused(t, "over the body bound", 413, gh.CodePayloadTooLarge, "body is over the limit")
		e.form("app.exe", []byte("MZ\x90\x00"), nil).refused(t, "a format the library does not read", 400, gh.CodeInvalid, "app.exe")
		e.form("empty.md", []byte("   \n\n"), nil).refused(t, "no text", 400, gh.CodeInvalid, "empty.md")
		e.form("x.md", []byte("# x\n\nText."), map[string]string{"collection": "elsewhere"}).refused(t, "unknown collection", 400, gh.CodeInvalid, `knowledge collection "elsewhere"`)
		e.form("x.md", []byte("# x\n\nText."), map[string]string{"source": "folder"}).refused(t, "the watcher's source", 400, gh.CodeInvalid, "source must be api or admin")
		e.form("x.md", []byte("# x\n\nText."), map[string]string{"colour": "red"}).refused(t, "unknown field", 400, gh.CodeInvalid, `unknown form field "colour"`)
		e.json("POST", "/v1/documents", map[string]string{"content": "text"}).refused(t, "no name", 400, gh.CodeInvalid, "needs a name")
		e.json("POST", "/v1/documents", map[string]string{"name": "a.md", "content": "!!", "encoding": "base64"}).refused(t, "bad base64", 400, gh.CodeInvalid, "not base64")
		e.do("POST", "/v1/documents", "text/markdown", strings.NewReader("# x")).refused(t, "a bare body", 400, gh.CodeInvalid, "multipart/form-data")
		e.json("POST", "/v1/knowledge/recall", map[string]string{"question": " "}).refused(t, "no question", 400, gh.CodeInvalid, "a question is required")
		e.json("POST", "/v1/knowledge/recall", map[string]string{"q": "x"}).refused(t, "unknown field", 400, gh.CodeInvalid, `unknown field "q"`)
		e.do("GET", "/v1/documents?limit=0", "", nil).refused(t, "bad limit", 400, gh.CodeInvalid, "limit")
		e.do("DELETE", "/v1/documents/abc", "", nil).refused(t, "bad id", 400, gh.CodeInvalid, "positive integer")
		r := e.do("PUT", "/v1/documents", "", nil)
		r.refused(t, "wrong method", 405, gh.CodeInvalid, "method PUT not allowed")
		if r.header.Get("Allow") != "GET, HEAD, POST" {
			t.Fatalf("Allow: %q", r.header.Get("Allow"))
		}
		var l listing
		e.do("GET", "/v1/documents", "", nil).decode(t, &l)
		if len(l.Documents) != 0 {
			t.Fatalf("a refused file was stored: %+v", l.Documents)
		}
		// The API token is required on every path.
		for _, p := range knowledgeapi.Paths {
			p = strings.Replace(p, "{id}", "1", 1)
			res, err := http.Get(e.ts.URL + p)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != http.StatusUnauthorized {
				t.Fatalf("%s without the token: %d", p, res.StatusCode)
			}
		}
	})
}
