package sqlknowledge

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strings"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/store"
	"github.com/gatehouse/gatehouse/store/sqlite/internal/sqlrow"
)

// Querier is what the store runs statements on.
type Querier = sqlrow.Querier

var (
	dbErr      = sqlrow.DBErr
	micros     = sqlrow.Micros
	fromMicros = sqlrow.FromMicros
)

const docCols = `id, collection, name, title, media_type, source, hash, version, size, passages, added_by, indexed_at, created_at`

func scanDoc(row sqlrow.Scanner, extra ...any) (store.KnowledgeDocument, error) {
	var d store.KnowledgeDocument
	var indexed, created int64
	err := row.Scan(append([]any{&d.ID, &d.Collection, &d.Name, &d.Title, &d.MediaType, &d.Source, &d.Hash, &d.Version, &d.Size,
		&d.Passages, &d.AddedBy, &indexed, &created}, extra...)...)
	d.IndexedAt, d.Created = fromMicros(indexed), fromMicros(created)
	return d, err
}

const passageCols = `p.id, p.document_id, p.collection, p.ord, p.heading, p.text, p.start_offset, p.end_offset, p.length`

func scanPassage(row sqlrow.Scanner, extra ...any) (store.KnowledgePassage, error) {
	var p store.KnowledgePassage
	var heading string
	err := row.Scan(append([]any{&p.ID, &p.DocumentID, &p.Collection, &p.Ord, &heading, &p.Text, &p.Start, &p.End, &p.Length}, extra...)...)
	if err == nil && heading != "" && heading != "[]" {
		err = json.Unmarshal([]byte(heading), &p.Heading)
	}
	return p, err
}

func jsonArray[T any](v []T) string {
	if len(v) == 0 {
		return "[]"
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// GetDocument returns the document called name in collection, if any.
func GetDocument(ctx context.Context, q Querier, collection, name string) (store.KnowledgeDocument, bool, error) {
	d, err := scanDoc(q.QueryRowContext(ctx, `SELECT `+docCols+` FROM knowledge_documents WHERE collection = ? AND name = ?`, collection, name))
	if errors.Is(err, sql.ErrNoRows) {
		return store.KnowledgeDocument{}, false, nil
	}
	return d, err == nil, dbErr(err, "get knowledge document")
}

// Documents lists a collection's documents ("" for all), by collection
// and name.
func Documents(ctx context.Context, q Querier, collection string) ([]store.KnowledgeDocument, error) {
	scan := func(r sqlrow.Scanner) (store.KnowledgeDocument, error) { return scanDoc(r) }
	return sqlrow.QueryAll(ctx, q, "list knowledge documents", scan, `SELECT `+docCols+` FROM knowledge_documents
		WHERE ? = '' OR collection = ? ORDER BY collection, name`, collection, collection)
}

// Passages returns a document's passages in order.
func Passages(ctx context.Context, q Querier, documentID int64) ([]store.KnowledgePassage, error) {
	scan := func(r sqlrow.Scanner) (store.KnowledgePassage, error) { return scanPassage(r) }
	return sqlrow.QueryAll(ctx, q, "list knowledge passages", scan, `SELECT `+passageCols+` FROM knowledge_passages p
		WHERE p.document_id = ? ORDER BY p.ord`, documentID)
}

// Collections lists the collections with their document and passage
// counts.
func Collections(ctx context.Context, q Querier) ([]store.KnowledgeCollection, error) {
	return sqlrow.QueryAll(ctx, q, "list knowledge collections", func(r sqlrow.Scanner) (store.KnowledgeCollection, error) {
		var c store.KnowledgeCollection
		var updated int64
		err := r.Scan(&c.Name, &c.Version, &updated, &c.Documents, &c.Passages)
		c.Updated = fromMicros(updated)
		return c, err
	}, `SELECT c.name, c.version, c.updated_at, COUNT(d.id), COALESCE(SUM(d.passages), 0)
		FROM knowledge_collections c LEFT JOIN knowledge_documents d ON d.collection = c.name
		GROUP BY c.name ORDER BY c.name`)
}

// CollectionVersions returns the versions of the named collections.
func CollectionVersions(ctx context.Context, q Querier, names []string) (map[string]int64, error) {
	type nv struct {
		name string
		v    int64
	}
	rows, err := sqlrow.QueryAll(ctx, q, "read knowledge collection versions", func(r sqlrow.Scanner) (nv, error) {
		var x nv
		return x, r.Scan(&x.name, &x.v)
	}, `SELECT name, version FROM knowledge_collections WHERE name IN (SELECT value FROM json_each(?))`, jsonArray(names))
	out := make(map[string]int64, len(rows))
	for _, r := range rows {
		out[r.name] = r.v
	}
	return out, err
}

// TermStats returns the library's counts for terms: document frequencies
// from FTS5's own vocabulary.
func TermStats(ctx context.Context, q Querier, terms []string) (store.KnowledgeStats, error) {
	st := store.KnowledgeStats{DF: make(map[string]int64, len(terms))}
	if err := q.QueryRowContext(ctx, `SELECT passages, terms FROM knowledge_stats WHERE id = 1`).Scan(&st.Passages, &st.Terms); err != nil {
		return st, dbErr(err, "read knowledge stats")
	}
	// One lookup per term: fts5vocab answers an equality on term from
	// the index, where an IN list would scan the vocabulary.
	for _, t := range terms {
		var df int64
		err := q.QueryRowContext(ctx, `SELECT doc FROM knowledge_vocab WHERE term = ?`, t).Scan(&df)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return st, dbErr(err, "read knowledge term counts")
		}
		st.DF[t] = df
	}
	return st, nil
}

// Match returns the passages of m.Collections holding any of m.Terms,
// FTS5's BM25 rank first, with their documents.
func Match(ctx context.Context, q Querier, m store.KnowledgeMatch) ([]store.KnowledgeHit, error) {
	if len(m.Terms) == 0 || len(m.Collections) == 0 {
		return nil, nil
	}
	quoted := make([]string, len(m.Terms))
	for i, t := range m.Terms {
		if t == "" || strings.ContainsAny(t, "\" \t\r\n\x00") {
			return nil, gh.Errorf(gh.CodeInvalid, "knowledge term %q is not a word", t)
		}
		quoted[i] = `"` + t + `"`
	}
	return sqlrow.QueryAll(ctx, q, "match knowledge passages", scanHit, `SELECT `+passageCols+`, `+qualified("d.", docCols)+`
		FROM knowledge_fts f JOIN knowledge_passages p ON p.id = f.rowid JOIN knowledge_documents d ON d.id = p.document_id
		WHERE knowledge_fts MATCH ? AND p.collection IN (SELECT value FROM json_each(?))
		ORDER BY bm25(knowledge_fts) LIMIT ?`, strings.Join(quoted, " OR "), jsonArray(m.Collections), max(m.Limit, 1))
}

func scanHit(r sqlrow.Scanner) (store.KnowledgeHit, error) { return scanHitWith(r) }

func qualified(prefix, cols string) string {
	parts := strings.Split(cols, ", ")
	for i, c := range parts {
		parts[i] = prefix + c
	}
	return strings.Join(parts, ", ")
}

// Vectors returns every passage of a collection with its document and its
// vector by model (nil when none), and the collection's version.
func Vectors(ctx context.Context, q Querier, collection, model string) ([]store.KnowledgeHit, int64, error) {
	var version int64
	err := q.QueryRowContext(ctx, `SELECT version FROM knowledge_collections WHERE name = ?`, collection).Scan(&version)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, 0, dbErr(err, "read knowledge collection")
	}
	hits, err := sqlrow.QueryAll(ctx, q, "read knowledge vectors", func(r sqlrow.Scanner) (store.KnowledgeHit, error) {
		var vec []byte
		var vmodel string
		h, err := scanHitWith(r, &vmodel, &vec)
		if vmodel == model {
			h.Passage.Model, h.Passage.Vector = vmodel, vec
		}
		return h, err
	}, `SELECT `+passageCols+`, `+qualified("d.", docCols)+`, p.embedding_model, p.embedding
		FROM knowledge_passages p JOIN knowledge_documents d ON d.id = p.document_id
		WHERE p.collection = ? ORDER BY p.id`, collection)
	return hits, version, err
}

func scanHitWith(r sqlrow.Scanner, extra ...any) (store.KnowledgeHit, error) {
	var d store.KnowledgeDocument
	var indexed, created int64
	p, err := scanPassage(r, append([]any{&d.ID, &d.Collection, &d.Name, &d.Title, &d.MediaType, &d.Source, &d.Hash, &d.Version, &d.Size,
		&d.Passages, &d.AddedBy, &indexed, &created}, extra...)...)
	d.IndexedAt, d.Created = fromMicros(indexed), fromMicros(created)
	return store.KnowledgeHit{Passage: p, Document: d}, err
}

// SetVectors stores vectors by model of passages that still exist.
func SetVectors(ctx context.Context, q Querier, model string, ids []int64, vectors [][]byte) error {
	if len(ids) != len(vectors) {
		return gh.Errorf(gh.CodeInvalid, "%d passage ids for %d vectors", len(ids), len(vectors))
	}
	for i, id := range ids {
		if _, err := q.ExecContext(ctx, `UPDATE knowledge_passages SET embedding_model = ?, embedding = ? WHERE id = ?`, model, vectors[i], id); err != nil {
			return dbErr(err, "store knowledge vectors")
		}
	}
	return nil
}

// Put stores a document with its passages, replacing the stored one's
// passages unless its hash is the same. q must be a transaction.
func Put(ctx context.Context, q Querier, p store.KnowledgeDocumentPut) (store.KnowledgeDocument, bool, error) {
	d := p.Doc
	old, found, err := GetDocument(ctx, q, d.Collection, d.Name)
	if err != nil {
		return store.KnowledgeDocument{}, false, err
	}
	if found && old.Hash == d.Hash {
		return old, false, nil
	}
	d.Version, d.Created, d.IndexedAt, d.Passages = 1, p.Now, p.Now, len(p.Passages)
	if found {
		if err := dropPassages(ctx, q, old.ID); err != nil {
			return store.KnowledgeDocument{}, false, err
		}
		d.ID, d.Version, d.Created = old.ID, old.Version+1, old.Created
		_, err = q.ExecContext(ctx, `UPDATE knowledge_documents SET title = ?, media_type = ?, source = ?, hash = ?, version = ?, size = ?,
			passages = ?, added_by = ?, indexed_at = ? WHERE id = ?`,
			d.Title, d.MediaType, d.Source, d.Hash, d.Version, d.Size, d.Passages, d.AddedBy, micros(d.IndexedAt), d.ID)
	} else {
		err = q.QueryRowContext(ctx, `INSERT INTO knowledge_documents (collection, name, title, media_type, source, hash, version, size,
			passages, added_by, indexed_at, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
			d.Collection, d.Name, d.Title, d.MediaType, d.Source, d.Hash, d.Version, d.Size, d.Passages, d.AddedBy,
			micros(d.IndexedAt), micros(d.Created)).Scan(&d.ID)
	}
	if err != nil {
		return store.KnowledgeDocument{}, false, dbErr(err, "write knowledge document")
	}
	var length int64
	for i, ps := range p.Passages {
		var id int64
		err := q.QueryRowContext(ctx, `INSERT INTO knowledge_passages (document_id, collection, ord, heading, text, start_offset, end_offset,
			length, embedding_model, embedding) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
			d.ID, d.Collection, i, jsonArray(ps.Heading), ps.Text, ps.Start, ps.End, len(ps.Terms), ps.Model, ps.Vector).Scan(&id)
		if err != nil {
			return store.KnowledgeDocument{}, false, dbErr(err, "write knowledge passage")
		}
		if _, err := q.ExecContext(ctx, `INSERT INTO knowledge_fts (rowid, terms) VALUES (?, ?)`, id, strings.Join(ps.Terms, " ")); err != nil {
			return store.KnowledgeDocument{}, false, dbErr(err, "index knowledge passage")
		}
		length += int64(len(ps.Terms))
	}
	if _, err := q.ExecContext(ctx, `UPDATE knowledge_stats SET passages = passages + ?, terms = terms + ? WHERE id = 1`, len(p.Passages), length); err != nil {
		return store.KnowledgeDocument{}, false, dbErr(err, "count knowledge passages")
	}
	return d, true, bump(ctx, q, d.Collection, p.Now)
}

// dropPassages removes a document's passages from the index, the counts
// and the table.
func dropPassages(ctx context.Context, q Querier, documentID int64) error {
	if _, err := q.ExecContext(ctx, `DELETE FROM knowledge_fts WHERE rowid IN (SELECT id FROM knowledge_passages WHERE document_id = ?)`, documentID); err != nil {
		return dbErr(err, "unindex knowledge passages")
	}
	if _, err := q.ExecContext(ctx, `UPDATE knowledge_stats SET
		passages = passages - (SELECT COUNT(*) FROM knowledge_passages WHERE document_id = ?1),
		terms = terms - (SELECT COALESCE(SUM(length), 0) FROM knowledge_passages WHERE document_id = ?1) WHERE id = 1`, documentID); err != nil {
		return dbErr(err, "count knowledge passages")
	}
	_, err := q.ExecContext(ctx, `DELETE FROM knowledge_passages WHERE document_id = ?`, documentID)
	return dbErr(err, "delete knowledge passages")
}

func bump(ctx context.Context, q Querier, collection string, now time.Time) error {
	_, err := q.ExecContext(ctx, `INSERT INTO knowledge_collections (name, version, updated_at) VALUES (?, 1, ?)
		ON CONFLICT (name) DO UPDATE SET version = version + 1, updated_at = excluded.updated_at`, collection, micros(now))
	return dbErr(err, "bump knowledge collection")
}

// Delete removes a document and its passages. q must be a transaction.
func Delete(ctx context.Context, q Querier, collection, name string, now time.Time) (bool, error) {
	old, found, err := GetDocument(ctx, q, collection, name)
	if err != nil || !found {
		return false, err
	}
	if err := dropPassages(ctx, q, old.ID); err != nil {
		return false, err
	}
	if _, err := q.ExecContext(ctx, `DELETE FROM knowledge_documents WHERE id = ?`, old.ID); err != nil {
		return false, dbErr(err, "delete knowledge document")
	}
	return true, bump(ctx, q, collection, now)
}
