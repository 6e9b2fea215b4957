package knowledge_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/internal/testing/testenv"
	"github.com/gatehouse/gatehouse/knowledge"
	"github.com/gatehouse/gatehouse/store"
)

func write(t *testing.T, path, text string, mod time.Time) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	// An explicit time: a change within the file system's clock tick
	// must still move the stamp.
	if err := os.Chtimes(path, mod, mod); err != nil {
		t.Fatal(err)
	}
}

func TestWatcherNewChangedDeleted(t *testing.T) {
	eachBackend(t, func(t *testing.T, st store.Store, _ func(*testing.T) store.Store) {
		ctx := context.Background()
		dir := t.TempDir()
		lib := newLibrary(t, st, knowledge.Config{})
		w, err := knowledge.NewWatcher(lib, st, knowledge.WatcherConfig{Dir: dir, Owner: "r1"})
		if err != nil {
			t.Fatal(err)
		}
		t0 := time.Now().Add(-time.Hour)
		write(t, filepath.Join(dir, "handbook.md"), handbook, t0)
		write(t, filepath.Join(dir, "ops", "runbook.txt"), "Deploys run every Tuesday.\n", t0)
		write(t, filepath.Join(dir, "ops", "photo.png"), "not indexed: not a supported name", t0)
		write(t, filepath.Join(dir, ".hidden.md"), "skipped", t0)
		write(t, filepath.Join(dir, "broken.txt"), "\x00\x01binary", t0)
		// A document the API added is not the folder's to remove.
		add(t, lib, knowledge.Shared, "api.md", "Added through the API.")
		if err := w.Scan(ctx); err != nil {
			t.Fatal(err)
		}
		names := func() map[string]int {
			docs, err := lib.Documents(ctx, knowledge.Shared)
			if err != nil {
				t.Fatal(err)
			}
			out := map[string]int{}
			for _, d := range docs {
				out[d.Name] = d.Version
			}
			return out
		}
		if got := names(); len(got) != 3 || got["handbook.md"] != 1 || got["ops/runbook.txt"] != 1 || got["api.md"] != 1 {
			t.Fatalf("after the first scan: %v", got)
		}
		if f := w.Failures(); len(f) != 1 || f["broken.txt"] == "" {
			t.Fatalf("failures: %v", f)
		}
		read := w.FilesRead()
		if err := w.Scan(ctx); err != nil || w.FilesRead() != read {
			t.Fatalf("an unchanged folder was read again: %d files, then %d (%v)", read, w.FilesRead(), err)
		}
		// Changed, new and deleted files.
		write(t, filepath.Join(dir, "handbook.md"), handbook+"\n## Parking\n\nPark behind the building.\n", t0.Add(time.Minute))
		write(t, filepath.Join(dir, "ops", "oncall.md"), "# On call\n\nThe pager rotates weekly.\n", t0)
		if err := os.Remove(filepath.Join(dir, "ops", "runbook.txt")); err != nil {
			t.Fatal(err)
		}
		if err := w.Scan(ctx); err != nil {
			t.Fatal(err)
		}
		if got := names(); len(got) != 3 || got["handbook.md"] != 2 || got["ops/oncall.md"] != 1 || got["api.md"] != 1 {
			t.Fatalf("after the changes: %v", got)
		}
		if f := recall(t, lib, knowledge.Scope{}, "Where do I park?"); len(f.Passages) == 0 || f.Passages[0].Passage.Heading[1] != "Parking" {
			t.Fatalf("the changed file's new passage: %+v", f)
		}
	})
}

// Two replicas watch one folder over one Postgres: only the lease holder
// reads and indexes; when it stops, the other takes over.
func TestWatcherOneReplica(t *testing.T) {
	url := testenv.PostgresURL(t)
	ctx := context.Background()
	dir := t.TempDir()
	write(t, filepath.Join(dir, "handbook.md"), handbook, time.Now().Add(-time.Hour))
	var ws []*knowledge.Watcher
	var libs []*knowledge.Library
	for _, owner := range []string{"replica-1", "replica-2"} {
		st := openPostgres(t, url)
		lib := newLibrary(t, st, knowledge.Config{})
		w, err := knowledge.NewWatcher(lib, st, knowledge.WatcherConfig{Dir: dir, Owner: owner, Interval: 20 * time.Millisecond, LeaseTTL: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { w.Stop(context.Background()) })
		ws, libs = append(ws, w), append(libs, lib)
	}
	version := func() int {
		d, found, err := libs[0].Document(ctx, knowledge.Shared, "handbook.md")
		if err != nil {
			t.Fatal(err)
		}
		if !found {
			return 0
		}
		return d.Version
	}
	testenv.Eventually(t, "the folder indexed", func() bool { return version() == 1 })
	time.Sleep(200 * time.Millisecond) // ten more scans each
	if a, b := ws[0].FilesRead(), ws[1].FilesRead(); a+b != 1 {
		t.Fatalf("files read: %d and %d, want one read by one replica", a, b)
	}
	holder, other := ws[0], ws[1]
	if holder.FilesRead() == 0 {
		holder, other = other, holder
	}
	if err := holder.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "handbook.md"), handbook+"\nUpdated.\n", time.Now())
	testenv.Eventually(t, "the other replica taking over", func() bool { return version() == 2 })
	if other.FilesRead() == 0 {
		t.Fatal("the change was not read by the other replica")
	}
}
