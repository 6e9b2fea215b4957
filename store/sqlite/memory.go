package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strings"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/store"
)

// Memory rows. Sets of ids and terms travel as one JSON array parameter
// read with json_each, so every statement has a fixed text.

const factCols = `id, user_key, subject, kind, text, value, source_session_id, source_seq, observed_at, created_at, deleted_at`

func scanFact(row interface{ Scan(...any) error }, extra ...any) (store.MemoryFact, error) {
	var f store.MemoryFact
	var observed, created, deleted int64
	dest := append([]any{&f.ID, &f.UserKey, &f.Subject, &f.Kind, &f.Text, &f.Value, &f.SourceSessionID, &f.SourceSeq, &observed, &created, &deleted}, extra...)
	err := row.Scan(dest...)
	f.ObservedAt, f.Created, f.DeletedAt = fromMicros(observed), fromMicros(created), fromMicros(deleted)
	f.Deleted = deleted != 0
	return f, err
}

func (t *reader) facts(ctx context.Context, what, q string, args ...any) ([]store.MemoryFact, error) {
	return queryAll(ctx, t.q, what, func(r rowScanner) (store.MemoryFact, error) { return scanFact(r) }, q, args...)
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

func (t *reader) GetMemoryFact(ctx context.Context, id int64) (store.MemoryFact, error) {
	f, err := scanFact(t.q.QueryRowContext(ctx, `SELECT `+factCols+` FROM memory_facts WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return store.MemoryFact{}, gh.Errorf(gh.CodeNotFound, "no memory fact %d", id)
	}
	return f, dbErr(err, "get memory fact")
}

func (t *reader) MemoryFacts(ctx context.Context, userKey, subjectPrefix string, limit int) ([]store.MemoryFact, error) {
	if limit <= 0 {
		limit = -1
	}
	if subjectPrefix == "" {
		return t.facts(ctx, "list memory facts", `SELECT `+factCols+` FROM memory_facts WHERE user_key = ? AND deleted_at = 0
			ORDER BY observed_at DESC, id DESC LIMIT ?`, userKey, limit)
	}
	end := prefixEnd(subjectPrefix)
	if end == "" {
		end = subjectPrefix + "\U0010FFFF"
	}
	return t.facts(ctx, "list memory facts", `SELECT `+factCols+` FROM memory_facts WHERE user_key = ? AND subject >= ? AND subject < ? AND deleted_at = 0
		ORDER BY observed_at DESC, id DESC LIMIT ?`, userKey, subjectPrefix, end, limit)
}

func (t *reader) MemoryFactsByID(ctx context.Context, userKey string, ids []int64) ([]store.MemoryFact, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	return t.facts(ctx, "memory facts by id", `SELECT `+factCols+` FROM memory_facts
		WHERE id IN (SELECT value FROM json_each(?)) AND user_key = ? AND deleted_at = 0`, jsonArray(ids), userKey)
}

func (t *reader) MemoryTermStats(ctx context.Context, userKey string, terms []string) (store.MemoryStats, error) {
	// One statement, so the counts are one snapshot.
	rows, err := t.q.QueryContext(ctx, `SELECT u.facts, u.terms, d.term, d.df
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

func (t *reader) MemoryPostings(ctx context.Context, userKey string, terms, also []string) ([]store.MemoryPosting, error) {
	if len(terms) == 0 {
		return nil, nil
	}
	q := `SELECT term, fact_id, tf, length FROM memory_terms WHERE user_key = ?1 AND term IN (SELECT value FROM json_each(?2))`
	args := []any{userKey, jsonArray(terms)}
	if len(also) > 0 {
		args = append(args, jsonArray(also))
		// The also terms are looked up by key, fact by fact.
		q = `WITH ess AS MATERIALIZED (` + q + `)
		SELECT term, fact_id, tf, length FROM ess
		UNION ALL
		SELECT t.term, t.fact_id, t.tf, t.length FROM (SELECT DISTINCT fact_id FROM ess) c
			CROSS JOIN memory_terms t ON t.user_key = ?1 AND t.term IN (SELECT value FROM json_each(?3)) AND t.fact_id = c.fact_id`
	}
	rows, err := t.q.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, dbErr(err, "read memory postings")
	}
	defer rows.Close()
	var out []store.MemoryPosting
	for rows.Next() {
		var p store.MemoryPosting
		if err := rows.Scan(&p.Term, &p.FactID, &p.TF, &p.Length); err != nil {
			return nil, dbErr(err, "read memory postings")
		}
		out = append(out, p)
	}
	return out, dbErr(rows.Err(), "read memory postings")
}

func (t *reader) MemoryVectors(ctx context.Context, userKey, model string) ([]store.MemoryVector, error) {
	rows, err := t.q.QueryContext(ctx, `SELECT id, text, CASE WHEN embedding_model = ?2 THEN embedding END
		FROM memory_facts WHERE user_key = ?1 AND deleted_at = 0 ORDER BY id`, userKey, model)
	if err != nil {
		return nil, dbErr(err, "read memory vectors")
	}
	defer rows.Close()
	var out []store.MemoryVector
	for rows.Next() {
		v := store.MemoryVector{Model: model}
		if err := rows.Scan(&v.FactID, &v.Text, &v.Vector); err != nil {
			return nil, dbErr(err, "read memory vectors")
		}
		out = append(out, v)
	}
	return out, dbErr(rows.Err(), "read memory vectors")
}

func (t *tx) PutMemoryFact(ctx context.Context, f store.MemoryFact, terms []store.MemoryTerm) (store.MemoryFact, bool, error) {
	if f.UserKey == "" || f.Subject == "" {
		return store.MemoryFact{}, false, gh.Errorf(gh.CodeInvalid, "a memory fact needs a user key and a subject")
	}
	obj, list, length, err := termSet(terms)
	if err != nil {
		return store.MemoryFact{}, false, err
	}
	// The single writer connection already serialises writers; the user
	// row is created here so the counts have a home.
	if _, err := t.q.ExecContext(ctx, `INSERT INTO memory_users (user_key) VALUES (?) ON CONFLICT (user_key) DO NOTHING`, f.UserKey); err != nil {
		return store.MemoryFact{}, false, dbErr(err, "lock memory user")
	}
	var oldTerms string
	var oldLen int
	old, err := scanFact(t.q.QueryRowContext(ctx, `SELECT `+factCols+`, terms, length FROM memory_facts WHERE user_key = ? AND subject = ?`,
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
		if _, err := t.q.ExecContext(ctx, `UPDATE memory_facts SET kind = ?, text = ?, value = ?, source_session_id = ?, source_seq = ?,
				observed_at = ?, created_at = ?, deleted_at = 0, terms = ?, length = ?, embedding_model = '', embedding = NULL WHERE id = ?`,
			f.Kind, f.Text, f.Value, f.SourceSessionID, f.SourceSeq, micros(f.ObservedAt), micros(f.Created), list, length, old.ID); err != nil {
			return store.MemoryFact{}, false, dbErr(err, "update memory fact")
		}
		f.ID = old.ID
		if old.Deleted {
			dFacts, dTerms = 1, length
		} else {
			if err := t.dropPostings(ctx, f.UserKey, old.ID, oldTerms); err != nil {
				return store.MemoryFact{}, false, err
			}
			dTerms = length - oldLen
		}
	} else {
		if err := t.q.QueryRowContext(ctx, `INSERT INTO memory_facts (user_key, subject, kind, text, value, source_session_id, source_seq,
				observed_at, created_at, terms, length) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
			f.UserKey, f.Subject, f.Kind, f.Text, f.Value, f.SourceSessionID, f.SourceSeq, micros(f.ObservedAt), micros(f.Created), list, length,
		).Scan(&f.ID); err != nil {
			return store.MemoryFact{}, false, dbErr(err, "insert memory fact")
		}
		dFacts, dTerms = 1, length
	}
	if _, err := t.q.ExecContext(ctx, `INSERT INTO memory_terms (user_key, term, fact_id, tf, length)
			SELECT ?, key, ?, value, ? FROM json_each(?)`, f.UserKey, f.ID, length, obj); err != nil {
		return store.MemoryFact{}, false, dbErr(err, "index memory fact")
	}
	if _, err := t.q.ExecContext(ctx, `INSERT INTO memory_dict (user_key, term, df) SELECT ?, key, 1 FROM json_each(?) WHERE true
			ON CONFLICT (user_key, term) DO UPDATE SET df = df + 1`, f.UserKey, obj); err != nil {
		return store.MemoryFact{}, false, dbErr(err, "index memory fact")
	}
	if _, err := t.q.ExecContext(ctx, `UPDATE memory_users SET facts = facts + ?, terms = terms + ? WHERE user_key = ?`, dFacts, dTerms, f.UserKey); err != nil {
		return store.MemoryFact{}, false, dbErr(err, "count memory facts")
	}
	f.Deleted, f.DeletedAt = false, time.Time{}
	f.ObservedAt, f.Created = fromMicros(micros(f.ObservedAt)), fromMicros(micros(f.Created))
	return f, true, nil
}

func (t *tx) dropPostings(ctx context.Context, userKey string, factID int64, list string) error {
	if list == "" {
		return nil
	}
	names := jsonArray(strings.Split(list, " "))
	if _, err := t.q.ExecContext(ctx, `DELETE FROM memory_terms WHERE user_key = ? AND term IN (SELECT value FROM json_each(?)) AND fact_id = ?`,
		userKey, names, factID); err != nil {
		return dbErr(err, "unindex memory fact")
	}
	if _, err := t.q.ExecContext(ctx, `UPDATE memory_dict SET df = df - 1 WHERE user_key = ? AND term IN (SELECT value FROM json_each(?))`,
		userKey, names); err != nil {
		return dbErr(err, "unindex memory fact")
	}
	_, err := t.q.ExecContext(ctx, `DELETE FROM memory_dict WHERE user_key = ? AND term IN (SELECT value FROM json_each(?)) AND df <= 0`, userKey, names)
	return dbErr(err, "unindex memory fact")
}

func (t *tx) ForgetMemoryFacts(ctx context.Context, userKey string, ids []int64, now time.Time) ([]store.MemoryFact, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	if now.IsZero() {
		now = time.Now()
	}
	rows, err := t.q.QueryContext(ctx, `UPDATE memory_facts SET deleted_at = ?, embedding_model = '', embedding = NULL
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
		if err := t.dropPostings(ctx, userKey, f.ID, lists[i]); err != nil {
			return nil, err
		}
	}
	if len(out) > 0 {
		if _, err := t.q.ExecContext(ctx, `UPDATE memory_users SET facts = facts - ?, terms = terms - ? WHERE user_key = ?`, len(out), dTerms, userKey); err != nil {
			return nil, dbErr(err, "count memory facts")
		}
	}
	return out, nil
}

func (t *tx) SetMemoryVectors(ctx context.Context, vs []store.MemoryVector) error {
	for _, v := range vs {
		if _, err := t.q.ExecContext(ctx, `UPDATE memory_facts SET embedding_model = ?, embedding = ? WHERE id = ? AND text = ? AND deleted_at = 0`,
			v.Model, v.Vector, v.FactID, v.Text); err != nil {
			return dbErr(err, "store memory vector")
		}
	}
	return nil
}

const jobCols = `id, user_key, session_id, seq, observed_at, user_text, answer_text, state, attempts, max_attempts, owner, available_at, last_error, created_at, updated_at`

func scanJob(row interface{ Scan(...any) error }) (store.MemoryJob, error) {
	var j store.MemoryJob
	var at, avail, created, updated int64
	err := row.Scan(&j.ID, &j.UserKey, &j.SessionID, &j.Seq, &at, &j.UserText, &j.AnswerText, &j.State, &j.Attempts, &j.MaxAttempts,
		&j.Owner, &avail, &j.LastError, &created, &updated)
	j.At, j.AvailableAt, j.Created, j.Updated = fromMicros(at), fromMicros(avail), fromMicros(created), fromMicros(updated)
	return j, err
}

func (t *reader) getJob(ctx context.Context, id int64) (store.MemoryJob, error) {
	j, err := scanJob(t.q.QueryRowContext(ctx, `SELECT `+jobCols+` FROM memory_jobs WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return store.MemoryJob{}, gh.Errorf(gh.CodeNotFound, "no memory job %d", id)
	}
	return j, dbErr(err, "get memory job")
}

func (t *reader) GetMemoryJob(ctx context.Context, id int64) (store.MemoryJob, error) {
	return t.getJob(ctx, id)
}

func (t *tx) LockMemoryJob(ctx context.Context, id int64) (store.MemoryJob, error) {
	return t.getJob(ctx, id)
}

func (t *reader) ListMemoryJobs(ctx context.Context, userKey, state string, limit int) ([]store.MemoryJob, error) {
	if limit <= 0 {
		limit = -1
	}
	return queryAll(ctx, t.q, "list memory jobs", scanJob, `SELECT `+jobCols+` FROM memory_jobs WHERE (?1 = '' OR user_key = ?1) AND (?2 = '' OR state = ?2)
		ORDER BY id LIMIT ?3`, userKey, state, limit)
}

func (t *tx) InsertMemoryJob(ctx context.Context, j store.MemoryJob) (store.MemoryJob, bool, error) {
	err := t.q.QueryRowContext(ctx, `INSERT INTO memory_jobs (user_key, session_id, seq, observed_at, user_text, answer_text, state, attempts,
			max_attempts, owner, available_at, last_error, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT DO NOTHING RETURNING id`,
		j.UserKey, j.SessionID, j.Seq, micros(j.At), j.UserText, j.AnswerText, j.State, j.Attempts, j.MaxAttempts, j.Owner,
		micros(j.AvailableAt), j.LastError, micros(j.Created), micros(j.Updated)).Scan(&j.ID)
	if err == nil {
		got, err := t.getJob(ctx, j.ID)
		return got, err == nil, err
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return store.MemoryJob{}, false, dbErr(err, "insert memory job")
	}
	got, err := scanJob(t.q.QueryRowContext(ctx, `SELECT `+jobCols+` FROM memory_jobs WHERE user_key = ? AND session_id = ? AND seq = ? AND session_id <> ''`,
		j.UserKey, j.SessionID, j.Seq))
	return got, false, dbErr(err, "read memory job")
}

func (t *tx) ClaimMemoryBatch(ctx context.Context, c store.MemoryBatchClaim) ([]store.MemoryJob, error) {
	limit := max(c.Limit, 1)
	// One writer: the first ready group is this claimer's.
	var user, session string
	err := t.q.QueryRowContext(ctx, `SELECT user_key, session_id FROM memory_jobs
		WHERE state IN ('queued', 'running') AND available_at <= ?1
		GROUP BY user_key, session_id HAVING count(*) >= ?2 OR max(created_at) <= ?3
		ORDER BY min(id) LIMIT 1`, micros(c.Now), min(max(c.MinJobs, 1), limit), micros(c.IdleBefore)).Scan(&user, &session)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, dbErr(err, "claim memory batch")
	}
	return queryAll(ctx, t.q, "claim memory batch", scanJob, `SELECT `+jobCols+` FROM memory_jobs
		WHERE user_key = ?1 AND session_id = ?2 AND state IN ('queued', 'running') AND available_at <= ?3
		ORDER BY id LIMIT ?4`, user, session, micros(c.Now), limit)
}

func (t *tx) LockMemoryJobs(ctx context.Context, ids []int64) ([]store.MemoryJob, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	return queryAll(ctx, t.q, "lock memory jobs", scanJob, `SELECT `+jobCols+` FROM memory_jobs
		WHERE id IN (SELECT value FROM json_each(?)) ORDER BY id`, jsonArray(ids))
}

func (t *tx) UpdateMemoryJob(ctx context.Context, j store.MemoryJob) error {
	_, err := t.q.ExecContext(ctx, `UPDATE memory_jobs SET state = ?, attempts = ?, owner = ?, available_at = ?, last_error = ?,
			user_text = ?, answer_text = ?, updated_at = ? WHERE id = ?`,
		j.State, j.Attempts, j.Owner, micros(j.AvailableAt), j.LastError, j.UserText, j.AnswerText, micros(j.Updated), j.ID)
	return dbErr(err, "update memory job")
}

// The memory writes run on the Store in a transaction of their own: each
// takes several statements (SetMemoryVectors one per vector,
// InsertMemoryJob an insert and a read).

// PutMemoryFact implements store.Writer.
func (s *Store) PutMemoryFact(ctx context.Context, f store.MemoryFact, terms []store.MemoryTerm) (out store.MemoryFact, put bool, err error) {
	err = s.InTx(ctx, func(ctx context.Context, t store.Tx) error {
		out, put, err = t.PutMemoryFact(ctx, f, terms)
		return err
	})
	return out, put, err
}

// ForgetMemoryFacts implements store.Writer.
func (s *Store) ForgetMemoryFacts(ctx context.Context, userKey string, ids []int64, now time.Time) (out []store.MemoryFact, err error) {
	err = s.InTx(ctx, func(ctx context.Context, t store.Tx) error {
		out, err = t.ForgetMemoryFacts(ctx, userKey, ids, now)
		return err
	})
	return out, err
}

// SetMemoryVectors implements store.Writer.
func (s *Store) SetMemoryVectors(ctx context.Context, vs []store.MemoryVector) error {
	return s.InTx(ctx, func(ctx context.Context, t store.Tx) error { return t.SetMemoryVectors(ctx, vs) })
}

// InsertMemoryJob implements store.Writer.
func (s *Store) InsertMemoryJob(ctx context.Context, j store.MemoryJob) (out store.MemoryJob, inserted bool, err error) {
	err = s.InTx(ctx, func(ctx context.Context, t store.Tx) error {
		out, inserted, err = t.InsertMemoryJob(ctx, j)
		return err
	})
	return out, inserted, err
}
