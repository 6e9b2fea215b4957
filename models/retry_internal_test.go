package models

import (
	"net/http"
	"testing"
	"time"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		h    http.Header
		want time.Duration
	}{
		{http.Header{}, 0},
		{http.Header{"Retry-After": {"3"}}, 3 * time.Second},
		{http.Header{"Retry-After": {"0.5"}}, 500 * time.Millisecond},
		{http.Header{"Retry-After": {"-1"}}, 0},
		{http.Header{"Retry-After": {now.Add(7 * time.Second).Format(http.TimeFormat)}}, 7 * time.Second},
		{http.Header{"Retry-After": {now.Add(-time.Minute).Format(http.TimeFormat)}}, 0},
		{http.Header{"Retry-After": {"soon"}}, 0},
		{http.Header{"Retry-After-Ms": {"250"}, "Retry-After": {"1"}}, 250 * time.Millisecond},
	} {
		if got := parseRetryAfter(tc.h, now); got != tc.want {
			t.Errorf("parseRetryAfter(%v) = %v, want %v", tc.h, got, tc.want)
		}
	}
}

func TestClassifyStatus(t *testing.T) {
	for status, want := range map[int]struct {
		code  string
		retry bool
	}{
		400: {CodeBadRequest, false}, 401: {CodeUnauthorized, false}, 403: {CodeUnauthorized, false},
		404: {CodeNotFound, false}, 408: {CodeTimeout, true}, 422: {CodeBadRequest, false},
		429: {CodeRateLimited, true}, 500: {CodeServerError, true}, 501: {CodeServerError, false},
		502: {CodeServerError, true}, 503: {CodeServerError, true}, 504: {CodeServerError, true},
		529: {CodeServerError, true},
	} {
		e := classifyStatus(status, nil, "", nil)
		if e.Code != want.code || e.Retryable != want.retry {
			t.Errorf("%d: %s retryable=%v, want %s %v", status, e.Code, e.Retryable, want.code, want.retry)
		}
	}
}

func TestBackoff(t *testing.T) {
	base := 100 * time.Millisecond
	for n, lo := range map[int]time.Duration{1: base, 2: 2 * base, 3: 4 * base} {
		if d := backoff(base, n, 0); d < lo || d > lo+lo/4 {
			t.Errorf("backoff(%d) = %v, want in [%v, %v]", n, d, lo, lo+lo/4)
		}
	}
	if d := backoff(base, 1, 3*time.Second); d != 3*time.Second {
		t.Errorf("Retry-After not honoured: %v", d)
	}
}

func TestHoistSystemKeepsOrder(t *testing.T) {
	in := []Message{{Role: RoleUser, Text: "u1"}, {Role: RoleSystem, Text: "s1"}, {Role: RoleAssistant, Text: "a1"}, {Role: RoleSystem, Text: "s2"}, {Role: RoleTool, Text: "t1"}}
	var got []string
	for _, m := range hoistSystem(in) {
		got = append(got, m.Text)
	}
	want := []string{"s1", "s2", "u1", "a1", "t1"}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
	if in[0].Text != "u1" {
		t.Fatal("input modified")
	}
}
