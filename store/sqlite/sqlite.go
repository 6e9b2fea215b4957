package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	_ "modernc.org/sqlite" // driver "sqlite"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/migrations"
	"github.com/gatehouse/gatehouse/store"
	"github.com/gatehouse/gatehouse/store/sqlite/internal/sqlrow"
)

// Config configures the embedded store.
type Config struct {
	// Path is the database file. Required; its directory is created.
	Path string
	// Synchronous is SQLite's synchronous pragma. Defaults to "FULL": every
	// commit is on disk before it is acknowledged, so even a power cut
	// loses nothing acknowledged. "NORMAL" survives process crashes
	// (kill -9) but not power loss, and is faster.
	Synchronous string
	// ReadConns is the size of the read pool. Defaults to 4.
	ReadConns int
}

// Store is the SQLite backend.
type Store struct {
	// reader, on the read pool, gives the Store its reads; writer, on the
	// writer connection outside a transaction, its single-statement writes.
	// The reader is the shallower, so it is the one whose reads are
	// promoted.
	*reader
	*writer
	w, r *sql.DB
	// wc and rc keep the statements of each pool prepared.
	wc, rc *stmtCache
	wake   store.Broadcast
	path   string
	group  group // transactions sharing a commit
}

var _ store.Store = (*Store)(nil)

// Open opens (creating if needed) the database at cfg.Path and applies
// pending migrations.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.Path == "" {
		return nil, gh.Errorf(gh.CodeInvalid, "sqlite: no database path")
	}
	if cfg.Synchronous == "" {
		cfg.Synchronous = "FULL"
	}
	if cfg.ReadConns <= 0 {
		cfg.ReadConns = 4
	}
	// The database holds every conversation: its directory, when created
	// here, and its files are the gateway user's alone.
	if err := os.MkdirAll(filepath.Dir(cfg.Path), 0o700); err != nil {
		return nil, gh.Wrap(gh.CodeUnavailable, err, "sqlite: create data directory")
	}
	if err := privateFiles(cfg.Path); err != nil {
		return nil, gh.Wrap(gh.CodeUnavailable, err, "sqlite: make %s private", cfg.Path)
	}
	dsn := func(readOnly bool) string {
		q := url.Values{}
		q.Add("_pragma", "journal_mode(WAL)")
		q.Add("_pragma", "busy_timeout(10000)")
		q.Add("_pragma", "synchronous("+cfg.Synchronous+")")
		q.Add("_pragma", "foreign_keys(1)")
		// Temporary files (large sorts, an index or FTS rebuild in a
		// migration) stay in memory: a container with a read-only root
		// has no writable temp directory, and SQLite then fails with a
		// disk I/O error instead of using the data directory.
		q.Add("_pragma", "temp_store(2)")
		if readOnly {
			q.Add("_pragma", "query_only(1)")
			// Readers map the file rather than copy its pages through
			// the page cache: a knowledge recall reads thousands of
			// index pages, and this cuts its CPU by a fifth to a third.
			q.Add("_pragma", "mmap_size(1073741824)")
		} else {
			q.Set("_txlock", "immediate")
		}
		return "file:" + uriPath(cfg.Path) + "?" + q.Encode()
	}
	w, err := sql.Open("sqlite", dsn(false))
	if err != nil {
		return nil, gh.Wrap(gh.CodeUnavailable, err, "sqlite: open %s", cfg.Path)
	}
	// One writer connection: SQLite allows one writer at a time, and
	// queueing in database/sql is cheaper and fairer than busy retries.
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	if err := w.PingContext(ctx); err != nil {
		w.Close()
		return nil, gh.Wrap(gh.CodeUnavailable, err, "sqlite: open %s", cfg.Path)
	}
	if _, err := migrations.Up(ctx, w, "sqlite"); err != nil {
		w.Close()
		return nil, gh.Wrap(gh.CodeUnavailable, err, "sqlite: migrate %s", cfg.Path)
	}
	r, err := sql.Open("sqlite", dsn(true))
	if err != nil {
		w.Close()
		return nil, gh.Wrap(gh.CodeUnavailable, err, "sqlite: open %s for reading", cfg.Path)
	}
	r.SetMaxOpenConns(cfg.ReadConns)
	r.SetMaxIdleConns(cfg.ReadConns)
	rc, wc := newStmtCache(r), newStmtCache(w)
	return &Store{reader: &reader{q: pooled{rc}}, writer: &writer{reader{q: pooled{wc}}}, w: w, r: r, rc: rc, wc: wc, path: cfg.Path}, nil
}

// privateFiles makes the database file, and the -wal and -shm files an
// earlier run left, readable by the gateway's user only (0600). The
// database file is created here, before the driver opens it, because
// SQLite creates a new database with 0644 (less the umask) but gives the
// -wal and -shm files it creates the mode of the database file: a 0600
// database keeps all three private. An install from before this was done
// is tightened by the chmod.
func privateFiles(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		st, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		// Exactly 0600 whatever the umask did or an older version left.
		if st.Mode().Perm() != 0o600 {
			if err := os.Chmod(p, 0o600); err != nil {
				return err
			}
		}
	}
	return nil
}

// Dialect implements store.Store.
func (s *Store) Dialect() string { return "sqlite" }

// Path is the database file.
func (s *Store) Path() string { return s.path }

// WriteDB is the single writer connection pool, for benchmarks that compare
// the kernel with a bare insert on the same connection.
func (s *Store) WriteDB() *sql.DB { return s.w }

// Ping implements store.Store.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.r.PingContext(ctx); err != nil {
		return gh.Wrap(gh.CodeUnavailable, err, "sqlite: ping")
	}
	return nil
}

// Close implements store.Store.
func (s *Store) Close() error {
	s.rc.close()
	s.wc.close()
	return errors.Join(s.r.Close(), s.w.Close())
}

// WakeC implements store.Store.
func (s *Store) WakeC() <-chan struct{} { return s.wake.WaitC() }

// Writes of several statements run on the Store in a transaction of their
// own; the single-statement ones come from the embedded writer.

// CreateSession implements store.Writer.
func (s *Store) CreateSession(ctx context.Context, sess gh.Session) (out gh.Session, created bool, err error) {
	err = s.InTx(ctx, func(ctx context.Context, t store.Tx) error {
		out, created, err = t.CreateSession(ctx, sess)
		return err
	})
	return out, created, err
}

// Append implements store.Writer.
func (s *Store) Append(ctx context.Context, p store.AppendParams) (res store.AppendResult, err error) {
	err = s.InTx(ctx, func(ctx context.Context, t store.Tx) error {
		res, err = t.Append(ctx, p)
		return err
	})
	return res, err
}

// The row helpers are sqlrow's, shared with the memory rows.
var (
	micros     = sqlrow.Micros
	fromMicros = sqlrow.FromMicros
	dbErr      = sqlrow.DBErr
)

// uriPath escapes what a "file:" URI would read as its end in a path: a
// '?' (the query) and a '#' (the fragment), and '%' itself. Unescaped, a
// data directory named "a#b" opens the database "a" — another file — and
// loses every pragma after it.
func uriPath(path string) string {
	return strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(path)
}
