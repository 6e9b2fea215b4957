package pgknowledge

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/store"
)

// Querier is what the store runs statements on.
type Querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// dbErr classifies a database error as the store does; the
// *pgconn.PgError stays reachable so the store's InTx can retry.
func dbErr(err error, what string) error {
	if err == nil {
		return nil
	}
	var ge *gh.Error
	if errors.As(err, &ge) {
		return err
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && strings.HasPrefix(pgErr.Code, "22") {
		return gh.Wrap(gh.CodeInvalid, err, "postgres: %s", what)
	}
	return gh.Wrap(gh.CodeUnavailable, err, "postgres: %s", what)
}

const docCols = `id, collection, name, title, media_type, source, hash, version, size, passages, added_by, indexed_at, created_at`
const passageCols = `p.id, p.document_id, p.collection, p.ord, p.heading, p.text, p.start_offset, p.end_offset, p.length`

func docDest(d *store.KnowledgeDocument) []any {
	return []any{&d.ID, &d.Collection, &d.Name, &d.Title, &d.MediaType, &d.Source, &d.Hash, &d.Version, &d.Size, &d.Passages, &d.AddedBy, &d.IndexedAt, &d.Created}
}

// noHeading makes an empty heading path nil, as SQLite reads it.
func noHeading(p *store.KnowledgePassage) {
	if len(p.Heading) == 0 {
		p.Heading = nil
	}
}

func passageDest(p *store.KnowledgePassage) []any {
	return []any{&p.ID, &p.DocumentID, &p.Collection, &p.Ord, &p.Heading, &p.Text, &p.Start, &p.End, &p.Length}
}

func utcDoc(d *store.KnowledgeDocument) { d.IndexedAt, d.Created = d.IndexedAt.UTC(), d.Created.UTC() }

func queryAll[T any](ctx context.Context, q Querier, what string, scan func(pgx.Rows) (T, error), sql string, args ...any) ([]T, error) {
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return nil, dbErr(err, what)
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, dbErr(err, what)
		}
		out = append(out, v)
	}
	return out, dbErr(rows.Err(), what)
}

const getDocumentSQL = `SELECT ` + docCols + ` FROM knowledge_documents WHERE collection = $1 AND name = $2`

// GetDocument returns the document called name in collection, if any.
func GetDocument(ctx context.Context, q Querier, collection, name string) (store.KnowledgeDocument, bool, error) {
	var d store.KnowledgeDocument
	err := q.QueryRow(ctx, getDocumentSQL, collection, name).Scan(docDest(&d)...)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.KnowledgeDocument{}, false, nil
	}
	utcDoc(&d)
	return d, err == nil, dbErr(err, "get knowledge document")
}

// Documents lists a collection's documents ("" for all).
func Documents(ctx context.Context, q Querier, collection string) ([]store.KnowledgeDocument, error) {
	return queryAll(ctx, q, "list knowledge documents", func(r pgx.Rows) (store.KnowledgeDocument, error) {
		var d store.KnowledgeDocument
		err := r.Scan(docDest(&d)...)
		utcDoc(&d)
		return d, err
	}, `SELECT `+docCols+` FROM knowledge_documents WHERE $1 = '' OR collection = $1 ORDER BY collection, name`, collection)
}

// Passages returns a document's passages in order.
func Passages(ctx context.Context, q Querier, documentID int64) ([]store.KnowledgePassage, error) {
	return queryAll(ctx, q, "list knowledge passages", func(r pgx.Rows) (store.KnowledgePassage, error) {
		var p store.KnowledgePassage
		err := r.Scan(passageDest(&p)...)
		noHeading(&p)
		return p, err
	}, `SELECT `+passageCols+` FROM knowledge_passages p WHERE p.document_id = $1 ORDER BY p.ord`, documentID)
}

// Collections lists the collections with their counts.
func Collections(ctx context.Context, q Querier) ([]store.KnowledgeCollection, error) {
	return queryAll(ctx, q, "list knowledge collections", func(r pgx.Rows) (store.KnowledgeCollection, error) {
		var c store.KnowledgeCollection
		err := r.Scan(&c.Name, &c.Version, &c.Updated, &c.Documents, &c.Passages)
		c.Updated = c.Updated.UTC()
		return c, err
	}, `SELECT c.name, c.version, c.updated_at, COUNT(d.id)::int, COALESCE(SUM(d.passages), 0)::int
		FROM knowledge_collections c LEFT JOIN knowledge_documents d ON d.collection = c.name
		GROUP BY c.name ORDER BY c.name`)
}

// CollectionVersions returns the versions of the named collections.
func CollectionVersions(ctx context.Context, q Querier, names []string) (map[string]int64, error) {
	out := map[string]int64{}
	_, err := queryAll(ctx, q, "read knowledge collection versions", func(r pgx.Rows) (struct{}, error) {
		var name string
		var v int64
		err := r.Scan(&name, &v)
		out[name] = v
		return struct{}{}, err
	}, `SELECT name, version FROM knowledge_collections WHERE name = ANY($1)`, names)
	return out, err
}

// TermStats returns the library's counts for terms: a term's document
// frequency is its knowledge_terms row plus its entries in the log not
// yet folded into it (see insertPassages), read in one statement.
func TermStats(ctx context.Context, q Querier, terms []string) (store.KnowledgeStats, error) {
	st := store.KnowledgeStats{DF: make(map[string]int64, len(terms))}
	if err := q.QueryRow(ctx, `SELECT passages, terms FROM knowledge_stats WHERE id = 1`).Scan(&st.Passages, &st.Terms); err != nil {
		return st, dbErr(err, "read knowledge stats")
	}
	_, err := queryAll(ctx, q, "read knowledge term counts", func(r pgx.Rows) (struct{}, error) {
		var term string
		var df int64
		err := r.Scan(&term, &df)
		st.DF[term] += df
		return struct{}{}, err
	}, `SELECT term, df FROM knowledge_terms WHERE term = ANY($1)
		UNION ALL
		SELECT q.t, SUM((l.counts->>q.t)::bigint)::bigint FROM knowledge_term_log l, unnest($1::text[]) q(t)
		WHERE l.counts ? q.t GROUP BY q.t`, terms)
	for t, df := range st.DF {
		if df <= 0 {
			delete(st.DF, t)
		}
	}
	return st, err
}

func checkTerm(t string) error {
	if t == "" || strings.ContainsAny(t, "'\\ \t\r\n\x00") {
		return gh.Errorf(gh.CodeInvalid, "knowledge term %q is not a word", t)
	}
	return nil
}

// tsquery is terms joined by op, each quoted so that Postgres parses
// none of them (checkTerm has refused quotes).
func tsquery(terms []string, op string) string {
	quoted := make([]string, len(terms))
	for i, t := range terms {
		quoted[i] = "'" + t + "'"
	}
	return "(" + strings.Join(quoted, op) + ")"
}

// Match returns the passages of m.Collections holding any of m.Terms,
// those whose held terms weigh most first, with their documents (see
// store.RankKnowledgeMatch: the rarest terms' holders in one statement,
// the commoner terms' combinations by queries that stop at the limit). q
// should be a repeatable-read transaction, so that every statement reads
// the same snapshot.
func Match(ctx context.Context, q Querier, m store.KnowledgeMatch) ([]store.KnowledgeHit, error) {
	if len(m.Terms) == 0 || len(m.Collections) == 0 {
		return nil, nil
	}
	for _, t := range m.Terms {
		if err := checkTerm(t); err != nil {
			return nil, err
		}
	}
	ids, err := store.RankKnowledgeMatch(ctx, m, index{q: q, scope: m.Collections})
	if err != nil || len(ids) == 0 {
		return nil, err
	}
	hits, err := queryAll(ctx, q, "read knowledge passages", func(r pgx.Rows) (store.KnowledgeHit, error) { return scanHit(r) },
		`SELECT `+passageCols+`, `+qualified("d.", docCols)+` FROM knowledge_passages p JOIN knowledge_documents d ON d.id = p.document_id
		WHERE p.id = ANY($1)`, ids)
	at := make(map[int64]int, len(ids))
	for i, id := range ids {
		at[id] = i
	}
	slices.SortFunc(hits, func(a, b store.KnowledgeHit) int { return cmp.Compare(at[a.Passage.ID], at[b.Passage.ID]) })
	return hits, err
}

// index answers store.RankKnowledgeMatch from the GIN index. Its
// statements go by the simple protocol: each is planned for its own
// terms (a generic plan cannot tell a rare term from a common one).
type index struct {
	q     Querier
	scope []string
}

func (x index) Holders(ctx context.Context, terms []string, n int) (map[int64]uint64, error) {
	queries := make([]string, len(terms))
	for i, t := range terms {
		queries[i] = "'" + t + "'"
	}
	masks := map[int64]uint64{}
	_, err := queryAll(ctx, x.q, "match knowledge passages", func(r pgx.Rows) (struct{}, error) {
		var id, mask int64
		err := r.Scan(&id, &mask)
		masks[id] = uint64(mask)
		return struct{}{}, err
	}, `SELECT p.id, (SELECT COALESCE(bit_or(1::bigint << (w.i - 1)::int), 0) FROM unnest($2::text[]::tsquery[]) WITH ORDINALITY w(q, i)
			WHERE p.tsv @@ w.q)
		FROM knowledge_passages p WHERE p.tsv @@ $1::tsquery AND p.collection = ANY($3)`,
		pgx.QueryExecModeSimpleProtocol, tsquery(terms[:n], " | "), queries, x.scope)
	return masks, err
}

func (x index) Class(ctx context.Context, all, none []string, limit int) ([]int64, error) {
	query := tsquery(all, " & ")
	if len(none) > 0 {
		query += " & !" + tsquery(none, " | ")
	}
	return queryAll(ctx, x.q, "match knowledge passages", func(r pgx.Rows) (int64, error) {
		var id int64
		return id, r.Scan(&id)
	}, `SELECT id FROM knowledge_passages WHERE tsv @@ $1::tsquery AND collection = ANY($2) ORDER BY id LIMIT $3`,
		pgx.QueryExecModeSimpleProtocol, query, x.scope, limit)
}

func scanHit(r pgx.Rows, extra ...any) (store.KnowledgeHit, error) {
	var h store.KnowledgeHit
	err := r.Scan(append(append(passageDest(&h.Passage), docDest(&h.Document)...), extra...)...)
	utcDoc(&h.Document)
	noHeading(&h.Passage)
	return h, err
}

func qualified(prefix, cols string) string {
	parts := strings.Split(cols, ", ")
	for i, c := range parts {
		parts[i] = prefix + c
	}
	return strings.Join(parts, ", ")
}

// Vectors returns every passage of a collection with its document and its
// vector by model (nil when none), and the collection's version (read
// first: the rows are at least as new).
func Vectors(ctx context.Context, q Querier, collection, model string) ([]store.KnowledgeHit, int64, error) {
	var version int64
	err := q.QueryRow(ctx, `SELECT version FROM knowledge_collections WHERE name = $1`, collection).Scan(&version)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return nil, 0, dbErr(err, "read knowledge collection")
	}
	hits, err := queryAll(ctx, q, "read knowledge vectors", func(r pgx.Rows) (store.KnowledgeHit, error) {
		var vmodel string
		var vec []byte
		h, err := scanHit(r, &vmodel, &vec)
		if vmodel == model {
			h.Passage.Model, h.Passage.Vector = vmodel, vec
		}
		return h, err
	}, `SELECT `+passageCols+`, `+qualified("d.", docCols)+`, p.embedding_model, p.embedding
		FROM knowledge_passages p JOIN knowledge_documents d ON d.id = p.document_id
		WHERE p.collection = $1 ORDER BY p.id`, collection)
	return hits, version, err
}

// SetVectors stores vectors by model of passages that still exist.
func SetVectors(ctx context.Context, q Querier, model string, ids []int64, vectors [][]byte) error {
	if len(ids) != len(vectors) {
		return gh.Errorf(gh.CodeInvalid, "%d passage ids for %d vectors", len(ids), len(vectors))
	}
	_, err := q.Exec(ctx, `UPDATE knowledge_passages p SET embedding_model = $1, embedding = v.vec
		FROM unnest($2::bigint[], $3::bytea[]) v(id, vec) WHERE p.id = v.id`, model, ids, vectors)
	return dbErr(err, "store knowledge vectors")
}

const lockStatsSQL = `SELECT 1 FROM knowledge_stats WHERE id = 1 FOR UPDATE`

// lockStats takes the library's write lock (the stats row).
func lockStats(ctx context.Context, q Querier) error {
	_, err := q.Exec(ctx, lockStatsSQL)
	return dbErr(err, "lock knowledge stats")
}

// batcher is a transaction that can send several statements in one round
// trip (the store's pgtx.Tx; BEGIN goes with the first).
type batcher interface {
	Batch(ctx context.Context, b *pgx.Batch) (pgx.BatchResults, error)
}

// lockAndGet takes the library's write lock and reads the document called
// name, in one round trip (with BEGIN) when q can batch.
func lockAndGet(ctx context.Context, q Querier, collection, name string) (store.KnowledgeDocument, bool, error) {
	bq, ok := q.(batcher)
	if !ok {
		if err := lockStats(ctx, q); err != nil {
			return store.KnowledgeDocument{}, false, err
		}
		return GetDocument(ctx, q, collection, name)
	}
	var b pgx.Batch
	b.Queue(lockStatsSQL)
	b.Queue(getDocumentSQL, collection, name)
	br, err := bq.Batch(ctx, &b)
	if err != nil {
		return store.KnowledgeDocument{}, false, dbErr(err, "lock knowledge stats")
	}
	defer br.Close()
	if _, err := br.Exec(); err != nil {
		return store.KnowledgeDocument{}, false, dbErr(err, "lock knowledge stats")
	}
	var d store.KnowledgeDocument
	err = br.QueryRow().Scan(docDest(&d)...)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.KnowledgeDocument{}, false, dbErr(br.Close(), "get knowledge document")
	}
	if err == nil {
		err = br.Close()
	}
	utcDoc(&d)
	return d, err == nil, dbErr(err, "get knowledge document")
}

// Put stores a document with its passages, replacing the stored one's
// passages unless its hash is the same. q must be a transaction. A new
// document costs two round trips before the commit: the lock with the
// read of the name, then one statement writing the document, its
// passages, its term counts, the library's counts and the collection's
// version.
func Put(ctx context.Context, q Querier, p store.KnowledgeDocumentPut) (store.KnowledgeDocument, bool, error) {
	d := p.Doc
	old, found, err := lockAndGet(ctx, q, d.Collection, d.Name)
	if err != nil {
		return store.KnowledgeDocument{}, false, err
	}
	if found && old.Hash == d.Hash {
		return old, false, nil
	}
	d.Version, d.Created, d.IndexedAt, d.Passages = 1, p.Now.UTC(), p.Now.UTC(), len(p.Passages)
	if found {
		if err := dropPassages(ctx, q, old.ID); err != nil {
			return store.KnowledgeDocument{}, false, err
		}
		d.ID, d.Version, d.Created = old.ID, old.Version+1, old.Created
		_, err = q.Exec(ctx, `UPDATE knowledge_documents SET title = $1, media_type = $2, source = $3, hash = $4, version = $5, size = $6,
			passages = $7, added_by = $8, indexed_at = $9 WHERE id = $10`,
			d.Title, d.MediaType, d.Source, d.Hash, d.Version, d.Size, d.Passages, d.AddedBy, d.IndexedAt, d.ID)
		if err != nil {
			return store.KnowledgeDocument{}, false, dbErr(err, "write knowledge document")
		}
	}
	if d.ID, err = insertPassages(ctx, q, d, p.Passages, p.Now); err != nil {
		return store.KnowledgeDocument{}, false, err
	}
	return d, true, nil
}

// insertPassages writes, in one statement, the document's row when it
// is new (d.ID 0; its id is returned), the passages, their terms'
// document frequencies (a row of the log), the library's counts and the
// collection's version; then folds the log when it is full.
func insertPassages(ctx context.Context, q Querier, d store.KnowledgeDocument, ps []store.KnowledgePassage, now time.Time) (int64, error) {
	n := len(ps)
	ords, starts, ends, lengths := make([]int32, n), make([]int32, n), make([]int32, n), make([]int32, n)
	texts, models, headings, terms := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	vectors := make([][]byte, n)
	df := map[string]int64{}
	var total int64
	for i, p := range ps {
		ords[i], starts[i], ends[i], lengths[i] = int32(i), int32(p.Start), int32(p.End), int32(len(p.Terms))
		texts[i], models[i], vectors[i] = p.Text, p.Model, p.Vector
		// Arrays of arrays must be rectangular in Postgres: the heading
		// path and the distinct terms travel as one joined string each.
		headings[i] = strings.Join(p.Heading, "\x1f")
		distinct := distinctTerms(p.Terms)
		for _, t := range distinct {
			if strings.ContainsAny(t, " \x1f") || t == "" {
				return 0, gh.Errorf(gh.CodeInvalid, "knowledge term %q is not a word", t)
			}
			df[t]++
		}
		terms[i] = strings.Join(distinct, " ")
		total += int64(len(p.Terms))
	}
	counts, err := json.Marshal(df)
	if err != nil {
		return 0, gh.Wrap(gh.CodeInternal, err, "encode knowledge term counts")
	}
	args := []any{d.ID, d.Collection, ords, headings, texts, starts, ends, lengths, terms, models, vectors,
		string(counts), n, total, now.UTC()}
	doc := `SELECT $1::bigint AS id`
	if d.ID == 0 {
		doc = `INSERT INTO knowledge_documents (collection, name, title, media_type, source, hash, version, size, passages, added_by,
			indexed_at, created_at) SELECT $2, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26 WHERE $1::bigint = 0 RETURNING id`
		args = append(args, d.Name, d.Title, d.MediaType, d.Source, d.Hash, d.Version, d.Size, d.Passages, d.AddedBy, d.IndexedAt, d.Created)
	}
	// The document's term counts go in as one row of the log; the
	// writer that fills the log folds it.
	var id int64
	var pending int
	if err := q.QueryRow(ctx, `WITH d AS (`+doc+`),
			p AS (INSERT INTO knowledge_passages (document_id, collection, ord, heading, text, start_offset, end_offset, length, tsv,
				embedding_model, embedding)
			SELECT (SELECT id FROM d), $2, x.ord, CASE WHEN x.heading = '' THEN '{}'::text[] ELSE string_to_array(x.heading, chr(31)) END,
				x.text, x.s, x.e, x.len, array_to_tsvector(CASE WHEN x.terms = '' THEN '{}'::text[] ELSE string_to_array(x.terms, ' ') END),
				x.model, x.vec
			FROM unnest($3::int[], $4::text[], $5::text[], $6::int[], $7::int[], $8::int[], $9::text[], $10::text[], $11::bytea[])
				x(ord, heading, text, s, e, len, terms, model, vec)),
			l AS (INSERT INTO knowledge_term_log (counts) VALUES ($12::text::jsonb)),
			b AS (INSERT INTO knowledge_collections (name, version, updated_at) VALUES ($2, 1, $15)
				ON CONFLICT (name) DO UPDATE SET version = knowledge_collections.version + 1, updated_at = excluded.updated_at)
		UPDATE knowledge_stats SET passages = passages + $13, terms = terms + $14, pending = pending + 1 WHERE id = 1
		RETURNING (SELECT id FROM d), pending`, args...).Scan(&id, &pending); err != nil {
		return 0, dbErr(err, "write knowledge passages")
	}
	if pending >= foldEvery {
		return id, fold(ctx, q)
	}
	return id, nil
}

// foldEvery is how many documents' term counts the log holds before a
// writer folds them into knowledge_terms: the more, the fewer updates of
// a common term, and the more a recall sums from the log.
const foldEvery = 32

// fold moves the log's term counts into knowledge_terms, one update per
// term. The caller holds the stats row.
func fold(ctx context.Context, q Querier) error {
	_, err := q.Exec(ctx, `WITH gone AS (DELETE FROM knowledge_term_log RETURNING counts),
			sums AS (SELECT e.key AS t, SUM(e.value::bigint)::bigint AS c FROM gone, jsonb_each_text(gone.counts) e GROUP BY e.key),
			z AS (UPDATE knowledge_stats SET pending = 0 WHERE id = 1)
		INSERT INTO knowledge_terms (term, df) SELECT t, c FROM sums ORDER BY t
		ON CONFLICT (term) DO UPDATE SET df = knowledge_terms.df + excluded.df`)
	return dbErr(err, "fold knowledge term counts")
}

func distinctTerms(terms []string) []string {
	seen := make(map[string]bool, len(terms))
	out := make([]string, 0, len(terms))
	for _, t := range terms {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}

// dropPassages removes a document's passages with their share of the
// term counts and the library's counts.
func dropPassages(ctx context.Context, q Querier, documentID int64) error {
	// The document's counts may still be in the log: fold it first, so
	// that they are in knowledge_terms to take away.
	if err := fold(ctx, q); err != nil {
		return err
	}
	_, err := q.Exec(ctx, `WITH gone AS (
			SELECT u.lexeme AS term, COUNT(*) AS n FROM knowledge_passages p, unnest(p.tsv) u WHERE p.document_id = $1 GROUP BY u.lexeme
		), dec AS (
			UPDATE knowledge_terms t SET df = t.df - gone.n FROM gone WHERE t.term = gone.term RETURNING t.term, t.df
		)
		DELETE FROM knowledge_terms t USING dec WHERE t.term = dec.term AND dec.df <= 0`, documentID)
	if err != nil {
		return dbErr(err, "uncount knowledge terms")
	}
	_, err = q.Exec(ctx, `WITH gone AS (DELETE FROM knowledge_passages WHERE document_id = $1 RETURNING length)
		UPDATE knowledge_stats SET passages = passages - (SELECT COUNT(*) FROM gone),
			terms = terms - (SELECT COALESCE(SUM(length), 0) FROM gone) WHERE id = 1`, documentID)
	return dbErr(err, "delete knowledge passages")
}

func bump(ctx context.Context, q Querier, collection string, now time.Time) error {
	_, err := q.Exec(ctx, `INSERT INTO knowledge_collections (name, version, updated_at) VALUES ($1, 1, $2)
		ON CONFLICT (name) DO UPDATE SET version = knowledge_collections.version + 1, updated_at = excluded.updated_at`, collection, now.UTC())
	return dbErr(err, "bump knowledge collection")
}

// Delete removes a document and its passages. q must be a transaction.
func Delete(ctx context.Context, q Querier, collection, name string, now time.Time) (bool, error) {
	if err := lockStats(ctx, q); err != nil {
		return false, err
	}
	old, found, err := GetDocument(ctx, q, collection, name)
	if err != nil || !found {
		return false, err
	}
	if err := dropPassages(ctx, q, old.ID); err != nil {
		return false, err
	}
	if _, err := q.Exec(ctx, `DELETE FROM knowledge_documents WHERE id = $1`, old.ID); err != nil {
		return false, dbErr(err, "delete knowledge document")
	}
	return true, bump(ctx, q, collection, now)
}
