// Package web is the built-in web chat: a static page (HTML, CSS and
// JavaScript embedded in the binary, no build step) that talks to the /v1
// HTTP API and projects a session's committed events into a conversation.
package web

import (
	"embed"
	"io/fs"
	"net/http"
	"strings"
)

//go:embed index.html admin.html assets
var files embed.FS

// Handler serves the chat: GET / is the page, GET /assets/... its script
// and style sheet. Mount it at the root of the HTTP server.
func Handler() http.Handler {
	assets, err := fs.Sub(files, "assets")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	static := http.StripPrefix("/assets/", http.FileServerFS(assets))
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", page("index.html"))
	mux.HandleFunc("GET /admin", page("admin.html"))
	mux.HandleFunc("GET /assets/", func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/") {
			http.NotFound(w, r) // no directory listings
			return
		}
		w.Header().Set("Cache-Control", "no-cache")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		static.ServeHTTP(w, r)
	})
	return mux
}

// page serves one of the embedded pages with the headers every page gets.
func page(name string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		page, err := files.ReadFile(name)
		if err != nil {
			http.Error(w, "page missing", http.StatusInternalServerError)
			return
		}
		h := w.Header()
		h.Set("Content-Type", "text/html; charset=utf-8")
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'")
		_, _ = w.Write(page)
	}
}
