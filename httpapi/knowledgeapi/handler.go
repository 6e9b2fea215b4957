package knowledgeapi

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/httpapi/reqbody"
	"github.com/gatehouse/gatehouse/knowledge"
)

// Config configures the endpoints.
type Config struct {
	// Library is the knowledge library. Required.
	Library *knowledge.Library
	// WriteError answers an error in the API's shape (httpapi.ErrorWriter:
	// its code → status mapping). Defaults to a plain 500 with the
	// message.
	WriteError func(w http.ResponseWriter, r *http.Request, err error)
	// MaxBodyBytes bounds a request body other than an upload (a recall).
	// Defaults to 1 MiB (httpapi's).
	MaxBodyBytes int64
	// ReadTimeout is the server's read deadline, named when a body is cut
	// there. Defaults to 30s (httpapi's).
	ReadTimeout time.Duration
	// Failures returns the files the folder watcher refused, by document
	// name, with why (knowledge.Watcher.Failures); GET /v1/documents lists
	// them. Defaults to nil: none listed (no folder is watched, or another
	// replica watches it).
	Failures func() map[string]string
}

// Handler serves the knowledge endpoints.
type Handler struct {
	cfg    Config
	lib    *knowledge.Library
	mux    *http.ServeMux
	body   reqbody.Limits // a recall's
	upload reqbody.Limits // a document's
}

// Paths are the paths the Handler serves (httpapi mounts them).
var Paths = []string{"/v1/documents", "/v1/documents/{id}", "/v1/collections", "/v1/knowledge/recall"}

// New builds the handler.
func New(cfg Config) *Handler {
	if cfg.Library == nil {
		panic("knowledgeapi: New needs a Library")
	}
	if cfg.WriteError == nil {
		cfg.WriteError = func(w http.ResponseWriter, _ *http.Request, err error) {
			http.Error(w, gh.ErrorMessage(err), http.StatusInternalServerError)
		}
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = 1 << 20
	}
	if cfg.ReadTimeout <= 0 {
		cfg.ReadTimeout = 30 * time.Second
	}
	// An upload carries the document, as a form part or in base64 (4
	// bytes for 3), and a little more.
	maxDoc := cfg.Library.Config().MaxDocumentBytes
	h := &Handler{cfg: cfg, lib: cfg.Library, mux: http.NewServeMux(),
		body:   reqbody.Limits{MaxBytes: cfg.MaxBodyBytes, ReadTimeout: cfg.ReadTimeout},
		upload: reqbody.Limits{MaxBytes: maxDoc/3*4 + 64<<10, ReadTimeout: cfg.ReadTimeout}}
	routes := []struct {
		method, path string
		fn           http.HandlerFunc
	}{
		{"GET", "/v1/documents", h.listDocuments},
		{"POST", "/v1/documents", h.addDocument},
		{"GET", "/v1/documents/{id}", h.getDocument},
		{"DELETE", "/v1/documents/{id}", h.deleteDocument},
		{"GET", "/v1/collections", h.collections},
		{"POST", "/v1/knowledge/recall", h.recall},
	}
	allow := map[string][]string{}
	for _, rt := range routes {
		h.mux.HandleFunc(rt.method+" "+rt.path, rt.fn)
		allow[rt.path] = append(allow[rt.path], rt.method)
		if rt.method == "GET" {
			allow[rt.path] = append(allow[rt.path], "HEAD")
		}
	}
	for p, methods := range allow {
		slices.Sort(methods)
		list := strings.Join(methods, ", ")
		h.mux.HandleFunc(p, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Allow", list)
			h.cfg.WriteError(statusAs{w, http.StatusMethodNotAllowed}, r,
				gh.Errorf(gh.CodeInvalid, "method %s not allowed on %s; allowed: %s", r.Method, r.URL.Path, list))
		})
	}
	return h
}

// ServeHTTP serves the paths in Paths; anything else is not found.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if _, pattern := h.mux.Handler(r); pattern == "" {
		h.cfg.WriteError(w, r, gh.Errorf(gh.CodeNotFound, "no such path: %s", r.URL.Path))
		return
	}
	h.mux.ServeHTTP(w, r)
}

// statusAs answers with status whatever status WriteError chose: a known
// path asked with the wrong method is 405, not the 400 of its code.
type statusAs struct {
	http.ResponseWriter
	status int
}

func (s statusAs) WriteHeader(int) { s.ResponseWriter.WriteHeader(s.status) }

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// limitOf parses ?limit=: def when absent, at most max.
func limitOf(r *http.Request, def, max int) (int, error) {
	v := r.URL.Query().Get("limit")
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 || n > max {
		return 0, gh.Errorf(gh.CodeInvalid, "limit must be a whole number from 1 to %d, not %q", max, v)
	}
	return n, nil
}

// idOf parses the {id} of a document path.
func idOf(r *http.Request) (int64, error) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		return 0, gh.Errorf(gh.CodeInvalid, "document id must be a positive integer, not %q", r.PathValue("id"))
	}
	return id, nil
}
