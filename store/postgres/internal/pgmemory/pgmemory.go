package pgmemory

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/store"
)

// Querier is what the store runs statements on: the pool, where each
// statement is its own transaction, or a transaction's connection.
type Querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// dbErr classifies a database error as the store does: a data exception
// is the caller's, anything else the database's. The *pgconn.PgError stays
// reachable so the store's InTx can retry a conflict.
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

const factCols = `id, user_key, subject, kind, text, value, source_session_id, source_seq, observed_at, created_at, deleted_at`

func scanFact(row pgx.Row, extra ...any) (store.MemoryFact, error) {
	var f store.MemoryFact
	var deleted *time.Time
	dest := append([]any{&f.ID, &f.UserKey, &f.Subject, &f.Kind, &f.Text, &f.Value, &f.SourceSessionID, &f.SourceSeq, &f.ObservedAt, &f.Created, &deleted}, extra...)
	err := row.Scan(dest...)
	f.ObservedAt, f.Created = f.ObservedAt.UTC(), f.Created.UTC()
	if deleted != nil {
		f.Deleted, f.DeletedAt = true, deleted.UTC()
	}
	return f, err
}

func facts(ctx context.Context, q Querier, what, query string, args ...any) ([]store.MemoryFact, error) {
	rows, err := q.Query(ctx, query, args...)
	if err != nil {
		return nil, dbErr(err, what)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.MemoryFact, error) { return scanFact(r) })
	return out, dbErr(err, what)
}

// prefixEnd is the least string above every string that starts with p (in
// byte order, which COLLATE "C" compares by), or "" when there is none.
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
// counts. It returns the terms and counts as parallel arrays, the
// space-separated list kept on the fact, and the fact's length.
func termSet(terms []store.MemoryTerm) (names []string, tfs []int32, list string, length int, err error) {
	m := make(map[string]int, len(terms))
	for _, t := range terms {
		if t.Term == "" || strings.ContainsAny(t.Term, " \t\r\n\x00") || t.TF <= 0 {
			return nil, nil, "", 0, gh.Errorf(gh.CodeInvalid, "memory term %q (tf %d) is not a positive count of a word without spaces", t.Term, t.TF)
		}
		if _, ok := m[t.Term]; !ok {
			names = append(names, t.Term)
		}
		m[t.Term] += t.TF
		length += t.TF
	}
	tfs = make([]int32, len(names))
	for i, n := range names {
		tfs[i] = int32(m[n])
	}
	return names, tfs, strings.Join(names, " "), length, nil
}

// GetFact is store.Reader's GetMemoryFact.
func GetFact(ctx context.Context, q Querier, id int64) (store.MemoryFact, error) {
	f, err := scanFact(q.QueryRow(ctx, `SELECT `+factCols+` FROM memory_facts WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return store.MemoryFact{}, gh.Errorf(gh.CodeNotFound, "no memory fact %d", id)
	}
	return f, dbErr(err, "get memory fact")
}

// Facts is store.Reader's MemoryFacts.
func Facts(ctx context.Context, q Querier, userKey, subjectPrefix string, limit int) ([]store.MemoryFact, error) {
	var lim *int
	if limit > 0 {
		lim = &limit
	}
	if subjectPrefix == "" {
		return facts(ctx, q, "list memory facts", `SELECT `+factCols+` FROM memory_facts WHERE user_key = $1 AND deleted_at IS NULL
			ORDER BY observed_at DESC, id DESC LIMIT $2`, userKey, lim)
	}
	end := prefixEnd(subjectPrefix)
	if end == "" {
		end = subjectPrefix + "\U0010FFFF"
	}
	return facts(ctx, q, "list memory facts", `SELECT `+factCols+` FROM memory_facts WHERE user_key = $1 AND subject >= $2 AND subject < $3
		AND deleted_at IS NULL ORDER BY observed_at DESC, id DESC LIMIT $4`, userKey, subjectPrefix, end, lim)
}

// FactsByID is store.Reader's MemoryFactsByID.
func FactsByID(ctx context.Context, q Querier, userKey string, ids []int64) ([]store.MemoryFact, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	return facts(ctx, q, "memory facts by id", `SELECT `+factCols+` FROM memory_facts WHERE id = ANY($1) AND user_key = $2 AND deleted_at IS NULL`, ids, userKey)
}

// TermStats is store.Reader's MemoryTermStats.
func TermStats(ctx context.Context, q Querier, userKey string, terms []string) (store.MemoryStats, error) {
	if terms == nil {
		terms = []string{}
	}
	// One statement, so the counts are one snapshot.
	rows, err := q.Query(ctx, `SELECT u.facts, u.terms, d.term, d.df
		FROM memory_users u LEFT JOIN memory_dict d ON d.user_key = u.user_key AND d.term = ANY($2)
		WHERE u.user_key = $1`, userKey, terms)
	if err != nil {
		return store.MemoryStats{}, dbErr(err, "read memory term stats")
	}
	defer rows.Close()
	st := store.MemoryStats{DF: map[string]int{}}
	for rows.Next() {
		var term *string
		var df *int32
		if err := rows.Scan(&st.Facts, &st.Terms, &term, &df); err != nil {
			return store.MemoryStats{}, dbErr(err, "read memory term stats")
		}
		if term != nil {
			st.DF[*term] = int(*df)
		}
	}
	return st, dbErr(rows.Err(), "read memory term stats")
}

// Postings is store.Reader's MemoryPostings.
func Postings(ctx context.Context, q Querier, userKey string, terms, also []string) ([]store.MemoryPosting, error) {
	if len(terms) == 0 {
		return nil, nil
	}
	query := `SELECT term, fact_id, tf, length FROM memory_terms WHERE user_key = $1 AND term = ANY($2)`
	args := []any{userKey, terms}
	if len(also) > 0 {
		// The also terms are looked up by key, fact by fact.
		args = append(args, also)
		query = `WITH ess AS MATERIALIZED (` + query + `)
		SELECT term, fact_id, tf, length FROM ess
		UNION ALL
		SELECT x.term, x.fact_id, x.tf, x.length FROM (SELECT DISTINCT fact_id FROM ess) c
			CROSS JOIN LATERAL (SELECT t.term, t.fact_id, t.tf, t.length FROM memory_terms t
				WHERE t.user_key = $1 AND t.term = ANY($3) AND t.fact_id = c.fact_id) x`
	}
	rows, err := q.Query(ctx, query, args...)
	if err != nil {
		return nil, dbErr(err, "read memory postings")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.MemoryPosting, error) {
		var p store.MemoryPosting
		err := r.Scan(&p.Term, &p.FactID, &p.TF, &p.Length)
		return p, err
	})
	return out, dbErr(err, "read memory postings")
}

// Vectors is store.Reader's MemoryVectors.
func Vectors(ctx context.Context, q Querier, userKey, model string) ([]store.MemoryVector, error) {
	rows, err := q.Query(ctx, `SELECT id, text, CASE WHEN embedding_model = $2 THEN embedding END
		FROM memory_facts WHERE user_key = $1 AND deleted_at IS NULL ORDER BY id`, userKey, model)
	if err != nil {
		return nil, dbErr(err, "read memory vectors")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.MemoryVector, error) {
		v := store.MemoryVector{Model: model}
		err := r.Scan(&v.FactID, &v.Text, &v.Vector)
		return v, err
	})
	return out, dbErr(err, "read memory vectors")
}

// lockUser creates the user's row if needed and locks it: every write of a
// user's facts takes it first, so they are serialised and the counts stay
// exact.
func lockUser(ctx context.Context, q Querier, userKey string) error {
	if _, err := q.Exec(ctx, `INSERT INTO memory_users (user_key) VALUES ($1) ON CONFLICT (user_key) DO NOTHING`, userKey); err != nil {
		return dbErr(err, "create memory user")
	}
	_, err := q.Exec(ctx, `SELECT 1 FROM memory_users WHERE user_key = $1 FOR UPDATE`, userKey)
	return dbErr(err, "lock memory user")
}

// PutFact is store.Tx's PutMemoryFact; q must be a transaction's.
func PutFact(ctx context.Context, q Querier, f store.MemoryFact, terms []store.MemoryTerm) (store.MemoryFact, bool, error) {
	if f.UserKey == "" || f.Subject == "" {
		return store.MemoryFact{}, false, gh.Errorf(gh.CodeInvalid, "a memory fact needs a user key and a subject")
	}
	names, tfs, list, length, err := termSet(terms)
	if err != nil {
		return store.MemoryFact{}, false, err
	}
	if err := lockUser(ctx, q, f.UserKey); err != nil {
		return store.MemoryFact{}, false, err
	}
	var oldTerms string
	var oldLen int
	old, err := scanFact(q.QueryRow(ctx, `SELECT `+factCols+`, terms, length FROM memory_facts WHERE user_key = $1 AND subject = $2`,
		f.UserKey, f.Subject), &oldTerms, &oldLen)
	exists := err == nil
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
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
		if _, err := q.Exec(ctx, `UPDATE memory_facts SET kind = $1, text = $2, value = $3, source_session_id = $4, source_seq = $5,
				observed_at = $6, created_at = $7, deleted_at = NULL, terms = $8, length = $9, embedding_model = '', embedding = NULL WHERE id = $10`,
			f.Kind, f.Text, f.Value, f.SourceSessionID, f.SourceSeq, f.ObservedAt, f.Created, list, length, old.ID); err != nil {
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
		if err := q.QueryRow(ctx, `INSERT INTO memory_facts (user_key, subject, kind, text, value, source_session_id, source_seq,
				observed_at, created_at, terms, length) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING id`,
			f.UserKey, f.Subject, f.Kind, f.Text, f.Value, f.SourceSessionID, f.SourceSeq, f.ObservedAt, f.Created, list, length,
		).Scan(&f.ID); err != nil {
			return store.MemoryFact{}, false, dbErr(err, "insert memory fact")
		}
		dFacts, dTerms = 1, length
	}
	if len(names) > 0 {
		if _, err := q.Exec(ctx, `INSERT INTO memory_terms (user_key, term, fact_id, tf, length)
				SELECT $1, u.t, $2, u.f, $3 FROM unnest($4::text[], $5::int[]) AS u(t, f)`, f.UserKey, f.ID, length, names, tfs); err != nil {
			return store.MemoryFact{}, false, dbErr(err, "index memory fact")
		}
		if _, err := q.Exec(ctx, `INSERT INTO memory_dict (user_key, term, df) SELECT $1, unnest($2::text[]), 1
				ON CONFLICT (user_key, term) DO UPDATE SET df = memory_dict.df + 1`, f.UserKey, names); err != nil {
			return store.MemoryFact{}, false, dbErr(err, "index memory fact")
		}
	}
	if _, err := q.Exec(ctx, `UPDATE memory_users SET facts = facts + $1, terms = terms + $2 WHERE user_key = $3`, dFacts, dTerms, f.UserKey); err != nil {
		return store.MemoryFact{}, false, dbErr(err, "count memory facts")
	}
	f.Deleted, f.DeletedAt = false, time.Time{}
	f.ObservedAt, f.Created = f.ObservedAt.UTC().Truncate(time.Microsecond), f.Created.UTC().Truncate(time.Microsecond)
	return f, true, nil
}

func dropPostings(ctx context.Context, q Querier, userKey string, factID int64, list string) error {
	if list == "" {
		return nil
	}
	names := strings.Split(list, " ")
	if _, err := q.Exec(ctx, `DELETE FROM memory_terms WHERE user_key = $1 AND term = ANY($2) AND fact_id = $3`,
		userKey, names, factID); err != nil {
		return dbErr(err, "unindex memory fact")
	}
	if _, err := q.Exec(ctx, `UPDATE memory_dict SET df = df - 1 WHERE user_key = $1 AND term = ANY($2)`, userKey, names); err != nil {
		return dbErr(err, "unindex memory fact")
	}
	_, err := q.Exec(ctx, `DELETE FROM memory_dict WHERE user_key = $1 AND term = ANY($2) AND df <= 0`, userKey, names)
	return dbErr(err, "unindex memory fact")
}

// ForgetFacts is store.Tx's ForgetMemoryFacts; q must be a transaction's.
func ForgetFacts(ctx context.Context, q Querier, userKey string, ids []int64, now time.Time) ([]store.MemoryFact, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	if now.IsZero() {
		now = time.Now()
	}
	if err := lockUser(ctx, q, userKey); err != nil {
		return nil, err
	}
	rows, err := q.Query(ctx, `UPDATE memory_facts SET deleted_at = $1, embedding_model = '', embedding = NULL
		WHERE id = ANY($2) AND user_key = $3 AND deleted_at IS NULL
		RETURNING `+factCols+`, terms, length`, now, ids, userKey)
	if err != nil {
		return nil, dbErr(err, "forget memory facts")
	}
	type gone struct {
		f      store.MemoryFact
		list   string
		length int
	}
	all, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (gone, error) {
		var g gone
		var err error
		g.f, err = scanFact(r, &g.list, &g.length)
		return g, err
	})
	if err != nil {
		return nil, dbErr(err, "forget memory facts")
	}
	var out []store.MemoryFact
	var dTerms int
	for _, g := range all {
		if err := dropPostings(ctx, q, userKey, g.f.ID, g.list); err != nil {
			return nil, err
		}
		out, dTerms = append(out, g.f), dTerms+g.length
	}
	if len(out) > 0 {
		if _, err := q.Exec(ctx, `UPDATE memory_users SET facts = facts - $1, terms = terms - $2 WHERE user_key = $3`, len(out), dTerms, userKey); err != nil {
			return nil, dbErr(err, "count memory facts")
		}
	}
	return out, nil
}

// SetVectors is store.Writer's SetMemoryVectors.
func SetVectors(ctx context.Context, q Querier, vs []store.MemoryVector) error {
	for _, v := range vs {
		if _, err := q.Exec(ctx, `UPDATE memory_facts SET embedding_model = $1, embedding = $2 WHERE id = $3 AND text = $4 AND deleted_at IS NULL`,
			v.Model, v.Vector, v.FactID, v.Text); err != nil {
			return dbErr(err, "store memory vector")
		}
	}
	return nil
}

const jobCols = `id, user_key, session_id, seq, observed_at, user_text, answer_text, state, attempts, max_attempts, owner, available_at, last_error, created_at, updated_at`

func scanJob(row pgx.Row) (store.MemoryJob, error) {
	var j store.MemoryJob
	err := row.Scan(&j.ID, &j.UserKey, &j.SessionID, &j.Seq, &j.At, &j.UserText, &j.AnswerText, &j.State, &j.Attempts, &j.MaxAttempts,
		&j.Owner, &j.AvailableAt, &j.LastError, &j.Created, &j.Updated)
	j.At, j.AvailableAt, j.Created, j.Updated = j.At.UTC(), j.AvailableAt.UTC(), j.Created.UTC(), j.Updated.UTC()
	return j, err
}

func jobs(ctx context.Context, q Querier, what, query string, args ...any) ([]store.MemoryJob, error) {
	rows, err := q.Query(ctx, query, args...)
	if err != nil {
		return nil, dbErr(err, what)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.MemoryJob, error) { return scanJob(r) })
	return out, dbErr(err, what)
}

// GetJob is store.Reader's GetMemoryJob, and with lock (q a transaction's)
// store.Tx's LockMemoryJob.
func GetJob(ctx context.Context, q Querier, id int64, lock bool) (store.MemoryJob, error) {
	suffix := ""
	if lock {
		suffix = " FOR UPDATE"
	}
	j, err := scanJob(q.QueryRow(ctx, `SELECT `+jobCols+` FROM memory_jobs WHERE id = $1`+suffix, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return store.MemoryJob{}, gh.Errorf(gh.CodeNotFound, "no memory job %d", id)
	}
	return j, dbErr(err, "get memory job")
}

// ListJobs is store.Reader's ListMemoryJobs.
func ListJobs(ctx context.Context, q Querier, userKey, state string, limit int) ([]store.MemoryJob, error) {
	var lim *int
	if limit > 0 {
		lim = &limit
	}
	return jobs(ctx, q, "list memory jobs", `SELECT `+jobCols+` FROM memory_jobs WHERE ($1 = '' OR user_key = $1) AND ($2 = '' OR state = $2)
		ORDER BY id LIMIT $3`, userKey, state, lim)
}

// InsertJob is store.Writer's InsertMemoryJob.
func InsertJob(ctx context.Context, q Querier, j store.MemoryJob) (store.MemoryJob, bool, error) {
	got, err := scanJob(q.QueryRow(ctx, `INSERT INTO memory_jobs (user_key, session_id, seq, observed_at, user_text, answer_text, state, attempts,
			max_attempts, owner, available_at, last_error, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
		ON CONFLICT DO NOTHING RETURNING `+jobCols,
		j.UserKey, j.SessionID, j.Seq, j.At, j.UserText, j.AnswerText, j.State, j.Attempts, j.MaxAttempts, j.Owner,
		j.AvailableAt, j.LastError, j.Created, j.Updated))
	if err == nil {
		return got, true, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return store.MemoryJob{}, false, dbErr(err, "insert memory job")
	}
	got, err = scanJob(q.QueryRow(ctx, `SELECT `+jobCols+` FROM memory_jobs WHERE user_key = $1 AND session_id = $2 AND seq = $3 AND session_id <> ''`,
		j.UserKey, j.SessionID, j.Seq))
	return got, false, dbErr(err, "read memory job")
}

// claimGroups is how many ready groups a claim looks at: a group another
// claimer is taking is passed over for the next.
const claimGroups = 16

// batchLockClass is the first key of the transaction advisory lock a
// claimer holds on a (user, session) group while it takes its batch, so
// two claimers never split one group's rows between them (each with too
// few to be ready). The second key is a hash of the group; a collision
// only passes a group over until the next claim.
const batchLockClass = 0x6d656d62 // "memb"

// ClaimBatch is store.Tx's ClaimMemoryBatch; q must be a transaction's.
func ClaimBatch(ctx context.Context, q Querier, c store.MemoryBatchClaim) ([]store.MemoryJob, error) {
	limit := max(c.Limit, 1)
	need := min(max(c.MinJobs, 1), limit)
	rows, err := q.Query(ctx, `SELECT user_key, session_id FROM memory_jobs
		WHERE state IN ('queued', 'running') AND available_at <= $1
		GROUP BY user_key, session_id HAVING count(*) >= $2 OR max(created_at) <= $3
		ORDER BY min(id) LIMIT $4`, c.Now, need, c.IdleBefore, claimGroups)
	if err != nil {
		return nil, dbErr(err, "claim memory batch")
	}
	type group struct{ user, session string }
	groups, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (group, error) {
		var g group
		return g, r.Scan(&g.user, &g.session)
	})
	if err != nil {
		return nil, dbErr(err, "claim memory batch")
	}
	for _, g := range groups {
		var mine bool
		if err := q.QueryRow(ctx, `SELECT pg_try_advisory_xact_lock($1, hashtext($2 || E'\n' || $3))`,
			int32(batchLockClass), g.user, g.session).Scan(&mine); err != nil {
			return nil, dbErr(err, "claim memory batch")
		}
		if !mine {
			continue
		}
		js, err := jobs(ctx, q, "claim memory batch", `SELECT `+jobCols+` FROM memory_jobs
			WHERE user_key = $1 AND session_id = $2 AND state IN ('queued', 'running') AND available_at <= $3
			ORDER BY id LIMIT $4 FOR UPDATE SKIP LOCKED`, g.user, g.session, c.Now, limit)
		if err != nil {
			return nil, err
		}
		// Jobs of the group still locked by the transaction that claimed
		// or finished them are not due; what is left must be ready on its
		// own.
		if len(js) >= need || len(js) > 0 && !newestCreated(js).After(c.IdleBefore) {
			return js, nil
		}
	}
	return nil, nil
}

func newestCreated(js []store.MemoryJob) time.Time {
	var t time.Time
	for _, j := range js {
		if j.Created.After(t) {
			t = j.Created
		}
	}
	return t
}

// LockJobs is store.Tx's LockMemoryJobs; q must be a transaction's.
func LockJobs(ctx context.Context, q Querier, ids []int64) ([]store.MemoryJob, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	return jobs(ctx, q, "lock memory jobs", `SELECT `+jobCols+` FROM memory_jobs WHERE id = ANY($1) ORDER BY id FOR UPDATE`, ids)
}

// UpdateJob is store.Tx's UpdateMemoryJob.
func UpdateJob(ctx context.Context, q Querier, j store.MemoryJob) error {
	_, err := q.Exec(ctx, `UPDATE memory_jobs SET state = $1, attempts = $2, owner = $3, available_at = $4, last_error = $5,
			user_text = $6, answer_text = $7, updated_at = $8 WHERE id = $9`,
		j.State, j.Attempts, j.Owner, j.AvailableAt, j.LastError, j.UserText, j.AnswerText, j.Updated, j.ID)
	return dbErr(err, "update memory job")
}
