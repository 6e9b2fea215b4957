package main

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
)

type fakeService struct {
	name     string
	log      *[]string
	startErr error
}

func (f fakeService) Start(context.Context) error {
	*f.log = append(*f.log, "start "+f.name)
	return f.startErr
}

func (f fakeService) Stop(context.Context) error {
	*f.log = append(*f.log, "stop "+f.name)
	return nil
}

func TestRunGroupStopsInReverseOrder(t *testing.T) {
	var log []string
	g := &runGroup{log: slog.Default()}
	for _, n := range []string{"memory", "gates", "workers", "http"} {
		g.add(n, fakeService{name: n, log: &log})
	}
	if err := g.start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := g.stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := []string{"start memory", "start gates", "start workers", "start http", "stop http", "stop workers", "stop gates", "stop memory"}
	if !slices.Equal(log, want) {
		t.Fatalf("order %v, want %v", log, want)
	}
}

// A service that fails to start leaves nothing running: those started
// before it are stopped, in reverse, and those after it never start.
func TestRunGroupFailedStartStopsWhatStarted(t *testing.T) {
	var log []string
	g := &runGroup{log: slog.Default()}
	g.add("memory", fakeService{name: "memory", log: &log})
	g.add("gates", fakeService{name: "gates", log: &log})
	g.add("workers", fakeService{name: "workers", log: &log, startErr: errors.New("boom")})
	g.add("http", fakeService{name: "http", log: &log})
	err := g.start(context.Background())
	if err == nil || !strings.Contains(err.Error(), "start workers: boom") {
		t.Fatalf("start: %v", err)
	}
	want := []string{"start memory", "start gates", "start workers", "stop gates", "stop memory"}
	if !slices.Equal(log, want) {
		t.Fatalf("order %v, want %v", log, want)
	}
	if err := g.stop(context.Background()); err != nil || len(log) != len(want) {
		t.Fatalf("a second stop stopped again: %v %v", err, log)
	}
}
