package probes

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

type fakeWorkers struct {
	beat    atomic.Int64
	running atomic.Int64
	paused  atomic.Bool
}

func (f *fakeWorkers) Heartbeat() time.Time {
	if n := f.beat.Load(); n != 0 {
		return time.Unix(0, n)
	}
	return time.Time{}
}
func (f *fakeWorkers) Poll() time.Duration { return time.Second }
func (f *fakeWorkers) Running() int        { return int(f.running.Load()) }
func (f *fakeWorkers) Paused() bool        { return f.paused.Load() }

type pinger struct{ err atomic.Pointer[error] }

func (p *pinger) Ping(context.Context) error {
	if e := p.err.Load(); e != nil {
		return *e
	}
	return nil
}

func ask(t *testing.T, p *Probes, path string) (int, map[string]any) {
	t.Helper()
	mux := http.NewServeMux()
	p.Handle(mux)
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
	var body map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatalf("%s: %v %q", path, err, rec.Body.String())
	}
	return rec.Code, body
}

func TestLivezFollowsTheClaimLoopNotTheStore(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	wk := &fakeWorkers{}
	db := &pinger{}
	p := New(Config{Ready: []Pinger{db}, Workers: wk, Now: func() time.Time { return now }})

	if code, body := ask(t, p, "/livez"); code != 503 || body["status"] != "stale" {
		t.Fatalf("before the loop started: %d %v", code, body)
	}
	wk.beat.Store(now.Add(-2 * time.Second).UnixNano())
	wk.running.Store(4) // every worker busy: still alive
	code, body := ask(t, p, "/livez")
	if code != 200 || body["status"] != "ok" || body["running"] != float64(4) || body["paused"] != false {
		t.Fatalf("fresh heartbeat, busy workers: %d %v", code, body)
	}

	// The store is down: not ready, still alive.
	down := errors.New("connection refused")
	db.err.Store(&down)
	if code, _ := ask(t, p, "/readyz"); code != 503 {
		t.Fatalf("readyz with the store down: %d", code)
	}
	if code, _ := ask(t, p, "/livez"); code != 200 {
		t.Fatalf("livez with the store down: %d", code)
	}

	// The loop stops going round: 503 naming it.
	wk.beat.Store(now.Add(-6 * time.Second).UnixNano())
	code, body = ask(t, p, "/livez")
	if code != 503 || body["code"] != "unavailable" {
		t.Fatalf("stale heartbeat: %d %v", code, body)
	}
	loops := body["loops"].([]any)
	w := loops[1].(map[string]any)
	if w["name"] != "workers" || w["ok"] != false || loops[0].(map[string]any)["ok"] != true {
		t.Fatalf("stale loop not named: %v", loops)
	}
}

func TestReadyzTurnsUnavailableOnDrainWhileLivezAnswers(t *testing.T) {
	p := New(Config{})
	if code, body := ask(t, p, "/readyz"); code != 200 || body["status"] != "ready" {
		t.Fatalf("readyz: %d %v", code, body)
	}
	p.Drain()
	if code, body := ask(t, p, "/readyz"); code != 503 || body["message"] != "draining" {
		t.Fatalf("readyz draining: %d %v", code, body)
	}
	if code, _ := ask(t, p, "/livez"); code != 200 {
		t.Fatalf("livez draining: %d", code)
	}
	if code, _ := ask(t, p, "/healthz"); code != 200 {
		t.Fatalf("healthz draining: %d", code)
	}
}

// A chat platform that fails shows in /readyz and leaves it ready.
func TestReadyzShowsPlatformsWithoutCountingThem(t *testing.T) {
	since := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	p := New(Config{Platforms: func() []Platform {
		return []Platform{{Platform: "telegram", State: "retrying", Since: since, LastError: "the platform refused the token: 401 Unauthorized"}}
	}})
	code, body := ask(t, p, "/readyz")
	if code != 200 || body["status"] != "ready" {
		t.Fatalf("readyz with a failing platform: %d %v", code, body)
	}
	ps, _ := body["platforms"].([]any)
	if len(ps) != 1 {
		t.Fatalf("platforms: %v", body["platforms"])
	}
	got := ps[0].(map[string]any)
	if got["platform"] != "telegram" || got["state"] != "retrying" || got["since"] != "2026-12-04T10:00:00Z" || got["lastError"] == "" {
		t.Fatalf("platform: %v", got)
	}
	// Without platforms the field is absent.
	if _, body := ask(t, New(Config{}), "/readyz"); body["platforms"] != nil {
		t.Fatalf("platforms without a gateway: %v", body["platforms"])
	}
}
