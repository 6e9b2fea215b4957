// Package knowledge is the knowledge library: documents the operator and
// people add, split into passages the agent can be given and cite.
//
// Collections. The operator's shared collection (Shared: the folder the
// Watcher keeps in step, the API, /admin), one per chat (ChatCollection,
// by session) and one per person (UserCollection, by user key). A recall
// reads the shared collection and the asking chat's and person's own
// (Scope), never another chat's. Trusted says which text is the
// operator's: what was uploaded from a chat is outside text.
//
// Documents. Add takes bytes with a name and a media type: Markdown, plain
// text, HTML (text through golang.org/x/net/html) and PDF (through
// github.com/ledongthuc/pdf, a pure-Go reader). A document is stored with
// its source, title, SHA-256 and version; the same bytes again are a
// no-op, other bytes under the same name replace the document and every
// passage in one transaction, so a reader sees the old one or the new one
// whole. Bad input — too large, binary data under a text name, a format
// the library does not read, an encrypted or broken PDF, no text — is
// refused with a *gh.Error wrapping ErrTooLarge, ErrBinary,
// ErrUnsupported, ErrEncrypted, ErrBroken or ErrNoText, and nothing of it
// is stored.
//
// Passages. A document is split by its structure: a heading starts a
// passage, whole paragraphs are packed while they fit Config.PassageBytes,
// a longer one is cut after a sentence, and the next passage of a section
// repeats the end of the one before (Config.OverlapBytes). Each passage
// keeps its heading path ("Page N" for a PDF) and its byte offsets in the
// document's text, so a citation can point at it. Its terms (words, stop
// words dropped, plurals folded) are indexed by the store: SQLite FTS5,
// Postgres tsvector under GIN, both over the same terms. With
// Config.EmbeddingsURL each passage also gets a vector from an
// OpenAI-compatible /embeddings endpoint (the client memory uses,
// internal/embeddings).
//
// Recall. Like memory, by evidence over a floor, per retriever: the
// lexical retriever scores by BM25 over the library's counts the
// passages the index finds (at most Config.Candidates: those holding the
// most idf of the question's terms, found without reading every holder
// of a common term, see store.RankKnowledgeMatch) and keeps those whose
// closeness (how far the score
// stands above an average passage's, as a share of an ideal match) plus
// coverage (the share of the question's terms held) clears
// Config.LexicalFloor; the embeddings retriever keeps those whose
// similarity stands above the background (the other passages in scope
// and everyday sentences) by Config.EmbeddingsFloor. The survivors are
// fused by reciprocal rank, at most Config.MaxPassages within
// Config.TokenBudget. Every passage comes back with its document,
// collection, heading path, offsets and the evidence of each retriever;
// Found.Considered also lists those under the floors.
//
// The package reads no environment: cmd wires its Config and the
// Watcher's.
package knowledge
