package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// probeRun runs `gatehouse probe args…` in process and returns its exit
// code and what it printed.
func probeRun(t *testing.T, vars map[string]string, args ...string) (int, string) {
	t.Helper()
	var out bytes.Buffer
	code := run(append([]string{"probe"}, args...), &out, &out, env(vars))
	return code, out.String()
}

func TestProbeExitsZeroOn2xx(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" || r.Method != http.MethodGet {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte(`{"status":"ok"}`))
	}))
	defer srv.Close()
	code, out := probeRun(t, nil, srv.URL+"/healthz")
	if code != 0 || !strings.Contains(out, "200 OK") {
		t.Fatalf("probe of a 200: exit %d, %q", code, out)
	}
	// A 204 is as good, and the flag may come after the URL.
	srv204 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	defer srv204.Close()
	if code, out := probeRun(t, nil, srv204.URL, "--timeout", "1s"); code != 0 {
		t.Fatalf("probe of a 204: exit %d, %q", code, out)
	}
}

func TestProbeExitsOneOn503WithTheReason(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write([]byte("{\"code\":\"unavailable\",\n\"message\":\"draining\"}"))
	}))
	defer srv.Close()
	code, out := probeRun(t, nil, srv.URL+"/readyz")
	if code != 1 {
		t.Fatalf("probe of a 503: exit %d, %q", code, out)
	}
	if !strings.Contains(out, "503") || !strings.Contains(out, "draining") || strings.Count(out, "\n") != 1 {
		t.Fatalf("want one line with the status and the body, got %q", out)
	}
}

func TestProbeExitsOneOnAClosedPort(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens there any more
	code, out := probeRun(t, nil, url+"/healthz")
	if code != 1 || !strings.Contains(out, "refused") || strings.Count(out, "\n") != 1 {
		t.Fatalf("probe of a closed port: exit %d, %q", code, out)
	}
}

func TestProbeExitsOneWhenNoAnswerInTime(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	start := time.Now()
	code, out := probeRun(t, nil, "--timeout", "200ms", srv.URL)
	if code != 1 || !strings.Contains(out, "no answer within 200ms") {
		t.Fatalf("probe of a hung server: exit %d, %q", code, out)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("the timeout was not kept: took %s", took)
	}
}

func TestProbeWithoutURLAsksTheConfiguredAddress(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	if code, out := probeRun(t, map[string]string{"GATEHOUSE_ADDR": addr}); code != 0 {
		t.Fatalf("probe of GATEHOUSE_ADDR: exit %d, %q", code, out)
	}
	// A gateway listening on every address is asked on loopback.
	_, port, _ := strings.Cut(addr, ":")
	if code, out := probeRun(t, map[string]string{"GATEHOUSE_ADDR": "0.0.0.0:" + port}); code != 0 {
		t.Fatalf("probe of 0.0.0.0: exit %d, %q", code, out)
	}

	for addr, want := range map[string]string{
		"":               "http://127.0.0.1:8080/healthz", // the setting's default
		":9000":          "http://127.0.0.1:9000/healthz",
		"[::]:9000":      "http://[::1]:9000/healthz",
		"10.0.0.7:9000":  "http://10.0.0.7:9000/healthz",
		"localhost:8080": "http://localhost:8080/healthz",
	} {
		got, err := defaultProbeURL(env(map[string]string{"GATEHOUSE_ADDR": addr}))
		if err != nil || got != want {
			t.Errorf("GATEHOUSE_ADDR %q: got %q, %v; want %q", addr, got, err, want)
		}
	}
}

func TestProbeRefusesABadCommandLineWithOne(t *testing.T) {
	for _, args := range [][]string{
		{"ftp://127.0.0.1/"},
		{"127.0.0.1:8080"},
		{"http://a/", "http://b/"},
		{"--timeout", "soon", "http://127.0.0.1/"},
	} {
		if code, out := probeRun(t, nil, args...); code != 1 || out == "" {
			t.Errorf("probe %q: exit %d, %q", args, code, out)
		}
	}
	if code, out := probeRun(t, map[string]string{"GATEHOUSE_ADDR": "nonsense"}); code != 1 || !strings.Contains(out, "GATEHOUSE_ADDR") {
		t.Errorf("probe with a bad GATEHOUSE_ADDR: exit %d, %q", code, out)
	}
	if code, out := probeRun(t, nil, "--help"); code != 0 || !strings.Contains(out, "Usage") {
		t.Errorf("probe --help: exit %d, %q", code, out)
	}
}
