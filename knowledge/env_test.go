package knowledge_test

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

// eachBackend runs fn against a fresh SQLite store and a fresh Postgres
// schema (skipped without GATEHOUSE_TEST_POSTGRES_URL, failed without it
// when GATEHOUSE_TEST_REQUIRE_SERVICES=1). peer opens another replica on
// the same database (nil for SQLite).
func eachBackend(t *testing.T, fn func(t *testing.T, st store.Store, peer func(t *testing.T) store.Store)) {
	t.Run("sqlite", func(t *testing.T) {
		st, err := sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(t.TempDir(), "gatehouse.db"), Synchronous: "NORMAL"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		fn(t, st, nil)
	})
	t.Run("postgres", func(t *testing.T) {
		fn(t, openPostgres(t, testenv.PostgresURL(t)), nil)
	})
}

func openPostgres(t testing.TB, url string) store.Store {
	return storetest.OpenPostgres(t, postgres.Config{URL: url, MaxConns: 8})
}

// fakeEmbeddings is an OpenAI-compatible /v1/embeddings server on
// loopback. Its "model" maps the words of one concept to one dimension
// (vacation, holiday, leave …), so texts that share a meaning but no word
// come out close, and hashes every other word to a dimension of its own.
type fakeEmbeddings struct {
	srv    *httptest.Server
	inputs atomic.Int64
	fail   atomic.Bool
}

var concepts = map[string]int{
	"vacation": 0, "holiday": 0, "holidays": 0, "leave": 0, "break": 0, "time-off": 0,
	"laptop": 1, "computer": 1, "notebook": 1, "machine": 1,
	"receipt": 2, "receipts": 2, "expenses": 2, "refund": 2, "reimbursed": 2,
}

const fakeDims = 96

func fakeVector(text string) []float64 {
	v := make([]float64, fakeDims)
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '-' }) {
		if len(w) < 3 {
			continue
		}
		if d, ok := concepts[w]; ok {
			v[d] += 3
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
			Input []string `json:"input"`
			Model string   `json:"model"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Model == "" || len(req.Input) == 0 {
			http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
			return
		}
		f.inputs.Add(int64(len(req.Input)))
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
		for i, in := range req.Input {
			resp.Data = append(resp.Data, item{Object: "embedding", Index: i, Embedding: fakeVector(in)})
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(resp)
	}))
	t.Cleanup(f.srv.Close)
	return f
}
