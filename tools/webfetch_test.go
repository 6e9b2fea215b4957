package tools_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/tools"
)

func fetch(t *testing.T, tool *tools.WebFetch, url string) tools.Result {
	t.Helper()
	res, err := tool.Run(context.Background(), tools.Call{ID: "c", Arguments: args(t, map[string]string{"url": url})})
	if err != nil {
		t.Fatalf("Run(%s): %v", url, err)
	}
	return res
}

func TestWebFetchReturnsTextAsExternal(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/page":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, `<!doctype html><html><head><title>Quarterly report</title><style>body{color:red}</style>
<script>alert("x")</script></head><body><h1>Report</h1><p>The report is <b>ready</b> &amp; signed.</p>
<ul><li>one</li><li>two</li></ul><a href="/next">next page</a></body></html>`)
		case "/plain":
			fmt.Fprint(w, "just text")
		case "/missing":
			http.Error(w, "no such page", http.StatusNotFound)
		case "/image":
			w.Header().Set("Content-Type", "image/png")
			w.Write([]byte{0x89, 'P', 'N', 'G', 0, 0, 0})
		}
	}))
	defer srv.Close()
	tool := tools.NewWebFetch(tools.WebFetchConfig{AllowPrivateNetworks: true})
	if tool.Tier() != tools.Safe || tool.Runnable() != nil {
		t.Fatal("web_fetch should be safe and runnable")
	}

	res := fetch(t, tool, srv.URL+"/page")
	if res.IsError || !res.External {
		t.Fatalf("result %+v, want text marked External", res)
	}
	for _, want := range []string{"Quarterly report", "Report", "The report is ready & signed.", "- one", "- two", "next page (/next)", "200 OK"} {
		if !strings.Contains(res.Content, want) {
			t.Errorf("content lacks %q:\n%s", want, res.Content)
		}
	}
	for _, bad := range []string{"<", "alert", "color:red"} {
		if strings.Contains(res.Content, bad) {
			t.Errorf("content still has %q:\n%s", bad, res.Content)
		}
	}

	if res := fetch(t, tool, srv.URL+"/plain"); res.IsError || !strings.HasSuffix(res.Content, "just text") {
		t.Errorf("plain: %+v", res)
	}
	if res := fetch(t, tool, srv.URL+"/missing"); !res.IsError || !strings.Contains(res.Content, "404") || !strings.Contains(res.Content, "no such page") {
		t.Errorf("404: %+v", res)
	}
	if res := fetch(t, tool, srv.URL+"/image"); !res.IsError || !strings.Contains(res.Content, "image/png") {
		t.Errorf("image: %+v", res)
	}
}

func TestWebFetchSizeCapTruncates(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, strings.Repeat("é", 5000)) // 10000 bytes
	}))
	defer srv.Close()
	tool := tools.NewWebFetch(tools.WebFetchConfig{AllowPrivateNetworks: true, MaxBytes: 1001})
	res := fetch(t, tool, srv.URL)
	if res.IsError || !strings.Contains(res.Content, "[truncated") {
		t.Fatalf("result %+v, want a truncated page", res)
	}
	body := res.Content[strings.Index(res.Content, "\n\n")+2 : strings.Index(res.Content, "\n\n[truncated")]
	if body != strings.Repeat("é", 500) {
		t.Errorf("body is %d bytes (%q…), want 500 whole é", len(body), body[:min(len(body), 10)])
	}
}

func TestWebFetchRefusesOtherSchemes(t *testing.T) {
	tool := tools.NewWebFetch(tools.WebFetchConfig{})
	for _, u := range []string{"file:///etc/passwd", "ftp://example.com/x", "gopher://example.com", "javascript:alert(1)", "/relative"} {
		res := fetch(t, tool, u)
		if !res.IsError {
			t.Errorf("%s: fetched, want refused: %+v", u, res)
		}
	}
	if res := fetch(t, tool, "file:///etc/passwd"); !strings.Contains(res.Content, "only http and https") {
		t.Errorf("file: message %q", res.Content)
	}
}

func TestWebFetchRefusesPrivateAddressesByDefault(t *testing.T) {
	hit := make(chan struct{}, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hit <- struct{}{}
		fmt.Fprint(w, "secret admin page")
	}))
	defer srv.Close()
	tool := tools.NewWebFetch(tools.WebFetchConfig{})
	for _, u := range []string{srv.URL, strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)} {
		res := fetch(t, tool, u)
		if !res.IsError || strings.Contains(res.Content, "secret") || !strings.Contains(res.Content, "loopback") {
			t.Errorf("%s: %+v, want refused as loopback", u, res)
		}
	}
	if len(hit) != 0 {
		t.Fatal("the loopback server was reached")
	}
}

func TestWebFetchTimeLimit(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	tool := tools.NewWebFetch(tools.WebFetchConfig{AllowPrivateNetworks: true, Timeout: 200 * time.Millisecond})
	start := time.Now()
	res := fetch(t, tool, srv.URL)
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("took %s", d)
	}
	if !res.IsError || !strings.Contains(res.Content, "time limit") {
		t.Fatalf("result %+v, want a time-limit error", res)
	}
}

func TestWebFetchTimeLimitCoversTheBody(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "start of a page that never ends")
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	tool := tools.NewWebFetch(tools.WebFetchConfig{AllowPrivateNetworks: true, Timeout: 200 * time.Millisecond})
	res := fetch(t, tool, srv.URL)
	if !res.IsError || !strings.Contains(res.Content, "time limit") {
		t.Fatalf("result %+v, want a time-limit error", res)
	}
}
