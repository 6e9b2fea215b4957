package scalebench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/internal/testing/testenv"
	"github.com/gatehouse/gatehouse/kernel"
	"github.com/gatehouse/gatehouse/models"
	"github.com/gatehouse/gatehouse/store"
	"github.com/gatehouse/gatehouse/store/postgres"
	"github.com/gatehouse/gatehouse/store/sqlite"
	"github.com/gatehouse/gatehouse/store/storetest"
	"github.com/gatehouse/gatehouse/supervisor"
)

var backends = []string{"sqlite", "postgres"}

// envInt reads a size override for quick runs (see doc.go).
func envInt(tb testing.TB, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		tb.Fatalf("%s=%q: want a positive number", name, v)
	}
	return n
}

// db is one fresh database on backend: its own SQLite file, or its own
// Postgres database (CREATE DATABASE), dropped when tb ends.
type db struct {
	backend string
	st      store.Store
	lite    *sqlite.Store
	pg      *postgres.Store
}

func openDB(tb testing.TB, backend string) *db {
	tb.Helper()
	ctx := context.Background()
	d := &db{backend: backend}
	switch backend {
	case "sqlite":
		s, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(tb.TempDir(), "gatehouse.db")})
		must(tb, err)
		tb.Cleanup(func() { s.Close() })
		d.lite, d.st = s, s
	case "postgres":
		s := storetest.OpenPostgres(tb, postgres.Config{URL: freshDatabase(tb), Logger: slog.New(slog.DiscardHandler)})
		d.pg, d.st = s, s
	default:
		tb.Fatalf("unknown backend %q", backend)
	}
	return d
}

// freshDatabase creates a database of its own on the server
// GATEHOUSE_TEST_POSTGRES_URL names (skipping without it, through
// testenv) and returns its URL; the database is dropped when tb ends. A
// database rather than testenv's scratch schema: the big and the empty
// database of one run must share nothing but the server, catalogs and
// statistics included.
func freshDatabase(tb testing.TB) string {
	tb.Helper()
	scratch := testenv.PostgresURL(tb)
	u, err := url.Parse(scratch)
	must(tb, err)
	q := u.Query()
	q.Del("search_path")
	u.RawQuery = q.Encode()
	admin := u.String()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, admin)
	must(tb, err)
	defer conn.Close(ctx)
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "gh_scale_" + hex.EncodeToString(b[:])
	_, err = conn.Exec(ctx, "CREATE DATABASE "+name)
	must(tb, err)
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		c, err := pgx.Connect(ctx, admin)
		if err != nil {
			tb.Logf("drop database %s: %v", name, err)
			return
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			tb.Logf("drop database %s: %v", name, err)
		}
	})
	u.Path = "/" + name
	return u.String()
}

// load bulk-writes f into the database.
func (d *db) load(tb testing.TB, f fill) {
	tb.Helper()
	ctx := context.Background()
	switch d.backend {
	case "sqlite":
		must(tb, fillSQLite(ctx, d.lite, f))
	case "postgres":
		must(tb, fillPostgres(ctx, d.pg, f))
	}
}

// instant is a zero-latency model: the benchmark measures our path.
type instant struct{}

func (instant) Name() string { return "instant" }
func (instant) Stream(ctx context.Context, req models.Request, onDelta func(string)) (models.Response, error) {
	if onDelta != nil {
		onDelta("ok")
	}
	return models.Response{Text: "ok", StopReason: models.StopEndTurn, Usage: gh.Usage{InputTokens: 10, OutputTokens: 1}}, nil
}

// turnStack is the kernel and a supervisor answering with instant, the
// ledger wired as serve wires it.
type turnStack struct {
	k *kernel.Kernel
}

func startTurns(tb testing.TB, st store.Store) *turnStack {
	tb.Helper()
	k := kernel.New(st, kernel.Config{})
	reg, err := models.New(models.Config{Ledger: supervisor.Ledger(k, nil)})
	must(tb, err)
	reg.Register(instant{})
	// serve's default poll; turns are started by wake-ups, not the poll.
	sup, err := supervisor.New(supervisor.Config{Kernel: k, Models: reg, Workers: 2, Poll: time.Second, Logger: slog.New(slog.DiscardHandler)})
	must(tb, err)
	must(tb, sup.Start(context.Background()))
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		sup.Stop(ctx)
	})
	return &turnStack{k: k}
}

// turn sends one input to session and waits until its run settled done;
// it returns the run's id.
func (s *turnStack) turn(tb testing.TB, session string) int64 {
	ctx := context.Background()
	sub := s.k.Subscribe(session)
	defer sub.Close()
	p, _ := json.Marshal(gh.UserMessage{Text: "hi", Delivery: gh.DeliveryQueue, Selection: "instant:zero"})
	c, err := s.k.EdgeCommit(ctx, kernel.EdgeInput{SessionID: session, Event: gh.NewEvent{Kind: gh.KindUserMessage, Payload: p}})
	must(tb, err)
	deadline := time.Now().Add(testenv.Patience)
	for {
		r, err := s.k.Run(ctx, c.RunID)
		must(tb, err)
		if !r.State.Active() {
			if r.State != gh.RunDone {
				tb.Fatalf("run %+v", r)
			}
			return c.RunID
		}
		if time.Now().After(deadline) {
			tb.Fatalf("timed out waiting for run %d of %s", c.RunID, session)
		}
		select {
		case <-sub.Committed:
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// census is the process's goroutines and live heap at one moment.
type census struct {
	goroutines int
	heapInuse  uint64
}

// take counts goroutines and the heap in use after two collections.
// Goroutines that are exiting (a closed connection's) are let go first:
// it samples until the count holds for five samples in a row, and at
// worst after two seconds takes the lowest it saw. This waits for
// goroutines to end; it asserts nothing about time.
func take() census {
	low, last, same := 1<<31, -1, 0
	for deadline := time.Now().Add(2 * time.Second); same < 5 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		n := runtime.NumGoroutine()
		low = min(low, n)
		if n == last {
			same++
		} else {
			last, same = n, 0
		}
	}
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	if same >= 5 {
		low = last
	}
	return census{goroutines: low, heapInuse: m.HeapInuse}
}

// raiseFileLimit lifts the soft open-file limit to want (within the hard
// limit): open streams are two files each in this process, the client's
// end and the server's.
func raiseFileLimit(tb testing.TB, want uint64) {
	tb.Helper()
	var l syscall.Rlimit
	must(tb, syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l))
	if l.Cur >= want {
		return
	}
	if l.Max < want {
		tb.Skipf("open-file hard limit %d is under the %d this needs", l.Max, want)
	}
	l.Cur = want
	must(tb, syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l))
}
