package main

import (
	"bufio"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// scrapeMetrics reads /metrics as name{labels} → value.
func scrapeMetrics(t *testing.T, addr string) map[string]float64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("/metrics: %d", resp.StatusCode)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("/metrics line %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	return out
}

// sum adds the series of the family name whose labels hold every one of
// labels (`key="value"`).
func sum(m map[string]float64, name string, labels ...string) float64 {
	total := 0.0
next:
	for k, v := range m {
		if k != name && !strings.HasPrefix(k, name+"{") {
			continue
		}
		for _, l := range labels {
			if !strings.Contains(k, l) {
				continue next
			}
		}
		total += v
	}
	return total
}

// An approval turn through the real binary moves every family it should:
// two attempts (one pauses for the card, one answers after the
// approval), one gate opened and decided once though pressed twice, one
// effect started and finished, the model calls with their tokens.
func TestMetricsMoveWithAnApprovalTurn(t *testing.T) {
	s := newEmailStack(t)
	p := start(t, s.envs...)
	before := scrapeMetrics(t, p.addr)
	if sum(before, "gatehouse_turns_started_total") != 0 || sum(before, "gatehouse_runs_queued") != 0 {
		t.Fatalf("a fresh gateway reports turns: %v", before)
	}
	if _, ok := before["gatehouse_incidents_open"]; !ok {
		t.Fatal("gatehouse_incidents_open missing")
	}
	s.ask(p.addr)
	g := waitGate(t, p.addr)
	for _, d := range []string{"approve", "deny"} { // the second press loses
		if code, body := post(t, "http://"+p.addr+"/v1/gates/"+g.ID+"/decision", map[string]string{"decision": d, "by": "ana"}); code != 200 {
			t.Fatalf("%s: %d %v", d, code, body)
		}
	}
	waitUntil(t, "the answer", func() bool { return settledRuns(t, p.addr) == 1 })
	m := scrapeMetrics(t, p.addr)
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"gatehouse_turns_started_total", nil, 2},
		{"gatehouse_turns_settled_total", []string{`status="awaiting_approval"`}, 1},
		{"gatehouse_turns_settled_total", []string{`status="done"`}, 1},
		{"gatehouse_turn_duration_seconds_count", nil, 2},
		{"gatehouse_gates_opened_total", []string{`kind="approval"`}, 1},
		{"gatehouse_gates_decided_total", nil, 1},
		{"gatehouse_gates_decided_total", []string{`decision="approved"`}, 1},
		{"gatehouse_gate_decision_seconds_count", []string{`decision="approved"`}, 1},
		{"gatehouse_effects_total", []string{`state="started"`}, 1},
		{"gatehouse_effects_total", []string{`state="finished"`}, 1},
		{"gatehouse_effects_total", []string{`state="unknown"`}, 0},
		{"gatehouse_model_calls_total", []string{`provider="openai"`, `model="test-model"`, `outcome="ok"`}, 2},
		{"gatehouse_model_call_seconds_count", []string{`provider="openai"`}, 2},
		{"gatehouse_lease_takeovers_total", nil, 0},
		{"gatehouse_runs_queued", nil, 0},
		{"gatehouse_metrics_store_read_ok", nil, 1},
	} {
		if got := sum(m, c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	for k := range m {
		if strings.Contains(k, "s1") || strings.Contains(k, "session") || strings.Contains(k, "ana") {
			t.Errorf("series with a session or user in it: %s", k)
		}
	}
	p.stopWith(t, syscall.SIGTERM)
}

// With GATEHOUSE_METRICS=off, /metrics still answers, with the Go and
// process series and none of package metrics'.
func TestMetricsOffLeavesTheEndpoint(t *testing.T) {
	s := newEmailStack(t, "GATEHOUSE_METRICS=off")
	p := start(t, s.envs...)
	s.ask(p.addr)
	waitGate(t, p.addr)
	m := scrapeMetrics(t, p.addr)
	if _, ok := m["go_goroutines"]; !ok {
		t.Error("go_goroutines missing with metrics off")
	}
	for k := range m {
		if strings.HasPrefix(k, "gatehouse_turns_") || strings.HasPrefix(k, "gatehouse_gates_") || strings.HasPrefix(k, "gatehouse_model_") ||
			strings.HasPrefix(k, "gatehouse_runs_") || strings.HasPrefix(k, "gatehouse_incidents_") {
			t.Errorf("metrics off exports %s", k)
		}
	}
	p.stopWith(t, syscall.SIGTERM)
}
