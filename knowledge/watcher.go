package knowledge

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/store"
)

// WatcherLease is the name of the lease row (store's platform leases) that
// the replica indexing the folder holds.
const WatcherLease = "knowledge-dir"

// SourceFolder marks the documents the watcher owns: only those are
// removed when their file goes.
const SourceFolder = "folder"

// WatcherConfig configures the folder watcher.
type WatcherConfig struct {
	// Dir is the folder whose Markdown, text, HTML and PDF files (at any
	// depth; names starting with "." are skipped) make the shared
	// collection's folder documents. Required.
	Dir string
	// Owner names this replica in the lease. Required.
	Owner string
	// Interval is how often the folder is scanned. Defaults to 10s.
	Interval time.Duration
	// LeaseTTL is how long the lease lasts unrenewed: another replica
	// takes the folder over that long after this one dies. Defaults to
	// 3 × Interval.
	LeaseTTL time.Duration
}

// Watcher keeps the shared collection in step with a folder, on one
// replica at a time: each scan first takes or renews the lease
// WatcherLease (a row of the store's platform leases, the same rows that
// keep a platform's connection on one replica), and a replica that does
// not hold it scans nothing. A scan polls modification time and size; a
// file that moved is read and added (its hash makes an unchanged file a
// no-op, so a takeover re-reads but re-indexes nothing), a document whose
// file is gone is deleted. Polling rather than inotify: it works the same
// on network and container-mounted folders, and a replica that takes the
// lease over must scan the whole folder anyway.
type Watcher struct {
	lib *Library
	st  store.Store
	cfg WatcherConfig

	seen  map[string]fileStamp // by document name, as last indexed
	mu    sync.Mutex
	fails map[string]string // by document name: the last refusal
	read  atomic.Int64

	stop context.CancelFunc
	done chan struct{}
}

type fileStamp struct {
	mod  time.Time
	size int64
}

// NewWatcher returns a watcher of cfg.Dir into lib's shared collection;
// st holds the lease.
func NewWatcher(lib *Library, st store.Store, cfg WatcherConfig) (*Watcher, error) {
	if cfg.Dir == "" || cfg.Owner == "" {
		return nil, gh.Errorf(gh.CodeInvalid, "knowledge watcher: a folder and an owner are required")
	}
	if cfg.Interval <= 0 {
		cfg.Interval = 10 * time.Second
	}
	if cfg.LeaseTTL <= 0 {
		cfg.LeaseTTL = 3 * cfg.Interval
	}
	return &Watcher{lib: lib, st: st, cfg: cfg, seen: map[string]fileStamp{}, fails: map[string]string{}}, nil
}

// Start scans now and then every Interval until Stop.
func (w *Watcher) Start(ctx context.Context) error {
	if w.done != nil {
		return gh.Errorf(gh.CodeConflict, "knowledge watcher already started")
	}
	ctx, w.stop = context.WithCancel(context.WithoutCancel(ctx))
	w.done = make(chan struct{})
	go func() {
		defer close(w.done)
		t := time.NewTicker(w.cfg.Interval)
		defer t.Stop()
		for {
			if err := w.Scan(ctx); err != nil && ctx.Err() == nil {
				w.lib.cfg.Logger.Warn("knowledge: folder scan", "dir", w.cfg.Dir, "err", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return nil
}

// Stop ends the scans and gives the lease up.
func (w *Watcher) Stop(ctx context.Context) error {
	if w.done == nil {
		return nil
	}
	w.stop()
	select {
	case <-w.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	return w.st.ReleasePlatformLease(ctx, WatcherLease, w.cfg.Owner)
}

// FilesRead counts the files this watcher has read to index.
func (w *Watcher) FilesRead() int64 { return w.read.Load() }

// Failures returns the files the last scans refused, with why.
func (w *Watcher) Failures() map[string]string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]string, len(w.fails))
	for k, v := range w.fails {
		out[k] = v
	}
	return out
}

// lease takes or renews the lease; false when another replica holds it.
func (w *Watcher) lease(ctx context.Context) (bool, error) {
	now := w.lib.cfg.Now()
	return w.st.AcquirePlatformLease(ctx, WatcherLease, w.cfg.Owner, now, now.Add(w.cfg.LeaseTTL))
}

// Scan brings the shared collection in step with the folder once, if this
// replica holds (or takes) the lease.
func (w *Watcher) Scan(ctx context.Context) error {
	held, err := w.lease(ctx)
	if err != nil || !held {
		// Another replica indexes; when it returns the lease, this one
		// must read every file again.
		clear(w.seen)
		return err
	}
	renewed := time.Now()
	present := map[string]bool{}
	err = filepath.WalkDir(w.cfg.Dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if strings.HasPrefix(d.Name(), ".") && p != w.cfg.Dir {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() || !d.Type().IsRegular() || !Supported(d.Name()) {
			return nil
		}
		rel, err := filepath.Rel(w.cfg.Dir, p)
		if err != nil {
			return err
		}
		name := filepath.ToSlash(rel)
		present[name] = true
		info, err := d.Info()
		if err != nil {
			return nil // gone meanwhile
		}
		stamp := fileStamp{mod: info.ModTime(), size: info.Size()}
		if w.seen[name] == stamp {
			return nil
		}
		if time.Since(renewed) > w.cfg.LeaseTTL/3 {
			if held, err := w.lease(ctx); err != nil || !held {
				return errors.Join(err, errLeaseLost)
			}
			renewed = time.Now()
		}
		w.index(ctx, p, name, stamp)
		return ctx.Err()
	})
	if errors.Is(err, errLeaseLost) {
		clear(w.seen)
		return nil
	}
	if err != nil {
		return gh.Wrap(gh.CodeUnavailable, err, "scan %s", w.cfg.Dir)
	}
	return w.prune(ctx, present)
}

var errLeaseLost = errors.New("knowledge watcher lost its lease")

func (w *Watcher) index(ctx context.Context, p, name string, stamp fileStamp) {
	data, err := os.ReadFile(p)
	if err == nil {
		w.read.Add(1)
		_, _, err = w.lib.Add(ctx, AddRequest{Collection: Shared, Name: name, Source: SourceFolder, AddedBy: "operator", Data: data})
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		w.fails[name] = err.Error()
		w.lib.cfg.Logger.Warn("knowledge: file not indexed", "file", name, "err", err)
		if !gh.IsCode(err, gh.CodeInvalid) && !gh.IsCode(err, gh.CodePayloadTooLarge) {
			return // the store failed: try again next scan
		}
	} else {
		delete(w.fails, name)
	}
	w.seen[name] = stamp // a refused file is read again only when it changes
}

// prune deletes the folder documents whose file is gone.
func (w *Watcher) prune(ctx context.Context, present map[string]bool) error {
	docs, err := w.lib.Documents(ctx, Shared)
	if err != nil {
		return err
	}
	for _, d := range docs {
		if d.Source != SourceFolder || present[d.Name] {
			continue
		}
		if _, err := w.lib.Delete(ctx, Shared, d.Name); err != nil {
			return err
		}
		delete(w.seen, d.Name)
	}
	w.mu.Lock()
	for name := range w.fails {
		if !present[name] {
			delete(w.fails, name)
		}
	}
	w.mu.Unlock()
	return nil
}
