package knowledge

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"path"
	"strings"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/internal/embeddings"
	"github.com/gatehouse/gatehouse/store"
)

// Document and Passage are the store's rows.
type (
	Document   = store.KnowledgeDocument
	Passage    = store.KnowledgePassage
	Collection = store.KnowledgeCollection
)

// Library keeps the documents and recalls their passages.
type Library struct {
	st  store.Store
	k   store.Knowledge
	cfg Config
	emb *embeddings.Client // nil without EmbeddingsURL
	vec *vectorCache
}

// New returns a library over st, which must keep knowledge rows (both
// stores do).
func New(st store.Store, cfg Config) (*Library, error) {
	k, err := store.KnowledgeOf(st)
	if err != nil {
		return nil, err
	}
	l := &Library{st: st, k: k, cfg: cfg.withDefaults()}
	if l.cfg.EmbeddingsURL != "" {
		l.emb = embeddings.New(embeddings.Config{URL: l.cfg.EmbeddingsURL, APIKey: l.cfg.EmbeddingsAPIKey, Model: l.cfg.EmbeddingsModel,
			Timeout: l.cfg.EmbeddingsTimeout, HTTPClient: l.cfg.HTTPClient})
		l.vec = newVectorCache()
	}
	return l, nil
}

// Config returns the library's configuration with its defaults applied.
func (l *Library) Config() Config { return l.cfg }

// AddRequest is a file to add to a collection.
type AddRequest struct {
	// Collection is Shared, ChatCollection(…) or UserCollection(…).
	Collection string
	// Name is the document's key in the collection (a path, a file
	// name); adding under a name that holds other bytes replaces it.
	Name string
	// MediaType is what the sender says the file is; empty: by the
	// name's extension, else by sniffing the bytes.
	MediaType string
	// Title overrides the one found in the document (first heading,
	// <title>, PDF /Title; else the name).
	Title string
	// Source says where it came from ("folder", "api", "chat", "admin").
	Source string
	// AddedBy names who added it (a user key, "operator").
	AddedBy string
	Data    []byte
}

// Add indexes a document: its text is extracted, split into passages,
// embedded when embeddings are configured, and stored with its passages
// in one transaction. Bytes the collection already holds under the name
// are a no-op (changed false); other bytes replace the document whole. A
// file the library cannot read is refused with a *gh.Error wrapping one of
// ErrTooLarge, ErrBinary, ErrUnsupported, ErrEncrypted, ErrBroken or
// ErrNoText, and nothing of it is stored.
func (l *Library) Add(ctx context.Context, r AddRequest) (Document, bool, error) {
	if !validCollection(r.Collection) {
		return Document{}, false, gh.Errorf(gh.CodeInvalid, "knowledge collection %q: want %q, chat:<session> or user:<user key>", r.Collection, Shared)
	}
	name := strings.TrimSpace(r.Name)
	if name == "" || len(name) > 1000 {
		return Document{}, false, gh.Errorf(gh.CodeInvalid, "a document needs a name of at most 1000 bytes")
	}
	if int64(len(r.Data)) > l.cfg.MaxDocumentBytes {
		return Document{}, false, gh.Wrap(gh.CodePayloadTooLarge, ErrTooLarge, "%s: %d bytes, over the library's bound of %d", name, len(r.Data), l.cfg.MaxDocumentBytes)
	}
	sum := sha256.Sum256(r.Data)
	hash := hex.EncodeToString(sum[:])
	// The same bytes again: nothing to extract or embed. (The store
	// checks again in its transaction, against a racing add.)
	if old, found, err := l.k.GetKnowledgeDocument(ctx, r.Collection, name); err != nil || found && old.Hash == hash {
		return old, false, err
	}
	mt := mediaType(name, r.MediaType, r.Data)
	x, err := extract(name, mt, r.Data, l.cfg.MaxTextBytes)
	if err != nil {
		return Document{}, false, err
	}
	pieces := split(x, l.cfg.PassageBytes, l.cfg.OverlapBytes)
	passages := make([]Passage, len(pieces))
	for i, p := range pieces {
		text := x.text[p.start:p.end]
		passages[i] = Passage{Collection: r.Collection, Ord: i, Heading: p.heading, Text: text, Start: p.start, End: p.end,
			Terms: passageTerms(p.heading, text)}
	}
	l.embedPassages(ctx, name, passages)
	title := strings.TrimSpace(r.Title)
	if title == "" {
		title = x.title
	}
	if title == "" {
		title = strings.TrimSuffix(path.Base(name), path.Ext(name))
	}
	// Stored to the microsecond, as both stores keep times.
	now := l.cfg.Now().UTC().Truncate(time.Microsecond)
	doc, changed, err := l.k.PutKnowledgeDocument(ctx, store.KnowledgeDocumentPut{Now: now, Passages: passages,
		Doc: Document{Collection: r.Collection, Name: name, Title: title, MediaType: mt, Source: r.Source, Hash: hash,
			Size: int64(len(r.Data)), AddedBy: r.AddedBy}})
	if err != nil {
		return Document{}, false, err
	}
	return doc, changed, nil
}

// embedPassages gives passages their vectors when embeddings are
// configured. A failing endpoint does not refuse the document: its
// passages are stored without vectors and embedded when a recall first
// needs them.
func (l *Library) embedPassages(ctx context.Context, name string, ps []Passage) {
	if l.emb == nil || len(ps) == 0 {
		return
	}
	texts := make([]string, len(ps))
	for i, p := range ps {
		texts[i] = embedText(p)
	}
	vs, err := l.emb.Embed(ctx, texts)
	if err != nil {
		l.cfg.Logger.Warn("knowledge: embeddings failed; the passages are embedded when first recalled", "document", name, "err", err)
		return
	}
	for i := range ps {
		ps[i].Model, ps[i].Vector = l.cfg.EmbeddingsModel, embeddings.Encode(vs[i])
	}
}

// embedText is what a passage's vector is made of: its heading path and
// its text.
func embedText(p Passage) string {
	if len(p.Heading) == 0 {
		return p.Text
	}
	return strings.Join(p.Heading, " > ") + "\n" + p.Text
}

// Delete removes a document and its passages; false when there was none.
func (l *Library) Delete(ctx context.Context, collection, name string) (bool, error) {
	return l.k.DeleteKnowledgeDocument(ctx, collection, name, l.cfg.Now())
}

// Documents lists a collection's documents ("" lists all).
func (l *Library) Documents(ctx context.Context, collection string) ([]Document, error) {
	return l.k.KnowledgeDocuments(ctx, collection)
}

// Document returns the document called name, if any.
func (l *Library) Document(ctx context.Context, collection, name string) (Document, bool, error) {
	return l.k.GetKnowledgeDocument(ctx, collection, name)
}

// Passages returns a document's passages in order.
func (l *Library) Passages(ctx context.Context, documentID int64) ([]Passage, error) {
	return l.k.KnowledgePassages(ctx, documentID)
}

// Collections lists the collections that have had documents.
func (l *Library) Collections(ctx context.Context) ([]Collection, error) {
	return l.k.KnowledgeCollections(ctx)
}
