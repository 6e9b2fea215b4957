package web_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gatehouse/gatehouse/httpapi/web"
)

func TestHandler(t *testing.T) {
	srv := httptest.NewServer(web.Handler())
	defer srv.Close()

	for _, tc := range []struct {
		path, status, ctype string
		contains            []string
	}{
		{"/", "200", "text/html", []string{`data-testid="composer-input"`, `data-testid="send-button"`, `data-testid="new-chat"`, `/assets/app.js`}},
		{"/assets/app.js", "200", "javascript", []string{"EventSource", "X-Gatehouse-Source"}},
		{"/assets/app.css", "200", "text/css", []string{"@media"}},
		{"/assets/", "404", "", nil},
		{"/assets/missing.js", "404", "", nil},
		{"/index.html", "404", "", nil},
	} {
		t.Run(tc.path, func(t *testing.T) {
			res, err := http.Get(srv.URL + tc.path)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			body, _ := io.ReadAll(res.Body)
			if got := res.Status[:3]; got != tc.status {
				t.Fatalf("status %s, want %s", res.Status, tc.status)
			}
			if tc.ctype != "" && !strings.Contains(res.Header.Get("Content-Type"), tc.ctype) {
				t.Errorf("Content-Type %q, want %s", res.Header.Get("Content-Type"), tc.ctype)
			}
			for _, s := range tc.contains {
				if !strings.Contains(string(body), s) {
					t.Errorf("body lacks %q", s)
				}
			}
		})
	}
}

// TestNoHTMLFromPayloads guards the rule that payload text never reaches
// innerHTML: the script builds every node with textContent.
func TestNoHTMLFromPayloads(t *testing.T) {
	srv := httptest.NewServer(web.Handler())
	defer srv.Close()
	res, err := http.Get(srv.URL + "/assets/app.js")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	js, _ := io.ReadAll(res.Body)
	for _, bad := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("} {
		if strings.Contains(string(js), bad) {
			t.Errorf("app.js uses %s", bad)
		}
	}
}
