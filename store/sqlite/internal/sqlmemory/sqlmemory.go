package sqlmemory

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

// Memory rows. Sets of ids and terms travel as one JSON array parameter
// read with json_each, so every statement has a fixed text.

// Querier is what the store runs statements on (sqlrow's, with its row
// helpers: the store's own codes, messages and times).
type Querier = sqlrow.Querier

type rowScanner = sqlrow.Scanner

var (
	dbErr      = sqlrow.DBErr
	micros     = sqlrow.Micros
	fromMicros = sqlrow.FromMicros
)

const factCols = `id, user_key, subject, kind, text, value, source_session_id, source_seq, observed_at, created_at, deleted_at`

func scanFact(row rowScanner, extra ...any) (store.MemoryFact, error) {
	var f store.MemoryFact
	var observed, created, deleted int64
	dest := append([]any{&f.ID, &f.UserKey, &f.Subject, &f.Kind, &f.Text, &f.Value, &f.SourceSessionID, &f.SourceSeq, &observed, &created, &deleted}, extra...)
	err := row.Scan(dest...)
	f.ObservedAt, f.Created, f.DeletedAt = fromMicros(observed), fromMicros(created), fromMicros(deleted)
	f.Deleted = deleted != 0
	return f, err
}

func facts(ctx context.Context, q Querier, what, query string, args ...any) ([]store.MemoryFact, error) {
	return sqlrow.QueryAll(ctx, q, what, func(r rowScanner) (store.MemoryFact, error) { return scanFact(r) }, query, args...)
}

func jsonArray[T any](v []T) string {
	if len(v) == 0 {
		return "[]"
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// prefixEnd is the least string above every string that starts with p (in
// byte order), or "" when there is none.
func prefixEnd(p string) string {
	b := []byte(p)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xff {
			b[i]++
			return string(b[:i+1])
		}
	}
	return ""
}

// termSet merges terms and checks them: non-empty, no spaces, positive
// counts. It returns them as a JSON object (term → tf), the space-separated
// list kept on the fact, and the fact's length.
func termSet(terms []store.MemoryTerm) (obj string, list string, length int, err error) {
	m := make(map[string]int, len(terms))
	var names []string
	for _, t := range terms {
		if t.Term == "" || strings.ContainsAny(t.Term, " \t\r\n\x00") || t.TF <= 0 {
			return "", "", 0, gh.Errorf(gh.CodeInvalid, "memory term %q (tf %d) is not a positive count of a word without spaces", t.Term, t.TF)
		}
		if _, ok := m[t.Term]; !ok {
			names = append(names, t.Term)
		}
		m[t.Term] += t.TF
		length += t.TF
	}
	b, _ := json.Marshal(m)
	return string(b), strings.Join(names, " "), length, nil
}

// GetFact is store.Reader's GetMemoryFact.
func GetFact(ctx context.Context, q Querier, id int64) (store.MemoryFact, error) {
	f, err := scanFact(q.QueryRowContext(ctx, `SELECT `+factCols+` FROM memory_facts WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return store.MemoryFact{}, gh.Errorf(gh.CodeNotFound, "no memory fact %d", id)
	}
	return f, dbErr(err, "get memory fact")
}

// Facts is store.Reader's MemoryFacts.
func Facts(ctx context.Context, q Querier, userKey, subjectPrefix string, limit int) ([]store.MemoryFact, error) {
	if limit <= 0 {
		limit = -1
	}
	if subjectPrefix == "" {
		return facts(ctx, q, "list memory facts", `SELECT `+factCols+` FROM memory_facts WHERE user_key = ? AND deleted_at = 0
			ORDER BY observed_at DESC, id DESC LIMIT ?`, userKey, limit)
	}
	end := prefixEnd(subjectPrefix)
	if end == "" {
		end = subjectPrefix + "\U0010FFFF"
	}
	return facts(ctx, q, "list memory facts", `SELECT `+factCols+` FROM memory_facts WHERE user_key = ? AND subject >= ? AND subject < ? AND deleted_at = 0
		ORDER BY observed_at DESC, id DESC LIMIT ?`, userKey, subjectPrefix, end, limit)
}

// FactsByID is store.Reader's MemoryFactsByID.
func FactsByID(ctx context.Context, q Querier, userKey string, ids []int64) ([]store.MemoryFact, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	return facts(ctx, q, "memory facts by id", `SELECT `+factCols+` FROM memory_facts
		WHERE id IN (SELECT value FROM json_each(?)) AND user_key = ? AND deleted_at = 0`, jsonArray(ids), userKey)
}

// TermStats is store.Reader's MemoryTermStats.
func TermStats(ctx context.Context, q Querier, userKey string, terms []string) (store.MemoryStats, error) {
	// One statement, so the counts are one snapshot.
	rows, err := q.QueryContext(ctx, `SELECT u.facts, u.terms, d.term, d.df
		FROM memory_users u LEFT JOIN memory_dict d ON d.user_key = u.user_key AND d.term IN (SELECT value FROM json_each(?2))
		WHERE u.user_key = ?1`, userKey, jsonArray(terms))
	if err != nil {
		return store.MemoryStats{}, dbErr(err, "read memory term stats")
	}
	defer rows.Close()
	st := store.MemoryStats{DF: map[string]int{}}
	for rows.Next() {
		var term sql.NullString
		var df sql.NullInt64
		if err := rows.Scan(&st.Facts, &st.Terms, &term, &df); err != nil {
			return store.MemoryStats{}, dbErr(err, "read memory term stats")
		}
		if term.Valid {
			st.DF[term.String] = int(df.Int64)
		}
	}
	return st, dbErr(rows.Err(), "read memory term stats")
}

// Postings is store.Reader's MemoryPostings.
func Postings(ctx context.Context, q Querier, userKey string, terms, also []string) ([]store.MemoryPosting, error) {
	if len(terms) == 0 {
		return nil, nil
	}
	query := `SELECT term, fact_id, tf, length FROM memory_terms WHERE user_key = ?1 AND term IN (SELECT value FROM json_each(?2))`
	args := []any{userKey, jsonArray(terms)}
	if len(also) > 0 {
		args = append(args, jsonArray(also))
		// The also terms are looked up by key, fact by fact.
		query = `WITH ess AS MATERIALIZED (` + query + `)
		SELECT term, fact_id, tf, length FROM ess
		UNION ALL
		SELECT t.term, t.fact_id, t.tf, t.length FROM (SELECT DISTINCT fact_id FROM ess) c
			CROSS JOIN memory_terms t ON t.user_key = ?1 AND t.term IN (SELECT value FROM json_each(?3)) AND t.fact_id = c.fact_id`
	}
	return sqlrow.QueryAll(ctx, q, "read memory postings", func(r rowScanner) (store.MemoryPosting, error) {
		var p store.MemoryPosting
		err := r.Scan(&p.Term, &p.FactID, &p.TF, &p.Length)
		return p, err
	}, query, args...)
}

// Vectors is store.Reader's MemoryVectors.
func Vectors(ctx context.Context, q Querier, userKey, model string) ([]store.MemoryVector, error) {
	return sqlrow.QueryAll(ctx, q, "read memory vectors", func(r rowScanner) (store.MemoryVector, error) {
		v := store.MemoryVector{Model: model}
		err := r.Scan(&v.FactID, &v.Text, &v.Vector)
		return v, err
	}, `SELECT id, text, CASE WHEN embedding_model = ?2 THEN embedding END
		FROM memory_facts WHERE user_key = ?1 AND deleted_at = 0 ORDER BY id`, userKey, model)
}

// PutFact is store.Tx's PutMemoryFact; q must be a transaction.
func PutFact(ctx context.Context, q Querier, f store.MemoryFact, terms []store.MemoryTerm) (store.MemoryFact, bool, error) {
	if f.UserKey == "" || f.Subject == "" {
		return store.MemoryFact{}, false, gh.Errorf(gh.CodeInvalid, "a memory fact needs a user key and a subject")
	}
	obj, list, length, err := termSet(terms)
	if err != nil {
		return store.MemoryFact{}, false, err
	}
	// The single writer connection already serialises writers; the user
	// row is created here so the counts have a home.
	if _, err := q.ExecContext(ctx, `INSERT INTO memory_users (user_key) VALUES (?) ON CONFLICT (user_key) DO NOTHING`, f.UserKey); err != nil {
		return store.MemoryFact{}, false, dbErr(err, "lock memory user")
	}
	var oldTerms string
	var oldLen int
	old, err := scanFact(q.QueryRowContext(ctx, `SELECT `+factCols+`, terms, length FROM memory_facts WHERE user_key = ? AND subject = ?`,
		f.UserKey, f.Subject), &oldTerms, &oldLen)
	exists := err == nil
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return store.MemoryFact{}, false, dbErr(err, "read memory fact")
	}
	if exists {
		newer := f.ObservedAt.Compare(old.ObservedAt) >= 0
		if old.Deleted {
			newer = f.ObservedAt.After(old.DeletedAt)
		}
		if !newer {
			return old, false, nil
		}
	}
	var dFacts, dTerms int
	if exists {
		if _, err := q.ExecContext(ctx, `UPDATE memory_facts SET kind = ?, text = ?, value = ?, source_session_id = ?, source_seq = ?,
				observed_at = ?, created_at = ?, deleted_at = 0, terms = ?, length = ?, embedding_model = '', embedding = NULL WHERE id = ?`,
			f.Kind, f.Text, f.Value, f.SourceSessionID, f.SourceSeq, micros(f.ObservedAt), micros(f.Created), list, length, old.ID); err != nil {
			return store.MemoryFact{}, false, dbErr(err, "update memory fact")
		}
		f.ID = old.ID
		if old.Deleted {
			dFacts, dTerms = 1, length
		} else {
			if err := dropPostings(ctx, q, f.UserKey, old.ID, oldTerms); err != nil {
				return store.MemoryFact{}, false, err
			}
			dTerms = length - oldLen
		}
	} else {
		if err := q.QueryRowContext(ctx, `INSERT INTO memory_facts (user_key, subject, kind, text, value, source_session_id, source_seq,
				observed_at, created_at, terms, length) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
			f.UserKey, f.Subject, f.Kind, f.Text, f.Value, f.SourceSessionID, f.SourceSeq, micros(f.ObservedAt), micros(f.Created), list, length,
		).Scan(&f.ID); err != nil {
			return store.MemoryFact{}, false, dbErr(err, "insert memory fact")
		}
		dFacts, dTerms = 1, length
	}
	if _, err := q.ExecContext(ctx, `INSERT INTO memory_terms (user_key, term, fact_id, tf, length)
			SELECT ?, key, ?, value, ? FROM json_each(?)`, f.UserKey, f.ID, length, obj); err != nil {
		return store.MemoryFact{}, false, dbErr(err, "index memory fact")
	}
	if _, err := q.ExecContext(ctx, `INSERT INTO memory_dict (user_key, term, df) SELECT ?, key, 1 FROM json_each(?) WHERE true
			ON CONFLICT (user_key, term) DO UPDATE SET df = df + 1`, f.UserKey, obj); err != nil {
		return store.MemoryFact{}, false, dbErr(err, "index memory fact")
	}
	if _, err := q.ExecContext(ctx, `UPDATE memory_users SET facts = facts + ?, terms = terms + ? WHERE user_key = ?`, dFacts, dTerms, f.UserKey); err != nil {
		return store.MemoryFact{}, false, dbErr(err, "count memory facts")
	}
	f.Deleted, f.DeletedAt = false, time.Time{}
	f.ObservedAt, f.Created = fromMicros(micros(f.ObservedAt)), fromMicros(micros(f.Created))
	return f, true, nil
}

func dropPostings(ctx context.Context, q Querier, userKey string, factID int64, list string) error {
	if list == "" {
		return nil
	}
	names := jsonArray(strings.Split(list, " "))
	if _, err := q.ExecContext(ctx, `DELETE FROM memory_terms WHERE user_key = ? AND term IN (SELECT value FROM json_each(?)) AND fact_id = ?`,
		userKey, names, factID); err != nil {
		return dbErr(err, "unindex memory fact")
	}
	if _, err := q.ExecContext(ctx, `UPDATE memory_dict SET df = df - 1 WHERE user_key = ? AND term IN (SELECT value FROM json_each(?))`,
		userKey, names); err != nil {
		return dbErr(err, "unindex memory fact")
	}
	_, err := q.ExecContext(ctx, `DELETE FROM memory_dict WHERE user_key = ? AND term IN (SELECT value FROM json_each(?)) AND df <= 0`, userKey, names)
	return dbErr(err, "unindex memory fact")
}

// ForgetFacts is store.Tx's ForgetMemoryFacts; q must be a transaction.
func ForgetFacts(ctx context.Context, q Querier, userKey string, ids []int64, now time.Time) ([]store.MemoryFact, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	if now.IsZero() {
		now = time.Now()
	}
	rows, err := q.QueryContext(ctx, `UPDATE memory_facts SET deleted_at = ?, embedding_model = '', embedding = NULL
		WHERE id IN (SELECT value FROM json_each(?)) AND user_key = ? AND deleted_at = 0
		RETURNING `+factCols+`, terms, length`, micros(now), jsonArray(ids), userKey)
	if err != nil {
		return nil, dbErr(err, "forget memory facts")
	}
	var out []store.MemoryFact
	var lists []string
	var dTerms int
	for rows.Next() {
		var list string
		var length int
		f, err := scanFact(rows, &list, &length)
		if err != nil {
			rows.Close()
			return nil, dbErr(err, "forget memory facts")
		}
		out, lists, dTerms = append(out, f), append(lists, list), dTerms+length
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, dbErr(err, "forget memory facts")
	}
	for i, f := range out {
		if err := dropPostings(ctx, q, userKey, f.ID, lists[i]); err != nil {
			return nil, err
		}
	}
	if len(out) > 0 {
		if _, err := q.ExecContext(ctx, `UPDATE memory_users SET facts = facts - ?, terms = terms - ? WHERE user_key = ?`, len(out), dTerms, userKey); err != nil {
			return nil, dbErr(err, "count memory facts")
		}
	}
	return out, nil
}

// SetVectors is store.Tx's SetMemoryVectors.
func SetVectors(ctx context.Context, q Querier, vs []store.MemoryVector) error {
	for _, v := range vs {
		if _, err := q.ExecContext(ctx, `UPDATE memory_facts SET embedding_model = ?, embedding = ? WHERE id = ? AND text = ? AND deleted_at = 0`,
			v.Model, v.Vector, v.FactID, v.Text); err != nil {
			return dbErr(err, "store memory vector")
		}
	}
	return nil
}

const jobCols = `id, user_key, session_id, seq, observed_at, user_text, answer_text, state, attempts, max_attempts, owner, available_at, last_error, created_at, updated_at`

func scanJob(row rowScanner) (store.MemoryJob, error) {
	var j store.MemoryJob
	var at, avail, created, updated int64
	err := row.Scan(&j.ID, &j.UserKey, &j.SessionID, &j.Seq, &at, &j.UserText, &j.AnswerText, &j.State, &j.Attempts, &j.MaxAttempts,
		&j.Owner, &avail, &j.LastError, &created, &updated)
	j.At, j.AvailableAt, j.Created, j.Updated = fromMicros(at), fromMicros(avail), fromMicros(created), fromMicros(updated)
	return j, err
}

// GetJob is store.Reader's GetMemoryJob and store.Tx's LockMemoryJob: the
// transaction holds the whole database, so there is no row to lock.
func GetJob(ctx context.Context, q Querier, id int64) (store.MemoryJob, error) {
	j, err := scanJob(q.QueryRowContext(ctx, `SELECT `+jobCols+` FROM memory_jobs WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return store.MemoryJob{}, gh.Errorf(gh.CodeNotFound, "no memory job %d", id)
	}
	return j, dbErr(err, "get memory job")
}

// ListJobs is store.Reader's ListMemoryJobs.
func ListJobs(ctx context.Context, q Querier, userKey, state string, limit int) ([]store.MemoryJob, error) {
	if limit <= 0 {
		limit = -1
	}
	return sqlrow.QueryAll(ctx, q, "list memory jobs", scanJob, `SELECT `+jobCols+` FROM memory_jobs WHERE (?1 = '' OR user_key = ?1) AND (?2 = '' OR state = ?2)
		ORDER BY id LIMIT ?3`, userKey, state, limit)
}

// InsertJob is store.Tx's InsertMemoryJob: an insert and a read, so q
// must be a transaction.
func InsertJob(ctx context.Context, q Querier, j store.MemoryJob) (store.MemoryJob, bool, error) {
	err := q.QueryRowContext(ctx, `INSERT INTO memory_jobs (user_key, session_id, seq, observed_at, user_text, answer_text, state, attempts,
			max_attempts, owner, available_at, last_error, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT DO NOTHING RETURNING id`,
		j.UserKey, j.SessionID, j.Seq, micros(j.At), j.UserText, j.AnswerText, j.State, j.Attempts, j.MaxAttempts, j.Owner,
		micros(j.AvailableAt), j.LastError, micros(j.Created), micros(j.Updated)).Scan(&j.ID)
	if err == nil {
		got, err := GetJob(ctx, q, j.ID)
		return got, err == nil, err
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return store.MemoryJob{}, false, dbErr(err, "insert memory job")
	}
	got, err := scanJob(q.QueryRowContext(ctx, `SELECT `+jobCols+` FROM memory_jobs WHERE user_key = ? AND session_id = ? AND seq = ? AND session_id <> ''`,
		j.UserKey, j.SessionID, j.Seq))
	return got, false, dbErr(err, "read memory job")
}

// ClaimBatch is store.Tx's ClaimMemoryBatch; q must be a transaction.
func ClaimBatch(ctx context.Context, q Querier, c store.MemoryBatchClaim) ([]store.MemoryJob, error) {
	limit := max(c.Limit, 1)
	// One writer: the first ready group is this claimer's.
	var user, session string
	err := q.QueryRowContext(ctx, `SELECT user_key, session_id FROM memory_jobs
		WHERE state IN ('queued', 'running') AND available_at <= ?1
		GROUP BY user_key, session_id HAVING count(*) >= ?2 OR max(created_at) <= ?3
		ORDER BY min(id) LIMIT 1`, micros(c.Now), min(max(c.MinJobs, 1), limit), micros(c.IdleBefore)).Scan(&user, &session)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, dbErr(err, "claim memory batch")
	}
	return sqlrow.QueryAll(ctx, q, "claim memory batch", scanJob, `SELECT `+jobCols+` FROM memory_jobs
		WHERE user_key = ?1 AND session_id = ?2 AND state IN ('queued', 'running') AND available_at <= ?3
		ORDER BY id LIMIT ?4`, user, session, micros(c.Now), limit)
}

// LockJobs is store.Tx's LockMemoryJobs.
func LockJobs(ctx context.Context, q Querier, ids []int64) ([]store.MemoryJob, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	return sqlrow.QueryAll(ctx, q, "lock memory jobs", scanJob, `SELECT `+jobCols+` FROM memory_jobs
		WHERE id IN (SELECT value FROM json_each(?)) ORDER BY id`, jsonArray(ids))
}

// UpdateJob is store.Tx's UpdateMemoryJob.
func UpdateJob(ctx context.Context, q Querier, j store.MemoryJob) error {
	_, err := q.ExecContext(ctx, `UPDATE memory_jobs SET state = ?, attempts = ?, owner = ?, available_at = ?, last_error = ?,
			user_text = ?, answer_text = ?, updated_at = ? WHERE id = ?`,
		j.State, j.Attempts, j.Owner, micros(j.AvailableAt), j.LastError, j.UserText, j.AnswerText, micros(j.Updated), j.ID)
	return dbErr(err, "update memory job")
}
