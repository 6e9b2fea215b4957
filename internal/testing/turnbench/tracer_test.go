package turnbench

import (
	"context"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
)

// Statement kinds.
const (
	stmtRead   = "read"   // SELECT (VALUES, SHOW, TABLE) only
	stmtRecall = "recall" // a read of memory's tables: knowledge recall
	stmtWrite  = "write"  // INSERT, UPDATE, DELETE, MERGE, or a WITH holding one
	stmtTx     = "tx"     // BEGIN, COMMIT, ROLLBACK: not statements here
	stmtNotify = "notify" // SELECT pg_notify(…): a wake-up, sent with a COMMIT
	stmtOther  = "other"  // LISTEN, SET, DDL …
)

// counter is a pgx QueryTracer and BatchTracer that counts the statements
// a store sends, by kind and by normalised prefix, and the transactions
// that wrote (an explicit transaction with a write in it, committed, or a
// write sent on its own).
type counter struct {
	mu      sync.Mutex
	conns   map[*pgx.Conn]*connState
	n       map[string]int64            // kind → statements
	byKey   map[string]map[string]int64 // kind → prefix → statements
	inTx    map[string]int64            // kind → statements sent inside BEGIN … COMMIT
	writeTx int64
}

type connState struct{ inTx, wrote bool }

func newCounter() *counter {
	return &counter{conns: map[*pgx.Conn]*connState{}, n: map[string]int64{}, byKey: map[string]map[string]int64{}, inTx: map[string]int64{}}
}

var (
	_ pgx.QueryTracer = (*counter)(nil)
	_ pgx.BatchTracer = (*counter)(nil)
)

func (c *counter) TraceQueryStart(ctx context.Context, conn *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	c.note(conn, d.SQL)
	return ctx
}

func (c *counter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (c *counter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}

// TraceBatchQuery is called for each statement of a pipeline, in order, as
// its result is read.
func (c *counter) TraceBatchQuery(_ context.Context, conn *pgx.Conn, d pgx.TraceBatchQueryData) {
	c.note(conn, d.SQL)
}

func (c *counter) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

func (c *counter) note(conn *pgx.Conn, sql string) {
	kind, key, word := classify(sql)
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.conns[conn]
	if st == nil {
		st = &connState{}
		c.conns[conn] = st
	}
	switch kind {
	case stmtTx:
		switch word {
		case "begin", "start":
			st.inTx, st.wrote = true, false
		case "commit", "end":
			if st.inTx && st.wrote {
				c.writeTx++
			}
			st.inTx, st.wrote = false, false
		case "rollback", "abort":
			st.inTx, st.wrote = false, false
		}
		return
	case stmtWrite:
		if st.inTx {
			st.wrote = true
		} else {
			c.writeTx++
		}
	}
	c.n[kind]++
	if st.inTx {
		c.inTx[kind]++
	}
	m := c.byKey[kind]
	if m == nil {
		m = map[string]int64{}
		c.byKey[kind] = m
	}
	m[key]++
}

// tally is a copy of a counter's counts at one moment.
type tally struct {
	n       map[string]int64
	byKey   map[string]map[string]int64
	inTx    map[string]int64
	writeTx int64
}

func (c *counter) snapshot() tally {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := tally{n: map[string]int64{}, byKey: map[string]map[string]int64{}, inTx: map[string]int64{}, writeTx: c.writeTx}
	for k, v := range c.n {
		t.n[k] = v
	}
	for k, v := range c.inTx {
		t.inTx[k] = v
	}
	for k, m := range c.byKey {
		cp := map[string]int64{}
		for kk, v := range m {
			cp[kk] = v
		}
		t.byKey[k] = cp
	}
	return t
}

// sub returns t − before.
func (t tally) sub(before tally) tally {
	out := tally{n: map[string]int64{}, byKey: map[string]map[string]int64{}, inTx: map[string]int64{}, writeTx: t.writeTx - before.writeTx}
	for k, v := range t.n {
		out.n[k] = v - before.n[k]
	}
	for k, v := range t.inTx {
		out.inTx[k] = v - before.inTx[k]
	}
	for k, m := range t.byKey {
		d := map[string]int64{}
		for kk, v := range m {
			if x := v - before.byKey[k][kk]; x != 0 {
				d[kk] = x
			}
		}
		out.byKey[k] = d
	}
	return out
}

type keyCount struct {
	key string
	n   int64
}

// top returns the most frequent prefixes of kind, at most limit.
func (t tally) top(kind string, limit int) []keyCount {
	var out []keyCount
	for k, v := range t.byKey[kind] {
		out = append(out, keyCount{k, v})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].n != out[j].n {
			return out[i].n > out[j].n
		}
		return out[i].key < out[j].key
	})
	if len(out) > limit {
		out = out[:limit]
	}
	return out
}

var (
	spaceRE     = regexp.MustCompile(`\s+`)
	lockRE      = regexp.MustCompile(`(?i)\bfor\s+(no\s+key\s+)?(update|share|key\s+share)\b`)
	modifyRE    = regexp.MustCompile(`(?i)\b(insert\s+into|update\s+[a-z_."]+\s+set|delete\s+from|merge\s+into)\b`)
	stringLitRE = regexp.MustCompile(`'(?:[^']|'')*'`)
)

// keyLen is how much of a normalised statement names it in the breakdown.
const keyLen = 110

// classify returns a statement's kind, its normalised prefix (comments
// stripped, whitespace collapsed, at most keyLen characters) and its first
// keyword, lower case.
func classify(sql string) (kind, key, word string) {
	s := stripComments(sql)
	norm := strings.TrimSpace(spaceRE.ReplaceAllString(s, " "))
	key = norm
	// A long column list says little: the table and the condition do.
	if from := strings.Index(strings.ToLower(key), " from "); strings.HasPrefix(strings.ToLower(key), "select ") && from > 40 {
		key = key[:7] + "…" + key[from:]
	}
	if len(key) > keyLen {
		key = key[:keyLen] + "…"
	}
	lower := strings.ToLower(norm)
	word, _, _ = strings.Cut(lower, " ")
	word = strings.TrimRight(word, ";(")
	switch word {
	case "begin", "start", "commit", "end", "rollback", "abort":
		return stmtTx, key, word
	case "insert", "update", "delete", "merge":
		return stmtWrite, key, word
	case "select", "with", "values", "show", "table":
		// A WITH may hold a data-modifying statement; a locking clause
		// (FOR UPDATE) is not one. String literals cannot make one.
		body := lockRE.ReplaceAllString(stringLitRE.ReplaceAllString(lower, "''"), "")
		if modifyRE.MatchString(body) {
			return stmtWrite, key, word
		}
		if strings.Contains(body, "pg_notify(") {
			return stmtNotify, key, word
		}
		if strings.Contains(body, "memory_") {
			return stmtRecall, key, word
		}
		return stmtRead, key, word
	}
	return stmtOther, key, word
}

// stripComments removes -- and /* */ comments outside string literals.
func stripComments(sql string) string {
	var b strings.Builder
	inStr := false
	for i := 0; i < len(sql); i++ {
		ch := sql[i]
		switch {
		case inStr:
			b.WriteByte(ch)
			if ch == '\'' {
				inStr = false
			}
		case ch == '\'':
			inStr = true
			b.WriteByte(ch)
		case ch == '-' && i+1 < len(sql) && sql[i+1] == '-':
			for i < len(sql) && sql[i] != '\n' {
				i++
			}
			b.WriteByte(' ')
		case ch == '/' && i+1 < len(sql) && sql[i+1] == '*':
			end := strings.Index(sql[i+2:], "*/")
			if end < 0 {
				i = len(sql)
			} else {
				i += end + 3
			}
			b.WriteByte(' ')
		default:
			b.WriteByte(ch)
		}
	}
	return b.String()
}
