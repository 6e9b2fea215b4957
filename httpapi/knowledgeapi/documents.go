package knowledgeapi

import (
	"encoding/base64"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"path"
	"slices"
	"strings"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/httpapi/connlimit"
	"github.com/gatehouse/gatehouse/knowledge"
)

// document is a document as the API shows it.
type document struct {
	ID         int64  `json:"id"`
	Collection string `json:"collection"`
	Name       string `json:"name"`
	Title      string `json:"title"`
	MediaType  string `json:"mediaType"`
	// Size is the file's, in bytes; Passages how many it was split into.
	Size     int64 `json:"size"`
	Passages int   `json:"passages"`
	// Source is where it came from: folder, api, admin, chat.
	Source  string `json:"source"`
	AddedBy string `json:"addedBy,omitempty"`
	// Version counts the contents stored under the name; Hash is the
	// SHA-256 of the bytes.
	Version int    `json:"version"`
	Hash    string `json:"hash"`
	// Trusted: the operator's text (the shared collection).
	Trusted   bool      `json:"trusted"`
	AddedAt   time.Time `json:"addedAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

func documentOf(d knowledge.Document) document {
	return document{ID: d.ID, Collection: d.Collection, Name: d.Name, Title: d.Title, MediaType: d.MediaType, Size: d.Size,
		Passages: d.Passages, Source: d.Source, AddedBy: d.AddedBy, Version: d.Version, Hash: d.Hash,
		Trusted: knowledge.Trusted(d.Collection), AddedAt: d.Created, UpdatedAt: d.IndexedAt}
}

// passage is a passage as the API shows it: its heading path and its
// byte offsets in the document's text.
type passage struct {
	ID      int64    `json:"id"`
	Ord     int      `json:"ord"`
	Heading []string `json:"heading"`
	Text    string   `json:"text"`
	Start   int      `json:"start"`
	End     int      `json:"end"`
}

func passageOf(p knowledge.Passage) passage {
	h := p.Heading
	if h == nil {
		h = []string{}
	}
	return passage{ID: p.ID, Ord: p.Ord, Heading: h, Text: p.Text, Start: p.Start, End: p.End}
}

// failure is a file the folder watcher refused.
type failure struct {
	Name  string `json:"name"`
	Error string `json:"error"`
}

// listDocuments is GET /v1/documents?collection=&limit=: the documents
// of one collection (all without), by collection and name, at most limit
// (default 200, at most 1000; more says some were left off), and the
// files the folder watcher refused.
func (h *Handler) listDocuments(w http.ResponseWriter, r *http.Request) {
	limit, err := limitOf(r, 200, 1000)
	if err != nil {
		h.cfg.WriteError(w, r, err)
		return
	}
	collection := r.URL.Query().Get("collection")
	docs, err := h.lib.Documents(r.Context(), collection)
	if err != nil {
		h.cfg.WriteError(w, r, err)
		return
	}
	slices.SortStableFunc(docs, func(a, b knowledge.Document) int {
		return strings.Compare(a.Collection+"\x00"+a.Name, b.Collection+"\x00"+b.Name)
	})
	more := len(docs) > limit
	out := make([]document, 0, min(len(docs), limit))
	for _, d := range docs[:min(len(docs), limit)] {
		out = append(out, documentOf(d))
	}
	fails := []failure{}
	if h.cfg.Failures != nil && (collection == "" || collection == knowledge.Shared) {
		for name, why := range h.cfg.Failures() {
			fails = append(fails, failure{Name: name, Error: why})
		}
		slices.SortFunc(fails, func(a, b failure) int { return strings.Compare(a.Name, b.Name) })
	}
	writeJSON(w, http.StatusOK, map[string]any{"documents": out, "more": more, "failures": fails})
}

// find returns the document with that id.
func (h *Handler) find(r *http.Request) (knowledge.Document, error) {
	id, err := idOf(r)
	if err != nil {
		return knowledge.Document{}, err
	}
	docs, err := h.lib.Documents(r.Context(), "")
	if err != nil {
		return knowledge.Document{}, err
	}
	for _, d := range docs {
		if d.ID == id {
			return d, nil
		}
	}
	return knowledge.Document{}, gh.Errorf(gh.CodeNotFound, "no document %d", id)
}

// getDocument is GET /v1/documents/{id}: the document and its passages.
func (h *Handler) getDocument(w http.ResponseWriter, r *http.Request) {
	d, err := h.find(r)
	if err != nil {
		h.cfg.WriteError(w, r, err)
		return
	}
	ps, err := h.lib.Passages(r.Context(), d.ID)
	if err != nil {
		h.cfg.WriteError(w, r, err)
		return
	}
	out := make([]passage, len(ps))
	for i, p := range ps {
		out[i] = passageOf(p)
	}
	writeJSON(w, http.StatusOK, map[string]any{"document": documentOf(d), "passages": out})
}

// deleteDocument is DELETE /v1/documents/{id}: the document and its
// passages go in one transaction. A folder document comes back at the
// watcher's next scan unless its file is removed too.
func (h *Handler) deleteDocument(w http.ResponseWriter, r *http.Request) {
	d, err := h.find(r)
	if err != nil {
		h.cfg.WriteError(w, r, err)
		return
	}
	found, err := h.lib.Delete(r.Context(), d.Collection, d.Name)
	if err != nil {
		h.cfg.WriteError(w, r, err)
		return
	}
	if !found {
		h.cfg.WriteError(w, r, gh.Errorf(gh.CodeNotFound, "no document %d", d.ID))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"deleted": d.ID, "collection": d.Collection, "name": d.Name})
}

// upload is a document to add, from a form or JSON.
type upload struct {
	Collection string `json:"collection"`
	Name       string `json:"name"`
	Title      string `json:"title"`
	MediaType  string `json:"mediaType"`
	Source     string `json:"source"`
	// Content is the file: its text, or base64 with Encoding "base64".
	Content  string `json:"content"`
	Encoding string `json:"encoding"`
	data     []byte
}

// addDocument is POST /v1/documents: 201 with the document when it was
// added or replaced, 200 when the collection already held these bytes
// under the name (changed false).
func (h *Handler) addDocument(w http.ResponseWriter, r *http.Request) {
	u, err := h.readUpload(w, r)
	if err != nil {
		h.cfg.WriteError(w, r, err)
		return
	}
	if u.Collection == "" {
		u.Collection = knowledge.Shared
	}
	switch u.Source {
	case "":
		u.Source = "api"
	case "api", "admin":
	default:
		h.cfg.WriteError(w, r, gh.Errorf(gh.CodeInvalid, "source must be api or admin, not %q (folder documents are the watcher's)", u.Source))
		return
	}
	doc, changed, err := h.lib.Add(r.Context(), knowledge.AddRequest{Collection: u.Collection, Name: u.Name, MediaType: u.MediaType,
		Title: u.Title, Source: u.Source, AddedBy: "operator", Data: u.data})
	if err != nil {
		h.cfg.WriteError(w, r, err)
		return
	}
	status := http.StatusOK
	if changed {
		status = http.StatusCreated
	}
	writeJSON(w, status, map[string]any{"document": documentOf(doc), "changed": changed})
}

// readUpload reads a multipart form or a JSON body, within the upload
// bound.
func (h *Handler) readUpload(w http.ResponseWriter, r *http.Request) (upload, error) {
	var u upload
	mt, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch mt {
	case "multipart/form-data":
		return h.readForm(w, r, params["boundary"])
	case "application/json":
		if err := h.upload.Decode(w, r, &u, false); err != nil {
			return u, err
		}
		switch u.Encoding {
		case "", "text":
			u.data = []byte(u.Content)
		case "base64":
			data, err := base64.StdEncoding.DecodeString(strings.TrimSpace(u.Content))
			if err != nil {
				return u, gh.Wrap(gh.CodeInvalid, err, "content is not base64")
			}
			u.data = data
		default:
			return u, gh.Errorf(gh.CodeInvalid, "encoding must be text or base64, not %q", u.Encoding)
		}
		if strings.TrimSpace(u.Name) == "" {
			return u, gh.Errorf(gh.CodeInvalid, "a document needs a name (its file name, e.g. handbook.md)")
		}
		return u, nil
	default:
		return u, gh.Errorf(gh.CodeInvalid, "send the document as multipart/form-data (a file part) or as JSON, not %q", r.Header.Get("Content-Type"))
	}
}

// maxField bounds a form field other than the file.
const maxField = 4 << 10

// readForm reads the form's "file" part (named by its file name unless a
// "name" field says otherwise) and its fields.
func (h *Handler) readForm(w http.ResponseWriter, r *http.Request, boundary string) (upload, error) {
	var u upload
	if boundary == "" {
		return u, gh.Errorf(gh.CodeInvalid, "a multipart body needs a boundary")
	}
	maxDoc := h.lib.Config().MaxDocumentBytes
	mr := multipart.NewReader(http.MaxBytesReader(w, r.Body, h.upload.MaxBytes), boundary)
	var file bool
	for {
		p, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return u, h.formError(err)
		}
		field := p.FormName()
		if field == "file" {
			if file {
				return u, gh.Errorf(gh.CodeInvalid, "one file per request")
			}
			file = true
			data, err := io.ReadAll(io.LimitReader(p, maxDoc+1))
			if err != nil {
				return u, h.formError(err)
			}
			fname := path.Base(strings.ReplaceAll(p.FileName(), `\`, "/"))
			if int64(len(data)) > maxDoc {
				return u, gh.Wrap(gh.CodePayloadTooLarge, knowledge.ErrTooLarge, "%s: over the library's bound of %d bytes", fname, maxDoc)
			}
			u.data = data
			if u.Name == "" && fname != "." && fname != "/" {
				u.Name = fname
			}
			if u.MediaType == "" {
				u.MediaType = p.Header.Get("Content-Type")
			}
			continue
		}
		v, err := io.ReadAll(io.LimitReader(p, maxField+1))
		if err != nil {
			return u, h.formError(err)
		}
		if len(v) > maxField {
			return u, gh.Errorf(gh.CodeInvalid, "form field %q is over %d bytes", field, maxField)
		}
		val := strings.TrimSpace(string(v))
		switch field {
		case "collection":
			u.Collection = val
		case "name":
			if val != "" {
				u.Name = val
			}
		case "title":
			u.Title = val
		case "source":
			u.Source = val
		case "mediaType":
			u.MediaType = val
		default:
			return u, gh.Errorf(gh.CodeInvalid, "unknown form field %q (file, collection, name, title, source, mediaType)", field)
		}
	}
	if !file {
		return u, gh.Errorf(gh.CodeInvalid, "the form has no file part (name it \"file\")")
	}
	return u, nil
}

// formError says what was wrong with a form's body.
func (h *Handler) formError(err error) error {
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) || connlimit.IsTimeout(err) {
		return h.upload.Error(err)
	}
	return gh.Wrap(gh.CodeInvalid, err, "malformed multipart body")
}
