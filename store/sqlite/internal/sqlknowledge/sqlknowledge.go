package sqlknowledge

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
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

// DFCache keeps the document frequencies TermStats has read, for one
// generation of the library (knowledge_stats.generation rises with every
// write of the index, in the same transaction): fts5vocab counts a term's
// passages by reading its whole doclist, so a common term costs as much
// as its postings.
type DFCache struct {
	mu  sync.Mutex
	gen int64
	df  map[string]int64
}

// maxCachedTerms bounds a DFCache; past it, it starts again.
const maxCachedTerms = 1 << 14

// TermStats returns the library's counts for terms: document frequencies
// from FTS5's own vocabulary, through cache (which may be nil). q should
// be a read transaction, so that the counts and their generation agree.
func TermStats(ctx context.Context, q Querier, terms []string, cache *DFCache) (store.KnowledgeStats, error) {
	st := store.KnowledgeStats{DF: make(map[string]int64, len(terms))}
	var gen int64
	if err := q.QueryRowContext(ctx, `SELECT passages, terms, generation FROM knowledge_stats WHERE id = 1`).Scan(&st.Passages, &st.Terms, &gen); err != nil {
		return st, dbErr(err, "read knowledge stats")
	}
	var missing []string
	if cache != nil {
		cache.mu.Lock()
		for _, t := range terms {
			if df, ok := cache.df[t]; ok && cache.gen == gen {
				if df > 0 {
					st.DF[t] = df
				}
			} else {
				missing = append(missing, t)
			}
		}
		cache.mu.Unlock()
	} else {
		missing = terms
	}
	// One lookup per term: fts5vocab answers an equality on term from
	// the index, where an IN list would scan the vocabulary.
	found := make(map[string]int64, len(missing))
	for _, t := range missing {
		var df int64
		err := q.QueryRowContext(ctx, `SELECT doc FROM knowledge_vocab WHERE term = ?`, t).Scan(&df)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return st, dbErr(err, "read knowledge term counts")
		}
		found[t] = df
		if df > 0 {
			st.DF[t] = df
		}
	}
	if cache != nil && len(found) > 0 {
		cache.mu.Lock()
		if cache.gen != gen || cache.df == nil || len(cache.df) > maxCachedTerms {
			cache.gen, cache.df = gen, make(map[string]int64, len(found))
		}
		maps.Copy(cache.df, found)
		cache.mu.Unlock()
	}
	return st, nil
}

// Match returns the passages of m.Collections holding any of m.Terms,
// those whose held terms weigh most first, with their documents (see
// store.RankKnowledgeMatch: FTS5 reads the rarest terms' postings, and
// queries that stop at the limit for the commoner ones). q should be a
// read transaction, so that every statement reads the same snapshot.
func Match(ctx context.Context, q Querier, m store.KnowledgeMatch) ([]store.KnowledgeHit, error) {
	if len(m.Terms) == 0 || len(m.Collections) == 0 {
		return nil, nil
	}
	for _, t := range m.Terms {
		if err := checkTerm(t); err != nil {
			return nil, err
		}
	}
	x := index{q: q, scope: jsonArray(m.Collections)}
	// When no collection outside the scope has passages (a library of
	// the shared collection alone, say), no passage needs its
	// collection checked.
	var others bool
	if err := q.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM knowledge_collections c WHERE c.name NOT IN (SELECT value FROM json_each(?))
		AND EXISTS (SELECT 1 FROM knowledge_documents d WHERE d.collection = c.name))`, x.scope).Scan(&others); err != nil {
		return nil, dbErr(err, "read knowledge collections")
	}
	x.all = !others
	ids, err := store.RankKnowledgeMatch(ctx, m, x)
	if err != nil || len(ids) == 0 {
		return nil, err
	}
	hits, err := sqlrow.QueryAll(ctx, q, "read knowledge passages", scanHit, `SELECT `+passageCols+`, `+qualified("d.", docCols)+`
		FROM knowledge_passages p JOIN knowledge_documents d ON d.id = p.document_id
		WHERE p.id IN (SELECT value FROM json_each(?))`, jsonArray(ids))
	return inOrder(hits, ids), err
}

// inOrder puts hits in the order of ids.
func inOrder(hits []store.KnowledgeHit, ids []int64) []store.KnowledgeHit {
	at := make(map[int64]int, len(ids))
	for i, id := range ids {
		at[id] = i
	}
	slices.SortFunc(hits, func(a, b store.KnowledgeHit) int { return cmp.Compare(at[a.Passage.ID], at[b.Passage.ID]) })
	return hits
}

func checkTerm(t string) error {
	if t == "" || strings.ContainsAny(t, "\" \t\r\n\x00()") {
		return gh.Errorf(gh.CodeInvalid, "knowledge term %q is not a word", t)
	}
	return nil
}

// ftsAny is an FTS5 query for passages holding any of terms.
func ftsAny(terms []string) string {
	quoted := make([]string, len(terms))
	for i, t := range terms {
		quoted[i] = `"` + t + `"`
	}
	return "(" + strings.Join(quoted, " OR ") + ")"
}

// inScope says a passage f.rowid is in the collections of the JSON array
// that is the next argument. It probes the (collection, id) index, a
// small fraction of the passages' table that stays in the page cache,
// rather than the table's rows.
const inScope = `EXISTS (SELECT 1 FROM knowledge_passages p INDEXED BY knowledge_passages_collection
	WHERE p.collection IN (SELECT value FROM json_each(?)) AND p.id = f.rowid)`

// index answers store.RankKnowledgeMatch from FTS5.
type index struct {
	q     Querier
	scope string // the collections, a JSON array
	all   bool   // every passage is in scope
}

// inScope is the condition that f.rowid is in scope, with its argument.
func (x index) inScope() (string, []any) {
	if x.all {
		return "1", nil
	}
	return inScope, []any{x.scope}
}

func (x index) ids(ctx context.Context, query string, args ...any) ([]int64, error) {
	return sqlrow.QueryAll(ctx, x.q, "match knowledge passages", func(r sqlrow.Scanner) (int64, error) {
		var id int64
		return id, r.Scan(&id)
	}, query, args...)
}

func (x index) Holders(ctx context.Context, terms []string, n int) (map[int64]uint64, error) {
	// One statement: each rare term's holders, then which of the
	// commoner terms the holders of any rare one hold (FTS5 intersects
	// the postings, seeking in the long ones), each row with the bit of
	// its term.
	cond, scopeArgs := x.inScope()
	rare := ftsAny(terms[:n])
	parts := make([]string, 0, len(terms))
	args := make([]any, 0, 2*len(terms))
	for i, t := range terms {
		query := ftsAny([]string{t})
		if i >= n {
			query = rare + ` AND "` + t + `"`
		}
		parts = append(parts, `SELECT f.rowid, `+strconv.Itoa(i)+` FROM knowledge_fts f WHERE knowledge_fts MATCH ? AND `+cond)
		args = append(append(args, query), scopeArgs...)
	}
	masks := map[int64]uint64{}
	rows, err := x.q.QueryContext(ctx, strings.Join(parts, " UNION ALL "), args...)
	if err != nil {
		return nil, dbErr(err, "match knowledge passages")
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var i int
		if err := rows.Scan(&id, &i); err != nil {
			return nil, dbErr(err, "match knowledge passages")
		}
		masks[id] |= 1 << i
	}
	return masks, dbErr(rows.Err(), "match knowledge passages")
}

func (x index) Class(ctx context.Context, all, none []string, limit int) ([]int64, error) {
	quoted := make([]string, len(all))
	for i, t := range all {
		quoted[i] = `"` + t + `"`
	}
	query := "(" + strings.Join(quoted, " AND ") + ")"
	if len(none) > 0 {
		query += " NOT " + ftsAny(none)
	}
	cond, args := x.inScope()
	return x.ids(ctx, `SELECT f.rowid FROM knowledge_fts f WHERE knowledge_fts MATCH ? AND `+cond+` ORDER BY f.rowid LIMIT ?`,
		append(append([]any{query}, args...), limit)...)
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
	length, err := insertPassages(ctx, q, d, p.Passages)
	if err != nil {
		return store.KnowledgeDocument{}, false, err
	}
	if _, err := q.ExecContext(ctx, `UPDATE knowledge_stats SET passages = passages + ?, terms = terms + ?, generation = generation + 1 WHERE id = 1`, len(p.Passages), length); err != nil {
		return store.KnowledgeDocument{}, false, dbErr(err, "count knowledge passages")
	}
	return d, true, bump(ctx, q, d.Collection, p.Now)
}

// insertPassages writes a document's passages and indexes them. The
// passages take the ids after the table's highest (the writer holds the
// database, so nobody else can take them): the rows go in as multi-row
// INSERTs of bound values, prepared once per chunk size (see chunks),
// with no JSON to build and parse and no join to find the new ids again.
// The index gets each passage's distinct terms (it keeps no positions, so
// repeats would only cost tokenizing) in one statement, whatever the
// number of passages: FTS5 flushes its pending terms to a new segment at
// the start of every statement that writes it within a transaction, so
// one statement is one segment per document, not one per chunk. It
// returns the sum of their lengths.
func insertPassages(ctx context.Context, q Querier, d store.KnowledgeDocument, ps []store.KnowledgePassage) (int64, error) {
	if len(ps) == 0 {
		return 0, nil
	}
	var first int64
	if err := q.QueryRowContext(ctx, `SELECT COALESCE(MAX(id), 0) + 1 FROM knowledge_passages`).Scan(&first); err != nil {
		return 0, dbErr(err, "write knowledge passages")
	}
	var length int64
	terms := make([]string, len(ps))
	for _, c := range chunks(len(ps)) {
		rows := make([]any, 0, c.n*passageParams)
		for i := c.at; i < c.at+c.n; i++ {
			p := ps[i]
			var vec any
			if p.Vector != nil {
				vec = p.Vector
			}
			rows = append(rows, first+int64(i), d.ID, d.Collection, i, jsonArray(p.Heading), p.Text, p.Start, p.End, len(p.Terms), p.Model, vec)
			terms[i] = distinctTerms(p.Terms)
			length += int64(len(p.Terms))
		}
		if _, err := q.ExecContext(ctx, insertPassagesSQL(c.n), rows...); err != nil {
			return 0, dbErr(err, "write knowledge passages")
		}
	}
	if _, err := q.ExecContext(ctx, `INSERT INTO knowledge_fts (rowid, terms) SELECT ?1 + j.key, j.value FROM json_each(?2) j`,
		first, jsonArray(terms)); err != nil {
		return 0, dbErr(err, "index knowledge passages")
	}
	return length, nil
}

// passageParams is how many values a passage row binds.
const passageParams = 11

// chunk is a run of n passages from the at-th.
type chunk struct{ at, n int }

// chunks splits n passages into runs of 64, 16, 4 and 1: a document of
// any size goes in as a few statements, and only four statements of each
// kind are ever prepared.
func chunks(n int) []chunk {
	var out []chunk
	at := 0
	for _, size := range []int{64, 16, 4, 1} {
		for n-at >= size {
			out = append(out, chunk{at, size})
			at += size
		}
	}
	return out
}

func insertPassagesSQL(n int) string {
	return `INSERT INTO knowledge_passages (id, document_id, collection, ord, heading, text, start_offset, end_offset, length,
		embedding_model, embedding) VALUES ` + values(n, passageParams)
}

// values is n rows of k placeholders each.
func values(n, k int) string {
	row := "(" + strings.TrimSuffix(strings.Repeat("?, ", k), ", ") + ")"
	return strings.TrimSuffix(strings.Repeat(row+", ", n), ", ")
}

// distinctTerms is terms without repeats, space separated, in order of
// first appearance.
func distinctTerms(terms []string) string {
	seen := make(map[string]struct{}, len(terms))
	var sb strings.Builder
	for _, t := range terms {
		if _, ok := seen[t]; ok {
			continue
		}
		seen[t] = struct{}{}
		if sb.Len() > 0 {
			sb.WriteByte(' ')
		}
		sb.WriteString(t)
	}
	return sb.String()
}

// dropPassages removes a document's passages from the index, the counts
// and the table.
func dropPassages(ctx context.Context, q Querier, documentID int64) error {
	if _, err := q.ExecContext(ctx, `DELETE FROM knowledge_fts WHERE rowid IN (SELECT id FROM knowledge_passages WHERE document_id = ?)`, documentID); err != nil {
		return dbErr(err, "unindex knowledge passages")
	}
	if _, err := q.ExecContext(ctx, `UPDATE knowledge_stats SET
		passages = passages - (SELECT COUNT(*) FROM knowledge_passages WHERE document_id = ?1),
		terms = terms - (SELECT COALESCE(SUM(length), 0) FROM knowledge_passages WHERE document_id = ?1),
		generation = generation + 1 WHERE id = 1`, documentID); err != nil {
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
