package memory_test

import (
	"context"
	"encoding/json"
	"hash/fnv"
	"math"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"unicode"

	"github.com/gatehouse/gatehouse/internal/testing/testenv"
	"github.com/gatehouse/gatehouse/store"
	"github.com/gatehouse/gatehouse/store/postgres"
	"github.com/gatehouse/gatehouse/store/sqlite"
	"github.com/gatehouse/gatehouse/store/storetest"
)

// env is one real backend for a test: a store, a way to restart it, and
// (Postgres) a way to open another replica on the same database.
type env struct {
	name   string
	st     store.Store
	clock  *storetest.Clock
	reopen func(t *testing.T) store.Store
	peer   func(t *testing.T) store.Store
}

// eachBackend runs fn against SQLite and Postgres (skipped without
// GATEHOUSE_TEST_POSTGRES_URL).
func eachBackend(t *testing.T, fn func(t *testing.T, e *env)) {
	t.Run("sqlite", func(t *testing.T) { eachBackendSQLite(t, fn) })
	t.Run("postgres", func(t *testing.T) {
		url := testenv.PostgresURL(t)
		open := func(t *testing.T) store.Store {
			return storetest.OpenPostgres(t, postgres.Config{URL: url, MaxConns: 12})
		}
		e := &env{name: "postgres", st: open(t), clock: storetest.NewClock()}
		e.reopen = func(t *testing.T) store.Store { e.st.Close(); e.st = open(t); return e.st }
		e.peer = open
		fn(t, e)
	})
}

// eachBackendSQLite runs fn against a fresh SQLite store.
func eachBackendSQLite(t *testing.T, fn func(t *testing.T, e *env)) {
	path := filepath.Join(t.TempDir(), "gatehouse.db")
	open := func(t *testing.T) store.Store {
		st, err := sqlite.Open(context.Background(), sqlite.Config{Path: path, Synchronous: "NORMAL"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	e := &env{name: "sqlite", st: open(t), clock: storetest.NewClock()}
	e.reopen = func(t *testing.T) store.Store { e.st.Close(); e.st = open(t); return e.st }
	fn(t, e)
}

// fakeEmbeddings is an OpenAI-compatible /v1/embeddings server on
// loopback. Its "model" maps words of one concept to one dimension (jazz,
// music, song …), so texts that share a meaning but no word come out close,
// and hashes every other word to a dimension of its own.
type fakeEmbeddings struct {
	srv      *httptest.Server
	requests atomic.Int64
	inputs   atomic.Int64
	fail     atomic.Bool
}

var concepts = map[string]int{
	"jazz": 0, "music": 0, "song": 0, "songs": 0, "band": 0, "blues": 0, "concert": 0,
	"like": 1, "enjoy": 1, "love": 1, "prefer": 1, "fan": 1,
	"email": 2, "mail": 2, "address": 2, "contact": 2, "reach": 2,
	"car": 3, "drive": 3, "vehicle": 3, "golf": 3,
	"name": 4, "called": 4,
}

var fakeStop = map[string]bool{"the": true, "a": true, "is": true, "of": true, "i": true, "my": true, "do": true, "what": true,
	"s": true, "com": true, "to": true, "in": true, "you": true, "me": true, "it": true, "and": true}

const fakeDims = 64

func fakeVector(text string) []float64 {
	v := make([]float64, fakeDims)
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if fakeStop[w] {
			continue
		}
		if d, ok := concepts[w]; ok {
			v[d]++
			continue
		}
		h := fnv.New32a()
		h.Write([]byte(w))
		v[8+int(h.Sum32()%(fakeDims-8))]++
	}
	var n float64
	for _, x := range v {
		n += x * x
	}
	if n == 0 {
		v[fakeDims-1], n = 1, 1
	}
	for i := range v {
		v[i] /= math.Sqrt(n)
	}
	return v
}

func newFakeEmbeddings(t *testing.T) *fakeEmbeddings {
	f := &fakeEmbeddings{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/embeddings" {
			http.Error(w, `{"error":{"message":"not found"}}`, http.StatusNotFound)
			return
		}
		if f.fail.Load() {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			w.Write([]byte(`{"error":{"message":"model not loaded","type":"invalid_request_error"}}`))
			return
		}
		var req struct {
			Input          json.RawMessage `json:"input"`
			Model          string          `json:"model"`
			EncodingFormat string          `json:"encoding_format"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Model == "" {
			http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
			return
		}
		var inputs []string
		if err := json.Unmarshal(req.Input, &inputs); err != nil {
			var one string
			if err := json.Unmarshal(req.Input, &one); err != nil {
				http.Error(w, `{"error":{"message":"input must be a string or an array of strings"}}`, http.StatusBadRequest)
				return
			}
			inputs = []string{one}
		}
		f.requests.Add(1)
		f.inputs.Add(int64(len(inputs)))
		type item struct {
			Object    string    `json:"object"`
			Index     int       `json:"index"`
			Embedding []float64 `json:"embedding"`
		}
		resp := struct {
			Object string `json:"object"`
			Data   []item `json:"data"`
			Model  string `json:"model"`
			Usage  struct {
				PromptTokens int `json:"prompt_tokens"`
				TotalTokens  int `json:"total_tokens"`
			} `json:"usage"`
		}{Object: "list", Model: req.Model}
		for i, in := range inputs {
			resp.Data = append(resp.Data, item{Object: "embedding", Index: i, Embedding: fakeVector(in)})
			resp.Usage.PromptTokens += len(strings.Fields(in))
		}
		resp.Usage.TotalTokens = resp.Usage.PromptTokens
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(resp)
	}))
	t.Cleanup(f.srv.Close)
	return f
}
